"""Conditional polls: a GET of a query over the run index carries an `ETag`, and a repeat
with `If-None-Match` answers 304 while nothing the caller may see has changed.

The tag is a hash of the answer itself, with the operation, its variables, the caller
(subject, role and scope) and what this deployment serves (its registered agents): it
changes only when that caller's answer changes, so no caller learns from its tags that
another tenant wrote. Any instance answering the same request computes the same tag.

Executing the operation to learn whether its answer changed is what a 304 saves, so an
instance remembers, for each request it tagged (`REMEMBERED`), the tag and the run
index's version it was computed at: while the version is the same (the database holds
it, and it is new after every write to the index by any instance or by the follower, and
when time alone changes an answer), a repeat is answered 304 without executing. After a
write anywhere, the next poll of each request executes once and is 304 again when its
answer did not change (docs/operating.md, "Conditional polls", has both rates).

A GET that names a persisted query by its hash alone is tagged as its document would be.
Only operations whose every root field reads the run index alone are tagged
(`CACHEABLE_FIELDS`); anything else (mutations, the decision log, introspection) is
executed as always. An answer is tagged only when it is a 200 without `errors`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationType,
    SelectionSetNode,
    get_operation_ast,
)
from pymongo.errors import PyMongoError
from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suspended_runs.resolvers import Principal
from suspended_runs.resolvers.live_pages import with_the_second
from suspended_runs.runtime.metrics import NOT_MODIFIED
from suspended_runs.schema import Schema
from suspended_runs.server.persisted_queries import PersistedQueries, hash_of_request
from suspended_runs.storage import Storage

log = logging.getLogger(__name__)

REMEMBERED = 10_000
"""Requests whose last tag an instance remembers (a few hundred bytes each)."""
CACHEABLE_FIELDS = frozenset({"suspendedRuns", "runs", "agentRun", "agents", "__typename"})
"""Root fields whose answer is a function of the run index, the caller and the deployment."""
VERSION_AGE = 0.1
"""Seconds a version read serves later tags (one read per poll would bound the rate of
answers `304 Not Modified`)."""


class ConditionalGets:
    """ETag / If-None-Match for GET queries (inside the authentication gate: the caller is
    known). `deployment` names what else an answer depends on (the registered agents)."""

    def __init__(self, app: ASGIApp, schema: Schema, *, deployment: str) -> None:
        self.app, self.schema = app, schema
        self.deployment = deployment
        self._tagged: OrderedDict[str, tuple[str, object]] = OrderedDict()
        """Request key -> (the tag of its last answer, the version it was computed at)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asked = await self._asked(scope) if scope["type"] == "http" else None
        if asked is None:
            await self.app(scope, receive, send)
            return
        key, version = asked
        given = _tags(Headers(scope=scope).get("if-none-match", ""))
        known = self._tagged.get(key)
        if known is not None and known[1] == version and known[0] in given:
            self._tagged.move_to_end(key)
            await _not_modified(send, known[0])
            return
        await self.app(scope, receive, self._tagging(send, key, version, given))

    async def _asked(self, scope: Scope) -> tuple[str, object] | None:
        """This request's key (what its answer depends on besides the index) and the
        index's version, or None when it is not one to tag."""
        if scope["method"] != "GET":
            return None
        params = QueryParams(scope.get("query_string", b""))
        storage: Storage = scope["app"].state.storage
        try:
            query = params.get("query") or await self._persisted(scope, params)
            if not query or not self._cacheable(query, params.get("operationName")):
                return None
            version = await storage.runs.version(within=VERSION_AGE)
        except PyMongoError:
            return None  # the operation answers (or reports) the outage itself
        caller = _caller(scope.get("state", {}).get("principal"))
        parts = [self.deployment, caller, query, params.get("variables") or ""]
        parts.append(params.get("operationName") or "")
        token: object = version.token
        if _escalating(scope, query, params):  # answered afresh each second, not each write
            token = with_the_second(version.token)
        return _digest(json.dumps(parts).encode()), token

    async def _persisted(self, scope: Scope, params: QueryParams) -> str | None:
        """The document a GET names by its hash alone (a persisted query), if known."""
        sha = hash_of_request(params.get("extensions"))
        persisted: PersistedQueries = scope["app"].state.persisted_queries
        principal: Principal | None = scope.get("state", {}).get("principal")
        if sha is None or principal is None:
            return None
        return await persisted.lookup(sha, principal.scope)

    def _cacheable(self, query: str, operation_name: str | None) -> bool:
        try:
            document = self.schema.query_cache.document(query, self.schema.max_tokens)
        except GraphQLError:
            return False
        return cacheable(document, operation_name)

    def _tagging(self, send: Send, key: str, version: object, given: set[str]) -> Send:
        """`send`, holding the start of the answer until its body shows whether to tag
        it (a 200 without `errors`: an error may pass, its answer must be asked again),
        and answering 304 in its place when the tag is one the client holds."""
        start: Message | None = None

        async def tagged_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if start is not None:
                whole = not message.get("more_body", False)
                body = message.get("body", b"")
                if start["status"] == 200 and whole and b'"errors"' not in body:
                    tag = f'"{_digest(key.encode() + body)}"'
                    self._remember(key, tag, version)
                    if tag in given:
                        await _not_modified(send, tag)
                        return
                    MutableHeaders(scope=start)["ETag"] = tag
                await send(start)
                start = None
            await send(message)

        return tagged_send

    def _remember(self, key: str, tag: str, version: object) -> None:
        self._tagged[key] = (tag, version)
        self._tagged.move_to_end(key)
        while len(self._tagged) > REMEMBERED:
            self._tagged.popitem(last=False)


