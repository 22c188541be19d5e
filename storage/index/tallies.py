"""Exact counts of suspended runs for every equality shape at once, kept in memory and
brought up to date from what changed (docs/design.md, "Counts").

A shape's first count on the embedded server reads each of its matches: a resource with
many suspended runs costs more to count than to page. The tallies are read once, in the
background, as every suspended entry's scope and `createdAt` (in batches that let
requests through); after that a count of any agent, resource, thread or pair of them, within any
`createdAt` span, is a lookup, and a new version of the index costs the one query on
`changedAt` a kept count makes (storage/index/counts.py, `written_since`). Until they are
read, and when they cannot be brought up to date (a new epoch, too many changes), counts
are taken as before. Only SUSPENDED is tallied: every way into or out of it is a stamped write.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.assignment import (
    CHECKED_FIELDS,
    TOOL_CALLS,
    band_tools,
    pending_tools,
    tool_order,
)
from suspended_runs.storage.index.counts import written_since
from suspended_runs.storage.index.filters import Span
from suspended_runs.storage.index.version import IndexVersion
from suspended_runs.storage.types import Document, RunStatus

log = logging.getLogger(__name__)

Key = tuple[tuple[str, str], ...]
"""A shape's equalities besides `status`, in `_FIELDS` order, then (with an agent) the
run's pending tools as `_TOOLS`: `()` is every run."""

_FIELDS = ("agentId", "resourceId", "threadId")
_TOOLS = "pendingTools"
"""The distinct tools of a run's pending calls, as one text (`_toolset`): a run is in one
such key, so a count of runs with a pending call of some tools adds keys, never a run twice."""
_SUSPENDED = RunStatus.SUSPENDED.value
_PROJECTION = {
    "_id": 0,
    "runId": 1,
    "status": 1,
    "createdAt": 1,
    **{f: 1 for f in _FIELDS},
    **CHECKED_FIELDS,  # a run's pending tools and its suspension
}
_Run = tuple[Key, datetime, datetime | None]
"""A suspended run as the tallies keep it: its scope, `createdAt` and `suspendedAt`."""
_BATCH = 500
"""Entries read at a time while loading: each batch is one short turn of the database."""
_MOST_CHANGED = 50_000
"""Entries written since the tallies were last brought up to date beyond which they are
read afresh: each costs a lookup and a dictionary update, far less than a new read of every
suspended entry, so a burst the follower applies keeps them (counts.py allows fewer)."""
_RELOAD_AFTER = 60.0
"""Seconds between two loads: a first start changes the epoch with every batch it writes."""


