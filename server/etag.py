"""Conditional polls: a GET of a query over the run index carries an `ETag`, and a repeat
with `If-None-Match` answers 304 without executing the operation while nothing the caller
may see has changed.

The tag is a hash of the operation, its variables, the caller (subject, role and scope),
what this deployment serves (its registered agents) and the run index's version. The
version lives in the database and is new after every write to the index, by any instance
or by the follower applying Mastra's changes (storage/index/run_index.py), and when time alone
changes an answer (a lease running out, a finished entry deleted at the end of its
retention); so a tag from one instance is checked by another, and goes stale within the
follower's latency.

Only operations whose every root field reads the run index alone are tagged
(`CACHEABLE_FIELDS`); anything else (mutations, the decision log, introspection) is
executed as always. An answer is tagged only when it is a 200 without `errors`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    parse,
)
from pymongo.errors import PyMongoError
from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suspended_runs.resolvers import Principal
from suspended_runs.runtime.metrics import NOT_MODIFIED
from suspended_runs.storage import Storage

log = logging.getLogger(__name__)

CACHEABLE_FIELDS = frozenset({"suspendedRuns", "runs", "agentRun", "agents", "__typename"})
"""Root fields whose answer is a function of the run index, the caller and the deployment."""
_PARSED_KEPT = 512
VERSION_AGE = 0.1
"""Seconds a version read serves later tags (one read per poll would bound the rate of
answers `304 Not Modified`)."""


class ConditionalGets:
    """ETag / If-None-Match for GET queries (inside the authentication gate: the caller is
    known). `deployment` names what else an answer depends on (the registered agents)."""

    def __init__(self, app: ASGIApp, *, deployment: str) -> None:
        self.app = app
        self.deployment = deployment

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tag = await self._tag(scope) if scope["type"] == "http" else None
        if tag is None:
            await self.app(scope, receive, send)
            return
        if tag in _tags(Headers(scope=scope).get("if-none-match", "")):
            NOT_MODIFIED.inc()
            await send(
                {"type": "http.response.start", "status": 304, "headers": [(b"etag", tag.encode())]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, _tagging(send, tag))

    async def _tag(self, scope: Scope) -> str | None:
        """The tag of this request's answer, or None when it is not one to tag."""
        if scope["method"] != "GET":
            return None
        params = QueryParams(scope.get("query_string", b""))
        query = params.get("query")
        if not query or not cacheable(query, params.get("operationName")):
            return None
        storage: Storage = scope["app"].state.storage
        try:
            version = await storage.runs.version(within=VERSION_AGE)
        except PyMongoError:
            return None  # the operation answers (or reports) the outage itself
        caller = _caller(scope.get("state", {}).get("principal"))
        parts = [self.deployment, caller, query, params.get("variables") or "", str(version.token)]
        parts.append(params.get("operationName") or "")
        digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]
        return f'"{digest}"'


def _tagging(send: Send, tag: str) -> Send:
    """`send`, holding the start of the answer until its body shows whether to tag it: a 200
    without `errors` (an error may pass; its answer must be asked again)."""
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
                MutableHeaders(scope=start)["ETag"] = tag
            await send(start)
            start = None
        await send(message)

    return tagged_send


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
    ]


def _tags(header: str) -> set[str]:
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}


@functools.lru_cache(maxsize=_PARSED_KEPT)
def cacheable(query: str, operation_name: str | None) -> bool:
    """Whether the operation is a query whose every root field is in `CACHEABLE_FIELDS`."""
    try:
        document = parse(query)
    except GraphQLError:
        return False
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or _named(o, operation_name)]
    if len(chosen) != 1 or chosen[0].operation is not OperationType.QUERY:
        return False
    fields = _root_fields(chosen[0].selection_set, _fragments(document), set())
    return fields is not None and fields <= CACHEABLE_FIELDS


def _named(operation: OperationDefinitionNode, name: str) -> bool:
    return operation.name is not None and operation.name.value == name


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