async def _not_modified(send: Send, tag: str) -> None:
    NOT_MODIFIED.inc()
    await send({"type": "http.response.start", "status": 304, "headers": [(b"etag", tag.encode())]})
    await send({"type": "http.response.body", "body": b""})


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _caller(principal: Principal | None) -> list[object]:
    """Who asks, as it decides what they may see, the same in every process."""
    if principal is None:
        return []
    resources, agents = principal.scope.resource_ids, principal.scope.agent_ids
    return [
        principal.subject,
        principal.role.value if principal.role else None,
        principal.authenticated,
        None if resources is None else sorted(resources),
        None if agents is None else sorted(agents),
        sorted(principal.groups),  # what review policies assign a caller by (assignedTo)
        principal.person,  # and its person, which a reload of the keys may change
    ]


def _escalating(scope: Scope, query: str, params: QueryParams) -> bool:
    """Whether a request may list what review policies assign the caller on a server
    whose policies escalate: its answer changes with the clock alone (a false positive,
    the name in a comment, only costs an execution a second)."""
    if not scope["app"].state.policy.reviews.escalating:
        return False
    return "assignedToMe" in query or "assignedToMe" in (params.get("variables") or "")


def _tags(header: str) -> set[str]:
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}


def cacheable(document: DocumentNode, operation_name: str | None) -> bool:
    """Whether the operation is a query whose every root field is in `CACHEABLE_FIELDS`."""
    operation = get_operation_ast(document, operation_name)
    if operation is None or operation.operation is not OperationType.QUERY:
        return False
    fields = _root_fields(operation.selection_set, _fragments(document), set())
    return fields is not None and fields <= CACHEABLE_FIELDS


def _fragments(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def _root_fields(
    selections: SelectionSetNode,
    fragments: dict[str, FragmentDefinitionNode],
    visited: set[str],
) -> set[str] | None:
    """The root field names, through fragments; None for a fragment that is not there or
    spreads itself (the operation then fails validation, untagged)."""
    names: set[str] = set()
    for selection in selections.selections:
        if isinstance(selection, FieldNode):
            names.add(selection.name.value)
            continue
        if isinstance(selection, InlineFragmentNode):
            inner = _root_fields(selection.selection_set, fragments, visited)
        else:
            assert isinstance(selection, FragmentSpreadNode)
            fragment = fragments.get(selection.name.value)
            if fragment is None or fragment.name.value in visited:
                return None
            inner = _root_fields(fragment.selection_set, fragments, visited | {fragment.name.value})
        if inner is None:
            return None
        names |= inner
    return names