class SuspendedTallies:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        read_version: Callable[[], Awaitable[IndexVersion]],
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.collection = collection
        self._read_version = read_version
        self._ready = ready
        """False while this process fills a new index: what it would read is soon stale."""
        self._version: IndexVersion | None = None
        """The version the tallies are exact at (or later); None: not read."""
        self._runs: dict[str, _Run] = {}
        self._moments: dict[Key, list[datetime]] = {}
        """Each key's suspended runs as their `createdAt`, sorted."""
        self._suspensions: dict[Key, list[datetime]] = {}
        """Each key with pending tools, its runs' `suspendedAt` (those that state one),
        sorted: what an escalation's band counts by."""
        self._scopes: dict[Key, Key] = {}
        """One copy of each scope, which its runs share (at 100,000 runs, 30 MB less)."""
        self._toolsets: dict[str, frozenset[str | None]] = {}
        """Every `_TOOLS` value met since the tallies were read, with the tools it names."""
        self._lock = asyncio.Lock()
        self._loading: asyncio.Task[None] | None = None
        self._next_load = 0.0

    @property
    def loaded(self) -> bool:
        return self._version is not None

    async def count(self, shape: Document, span: Span, version: IndexVersion) -> int | None:
        """How many suspended runs match `shape` within `span`, exact as of `version` or
        later; None when the tallies cannot say (not read yet, or not a tallied shape)."""
        key = _key(shape)
        suspended = shape.get("suspendedAt")
        if key is None or (suspended is not None and (span.after or span.upto)):
            return None  # a band of `suspendedAt` is counted within an open span only
        if not await self._current(version):
            return None
        base, tools = key
        if tools is None:
            return _within(self._moments.get(base, []), span)
        keys = [(*base, (_TOOLS, text)) for text, named in self._toolsets.items() if named & tools]
        if suspended is None:
            return sum(_within(self._moments.get(k, []), span) for k in keys)
        return sum(self._in_band(k, suspended) for k in keys)

    def _in_band(self, key: Key, condition: Document) -> int:
        """The runs of `key` whose `suspendedAt` meets an escalation band's condition
        (storage/index/assignment.py); `$not` also holds those that state none."""
        dated = self._suspensions.get(key, [])
        if "$not" in condition:
            return len(self._moments.get(key, ())) - bisect.bisect_right(
                dated, condition["$not"]["$lte"]
            )
        below = bisect.bisect_right(dated, condition["$gt"]) if "$gt" in condition else 0
        return max(0, bisect.bisect_right(dated, condition["$lte"]) - below)

    async def by_agent(
        self, version: IndexVersion, agent_ids: list[str], resource_ids: frozenset[str] | None
    ) -> dict[str, int] | None:
        """Each agent's suspended runs (within `resource_ids`; None: any), exact as of
        `version` or later: a lookup per agent (and resource); None when the tallies
        cannot say."""
        if not await self._current(version):
            return None
        moments = self._moments
        if resource_ids is None:
            return {a: len(moments.get((("agentId", a),), ())) for a in agent_ids}
        return {
            a: sum(len(moments.get((("agentId", a), ("resourceId", r)), ())) for r in resource_ids)
            for a in agent_ids
        }

    async def _current(self, version: IndexVersion) -> bool:
        """Whether the tallies are exact as of `version` or later, brought up to it; if
        they cannot be (not read, a new epoch, too many changes), forgotten and read soon."""
        async with self._lock:
            kept = self._version
            if (
                kept is not None
                and kept.epoch == version.epoch
                and isinstance(version.at, datetime)
            ):
                if kept.token == version.token or kept.changes >= version.changes:
                    return True
                if await self._caught_up(kept):
                    self._version = version
                    return True
            self._forget()
            self._load_soon()
            return False

    async def _caught_up(self, kept: IndexVersion) -> bool:
        """Every entry written since `kept` put as it is now; False when there are more
        than `_MOST_CHANGED` (the tallies are then as they were)."""
        assert isinstance(kept.at, datetime)  # a version without one is never kept
        changed = await written_since(self.collection, kept.at, _PROJECTION, _MOST_CHANGED)
        for doc in changed or []:
            self._put(doc)
        return changed is not None

    def _load_soon(self) -> None:
        idle = self._loading is None or self._loading.done()
        if idle and time.monotonic() >= self._next_load and self._ready():
            self._next_load = time.monotonic() + _RELOAD_AFTER
            # A context of its own: the read is no request's (its log lines name none).
            self._loading = asyncio.create_task(self._load(), context=contextvars.Context())

    async def _load(self) -> None:
        started = time.monotonic()
        try:
            loaded = await self._read()
        except Exception as exc:  # a background task's: nobody else would see it
            log.warning("could not read the counts of suspended runs (kept as before): %r", exc)
            return
        finally:
            self._loading = None
        if loaded:
            seconds = time.monotonic() - started
            log.info(
                "counts of suspended runs kept in memory: %d runs, read in %.1f s",
                len(self._runs),
                seconds,
            )

    async def _read(self) -> bool:
        """Every suspended entry, then what was written while they were read (a scan is
        no snapshot: an entry that changed meanwhile may have been met in either state,
        or not at all); whether the tallies were made."""
        version = await self._read_version()
        if not isinstance(version.at, datetime):
            return False  # nothing written since the index kept versions: nothing to see since
        runs: dict[str, _Run] = {}
        scopes: dict[Key, Key] = {}
        toolsets: dict[str, frozenset[str | None]] = {}
        query = {"status": _SUSPENDED}
        async for doc in self.collection.find(query, _PROJECTION, batch_size=_BATCH):
            if (run := _run(doc, scopes, toolsets)) is not None:
                runs[doc["runId"]] = run
        async with self._lock:
            self._fill(runs, scopes)
            self._toolsets = toolsets
            if not await self._caught_up(version):
                self._forget()
                return False
            self._version = version
        return True

    def _fill(self, runs: dict[str, _Run], scopes: dict[Key, Key]) -> None:
        self._runs, self._scopes = runs, scopes
        moments: dict[Key, list[datetime]] = {}
        suspensions: dict[Key, list[datetime]] = {}
        for scope, created_at, suspended_at in runs.values():
            for key in _keys(scope):
                moments.setdefault(key, []).append(created_at)
                if suspended_at is not None and _tooled(key):
                    suspensions.setdefault(key, []).append(suspended_at)
        for listed in [*moments.values(), *suspensions.values()]:
            listed.sort()
        self._moments, self._suspensions = moments, suspensions

    def _forget(self) -> None:
        self._version = None
        self._runs = {}
        self._moments = {}
        self._suspensions = {}
        self._scopes = {}
        self._toolsets = {}

    def _put(self, doc: Document) -> None:
        """An entry as it is now: out of the tallies as it was, in them if suspended."""
        run_id = doc.get("runId")
        if not isinstance(run_id, str):
            return
        if (was := self._runs.pop(run_id, None)) is not None:
            for key in _keys(was[0]):
                _remove(self._moments, key, was[1])
                if was[2] is not None and _tooled(key):
                    _remove(self._suspensions, key, was[2])
        run = _run(doc, self._scopes, self._toolsets) if doc.get("status") == _SUSPENDED else None
        if run is not None:
            self._runs[run_id] = run
            for key in _keys(run[0]):
                bisect.insort(self._moments.setdefault(key, []), run[1])
                if run[2] is not None and _tooled(key):
                    bisect.insort(self._suspensions.setdefault(key, []), run[2])
        if len(self._scopes) > 2 * len(self._runs) + 1024:  # those of runs gone since
            self._scopes = {run[0]: run[0] for run in self._runs.values()}


