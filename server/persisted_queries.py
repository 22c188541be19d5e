"""Persisted queries as Apollo's clients send them: `extensions.persistedQuery
{version: 1, sha256Hash}`, with the query (to register it) or without (to run it by hash).

Two modes. By default (automatic persisted queries) any caller may register a document
it may send: it is run, and kept under its hash in MongoDB, so any instance runs it by
hash afterwards; an unknown hash answers `PERSISTED_QUERY_NOT_FOUND` (HTTP 200, as Apollo
Server does), and Apollo Client then sends the query with it. With
`PERSISTED_QUERIES_ONLY=true` (trusted documents) only the operations of
`PERSISTED_QUERIES_FILE` run, by hash or by their exact text, and nothing is registered.

Registered documents belong to the caller's scope (storage/persisted_queries.py): a hash
is known to a caller only when a caller of the same scope registered it, so no tenant
learns whether another sent a document, and each scope registers at most
`PERSISTED_QUERIES_PER_MINUTE` new documents a minute on an instance (beyond it a query
still runs, unregistered), so none fills the collection with writes. The manifests (the
inbox's own, server/static/persisted-operations.json, and `PERSISTED_QUERIES_FILE`) are
everyone's, and always allowed, so the inbox works in both modes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphql import GraphQLError
from pymongo.errors import PyMongoError

from suspended_runs.resolvers import Scope
from suspended_runs.runtime import ConfigurationError
from suspended_runs.server.errors import RequestRefused
from suspended_runs.storage import PersistedQueryStore

log = logging.getLogger(__name__)

INBOX_MANIFEST = Path(__file__).parent / "static" / "persisted-operations.json"
MANIFEST_FORMAT = "apollo-persisted-query-manifest"
NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
KEPT_IN_MEMORY = 1000
"""Documents an instance keeps after reading them by hash (a hash's document never changes)."""
TOUCH_SECONDS = 60.0
"""How seldom an instance tells MongoDB that a document it keeps is still in use."""
SCOPES_RATED = 10_000
"""Scopes whose registrations an instance counts (the least recently seen are forgotten)."""

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def sha256(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def not_found() -> GraphQLError:
    """What Apollo Client reads as "send the query with the hash" (its message and code)."""
    return GraphQLError("PersistedQueryNotFound", extensions={"code": NOT_FOUND})


@dataclass(frozen=True, slots=True)
class Resolved:
    """What to run: `query` (None: the hash is not known, answer `not_found()`), and
    the hash to register it under once it ran (None: nothing to register)."""

    query: str | None
    register: str | None = None


class PersistedQueries:
    def __init__(
        self,
        store: PersistedQueryStore,
        *,
        only: bool,
        manifest: dict[str, str],
        per_minute: int = 60,
    ) -> None:
        self.store, self.only = store, only
        self.allowed = {**manifest, **load_manifest(INBOX_MANIFEST)}
        """Hash -> document of every operation of the manifests (trusted in both modes)."""
        self._kept: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        """(scope, hash) -> (document, when MongoDB was last told of its use)."""
        self._rate = Registrations(per_minute)

    async def resolve(
        self, query: str | None, extensions: dict[str, Any] | None, scope: Scope
    ) -> Resolved:
        """The document a request of a caller of `scope` runs. Raises RequestRefused
        (400) for a malformed `persistedQuery`, a query that does not hash to its hash,
        and, with trusted documents, a document that is not one of them."""
        persisted = (extensions or {}).get("persistedQuery")
        if persisted is None:
            if self.only and query is not None and sha256(query) not in self.allowed:
                raise _not_allowed()
            return Resolved(query)
        sha = _hash_of(persisted)
        if query is not None:
            if sha256(query) != sha:
                raise RequestRefused(
                    400,
                    "PERSISTED_QUERY_HASH_MISMATCH",
                    "the query does not have the SHA-256 in extensions.persistedQuery",
                )
            if self.only and sha not in self.allowed:
                raise _not_allowed()
            return Resolved(query, None if self.only or sha in self.allowed else sha)
        query = await self.lookup(sha, scope)
        if query is None and self.only:
            raise _not_allowed()
        return Resolved(query)

    async def lookup(self, sha: str, scope: Scope) -> str | None:
        """The document of the manifests, or registered by `scope`, under `sha`; or None."""
        if sha in self.allowed:
            return self.allowed[sha]
        if self.only:
            return None
        key = (scope_key(scope), sha)
        kept = self._kept.get(key)
        now = time.monotonic()
        if kept is not None:
            self._kept.move_to_end(key)
            if now - kept[1] > TOUCH_SECONDS:
                self._keep(key, kept[0], now)
                await self.store.touch(*key)
            return kept[0]
        query = await self.store.get(*key)
        if query is not None and sha256(query) == sha:
            self._keep(key, query, now)
            return query
        return None

    async def register(self, sha: str, query: str, scope: Scope) -> None:
        """Keeps `query` (which ran, so its caller may send it) under `sha` for `scope`,
        unless that scope is over its rate; a database failure here loses only the
        registration, which the client's next try repeats."""
        key = (scope_key(scope), sha)
        if key in self._kept or not self._rate.take(key[0]):
            return
        try:
            await self.store.put(*key, query)
        except PyMongoError:
            log.warning("could not register a persisted query", exc_info=True)
            return
        self._keep(key, query, time.monotonic())

    def _keep(self, key: tuple[str, str], query: str, touched: float) -> None:
        self._kept[key] = (query, touched)
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT_IN_MEMORY:
            self._kept.popitem(last=False)


class Registrations:
    """How many documents each scope may register now: `per_minute` at once, and again
    as the minute passes (a token bucket per scope, on this instance)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """Scope -> (registrations it may make, when that was counted)."""

    def take(self, scope: str) -> bool:
        """Whether `scope` may register one more now (and counts it if so)."""
        now = time.monotonic()
        tokens, counted = self._buckets.pop(scope, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - counted) * self.per_minute / 60)
        allowed = tokens >= 1
        self._buckets[scope] = (tokens - 1 if allowed else tokens, now)
        while len(self._buckets) > SCOPES_RATED:
            self._buckets.popitem(last=False)
        return allowed


@functools.lru_cache(maxsize=1024)
def scope_key(scope: Scope) -> str:
    """`scope` as the text persisted queries are kept under: `all`, or a digest of its
    resource and agent ids (order and repeats aside)."""
    if scope.unrestricted:
        return "all"
    parts = {
        "agentIds": None if scope.agent_ids is None else sorted(scope.agent_ids),
        "resourceIds": None if scope.resource_ids is None else sorted(scope.resource_ids),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def hash_of_request(extensions: object) -> str | None:
    """The hash a GET's `extensions` parameter (JSON text) names, or None."""
    if not isinstance(extensions, str):
        return None
    try:
        persisted = json.loads(extensions).get("persistedQuery")
        return _hash_of(persisted)
    except (ValueError, AttributeError, RequestRefused):
        return None


def load_manifest(path: Path) -> dict[str, str]:
    """Hash -> document of an Apollo persisted-query manifest. Raises ConfigurationError
    naming what is wrong with it."""
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"PERSISTED_QUERIES_FILE: cannot read {path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ConfigurationError(
            f'PERSISTED_QUERIES_FILE: {path} is not a manifest ("format": "{MANIFEST_FORMAT}")'
        )
    operations = manifest.get("operations")
    if manifest.get("version") != 1 or not isinstance(operations, list):
        raise ConfigurationError(
            f'PERSISTED_QUERIES_FILE: {path} needs "version": 1 and a list of "operations"'
        )
    allowed: dict[str, str] = {}
    for number, operation in enumerate(operations):
        body = operation.get("body") if isinstance(operation, dict) else None
        if not isinstance(body, str) or operation.get("id") != sha256(body):
            raise ConfigurationError(
                f"PERSISTED_QUERIES_FILE: operation {number} of {path} needs a string "
                '"body" and its SHA-256 (hex) as "id"'
            )
        allowed[operation["id"]] = body
    return allowed


def _hash_of(persisted: object) -> str:
    if not isinstance(persisted, dict) or persisted.get("version") != 1:
        raise RequestRefused(
            400, "BAD_REQUEST", "extensions.persistedQuery needs version 1 and a sha256Hash"
        )
    sha = persisted.get("sha256Hash")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise RequestRefused(
            400, "BAD_REQUEST", "extensions.persistedQuery.sha256Hash is not a SHA-256 in hex"
        )
    return sha


def _not_allowed() -> RequestRefused:
    return RequestRefused(
        400,
        "PERSISTED_QUERY_NOT_ALLOWED",
        "this server runs only its trusted documents (PERSISTED_QUERIES_ONLY)",
    )