def _run(
    doc: Document, scopes: dict[Key, Key], toolsets: dict[str, frozenset[str | None]]
) -> _Run | None:
    """An entry's scope (the copy in `scopes`, which its runs share), `createdAt` and
    `suspendedAt`; the text of its pending tools is added to `toolsets`."""
    created_at = doc.get("createdAt")
    if not isinstance(doc.get("runId"), str) or not isinstance(created_at, datetime):
        return None  # malformed: not counted by the tallies nor listed by a window
    scope = tuple((f, doc[f]) for f in _FIELDS if isinstance(doc.get(f), str))
    named = pending_tools(doc)
    text = _toolset(named)
    toolsets.setdefault(text, named)
    scope = (*scope, (_TOOLS, text))
    suspended_at = doc.get("suspendedAt")
    dated = suspended_at if isinstance(suspended_at, datetime) else None
    return scopes.setdefault(scope, scope), created_at, dated


def _toolset(named: frozenset[str | None]) -> str:
    return json.dumps(sorted(named, key=tool_order))


def _key(shape: Document) -> tuple[Key, frozenset[str | None] | None] | None:
    """The tallies' key of a count's shape, and the tools one of its runs' pending calls
    must name (None: any); None for a shape they do not keep."""
    tools = band_tools(shape.get(TOOL_CALLS))
    allowed = {"status", *_FIELDS, *([TOOL_CALLS, "suspendedAt"] if tools is not None else [])}
    if shape.get("status") != _SUSPENDED or not set(shape) <= allowed:
        return None
    if not all(isinstance(shape[f], str) for f in _FIELDS if f in shape):
        return None  # a scope's `$in` asked as it is (beyond the spelled-out ones)
    if tools is not None and not isinstance(shape.get("agentId"), str):
        return None  # tools are kept with an agent only
    return tuple((f, shape[f]) for f in _FIELDS if f in shape), tools


def _keys(scope: Key) -> Iterator[Key]:
    """Every shape a run with these equalities is counted in: each subset of them, and
    each subset with its agent also with its pending tools."""
    fields = tuple(pair for pair in scope if pair[0] != _TOOLS)
    tools = [pair for pair in scope if pair[0] == _TOOLS]
    for size in range(len(fields) + 1):
        for subset in itertools.combinations(fields, size):
            yield subset
            if tools and subset and subset[0][0] == "agentId":
                yield (*subset, tools[0])


def _remove(moments: dict[Key, list[datetime]], key: Key, created_at: datetime) -> None:
    listed = moments.get(key, [])
    at = bisect.bisect_left(listed, created_at)
    if at < len(listed) and listed[at] == created_at:
        del listed[at]
    if not listed:
        moments.pop(key, None)


def _within(moments: list[datetime], span: Span) -> int:
    low = 0 if span.after is None else bisect.bisect_right(moments, span.after)
    high = len(moments) if span.upto is None else bisect.bisect_right(moments, span.upto)
    return max(0, high - low)


def _tooled(key: Key) -> bool:
    """Whether a key names pending tools (its runs' suspensions are kept too)."""
    return bool(key) and key[-1][0] == _TOOLS
