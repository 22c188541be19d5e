"""List pages and counts of the run index, asked in `createdAt` windows.

The embedded server answers a sorted query by reading every match, so a page is asked as
one query per shape (state, scope value), each in windows of `createdAt` just wide enough
for the page, and merged (docs/design.md, "Lists on the embedded server").
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.assignment import CHECKED_FIELDS, checked
from suspended_runs.storage.index.counts import RunCounts
from suspended_runs.storage.index.entry import RunEntry, read_entry
from suspended_runs.storage.index.filters import (
    SORT,
    Cursor,
    RunFilter,
    Span,
    WindowWalk,
    remember,
    shape_key,
)
from suspended_runs.storage.index.marked import REVIEW_FIELDS, MarkedRuns, kept, walks
from suspended_runs.storage.index.tallies import SuspendedTallies
from suspended_runs.storage.index.version import IndexVersion
from suspended_runs.storage.types import Document


class RunPages:
    def __init__(
        self, collection: AsyncCollection[Document], tallies: SuspendedTallies | None
    ) -> None:
        self.collection = collection
        self.tallies = tallies
        self._densities: dict[tuple[Any, ...], float] = {}
        """Matches per second of `createdAt`, learned per shape (shared with the counts)."""
        self._counts = RunCounts(collection, self._densities)
        self._marked = MarkedRuns(collection)
        self._reached: OrderedDict[str, tuple[datetime, datetime]] = OrderedDict()
        """The newest and oldest `createdAt` the last first page of each shape found: the
        next one's first window spans them (open above, so nothing newer is missed), not
        the time since the newest run of every shape, nor a width from a density averaged
        across a gap in time."""

    async def page(
        self,
        run_filter: RunFilter,
        version: IndexVersion,
        *,
        limit: int,
        skip: int = 0,
        after: Cursor | None = None,
        now: datetime | None = None,
    ) -> list[RunEntry]:
        """The runs `run_filter` selects, in `(createdAt desc, runId)` order: `limit` of them
        after `skip` others, or after the cursor `after`. One query per shape (state, scope
        value), merged; each asked in windows, so it costs about `skip + limit` matches.

        The runs skipped are read as their sort keys only, and the page as a keyset page
        after the last of them: a skipped run costs its lookup, not its transfer and
        decoding."""
        now = now or datetime.now(UTC)
        extra = await self._marked.extra(run_filter, now, version.token)
        if skip:
            ask = _Ask(_KEYS, skip, after, version, now, extra)
            passed = await self._merged(run_filter, ask)
            if len(passed) < skip:
                return []
            after = passed[-1]
        return await self._merged(run_filter, _Ask(_ENTRIES, limit, after, version, now, extra))

    async def count(self, run_filter: RunFilter, version: IndexVersion, now: datetime) -> int:
        """How many runs `run_filter` selects, exact as of `version`: suspended runs from
        the tallies of every shape (storage/index/tallies.py) once they are read, else kept
        per filter, and brought up to date from what changed (storage/index/counts.py)."""
        span = run_filter.span()
        total = len(await self._marked.extra(run_filter, now, version.token))
        for shape in run_filter.shapes(now) if walks(run_filter) else ():
            tallied = await self.tallies.count(shape, span, version) if self.tallies else None
            if tallied is None:
                tallied = await self._counts.count(shape, span, version, now)
            total += tallied
        return total - await self._marked.left_out(run_filter, now, version.token)

    async def _merged(self, run_filter: RunFilter, ask: _Ask[_Keyed]) -> list[_Keyed]:
        """The first `ask.need` runs of every shape of `run_filter` after `ask.after`, merged."""
        span, keep = run_filter.span(), kept(run_filter, ask.now)
        shapes = run_filter.shapes(ask.now) if walks(run_filter) else []
        pages = [await self._page_of(shape, span, ask, keep) for shape in shapes]
        pages.append(_marked_page(ask))
        merged = heapq.merge(*pages, key=lambda e: (-e.created_at.timestamp(), e.run_id))
        return list(itertools.islice(merged, ask.need))

    async def _page_of(
        self,
        shape: Document,
        span: Span,
        ask: _Ask[_Keyed],
        keep: Callable[[Document], bool] | None = None,
    ) -> list[_Keyed]:
        """`ask.need` runs of one shape within `span`, after the cursor: first the ties at
        the cursor's moment (`runId` after it), then windows below it. The same page as
        `createdAt < c or (createdAt == c and runId > r)` without a top-level $or, which the
        embedded server scans for. `keep`: a check of each entry read beside the shape's
        own (a list that leaves some reviews out, storage/index/marked.py)."""
        read, need, after, at, now = ask.read, ask.need, ask.after, ask.at, ask.now
        asked, check = _with_kept(*checked(shape), keep)
        found: list[_Keyed] = []
        if after is not None:
            if span.holds(after.created_at):
                ties = {**asked, "createdAt": after.created_at, "runId": {"$gt": after.run_id}}
                found += await self._find(ties, need, read, check)
            span = span.below(after.created_at)
        newest, reach = self._reached.get(_remembered_as(shape)) or (None, None)
        walk = WindowWalk(
            span,
            top=newest or at.newest or now,
            floor=at.oldest,
            need=need - len(found),
            density=self._densities.get(shape_key(shape)),
            reach=reach if after is None else None,
        )
        while not walk.done:
            window = walk.window().to_query()
            query = {**asked, "createdAt": window} if window else asked
            more = await self._find(query, walk.wanted, read, check)
            found += more
            walk.saw(len(more))
        if found:
            self._learn(shape, walk, found, first_page=after is None)
        return found

    def _learn(
        self, shape: Document, walk: WindowWalk, entries: list[_Keyed], *, first_page: bool
    ) -> None:
        """What a walk found about its shape: its density, and (a first page) its newest."""
        if density := walk.learned(entries[-1].created_at, entries[0].created_at):
            self._densities[shape_key(shape)] = density
        if first_page:
            reached = (entries[0].created_at, entries[-1].created_at)
            remember(self._reached, _remembered_as(shape), reached)

    async def _find(
        self,
        query: Document,
        limit: int,
        read: _Reading[_Keyed],
        check: Callable[[Document], bool] | None = None,
    ) -> list[_Keyed]:
        """The first `limit` entries `query` matches in list order (with `check`, of those
        it passes: read until `limit` pass, or the query's matches end)."""
        if check is None:
            cursor = self.collection.find(query, read.projection, sort=SORT, limit=limit)
            return [kept async for doc in cursor if (kept := read.convert(doc)) is not None]
        projection = read.projection
        if any(projection.get(name) == 1 for name in projection):  # an inclusion
            projection = {**projection, **CHECKED_FIELDS, **REVIEW_FIELDS}
        found: list[_Keyed] = []
        # A batch of `limit`: most entries of a band pass, and each read is decoded whole.
        async with self.collection.find(query, projection, sort=SORT, batch_size=limit) as cursor:
            async for doc in cursor:
                if check(doc) and (entry := read.convert(doc)) is not None:
                    found.append(entry)
                    if len(found) >= limit:
                        break
        return found


def _with_kept(
    asked: Document,
    check: Callable[[Document], bool] | None,
    keep: Callable[[Document], bool] | None,
) -> tuple[Document, Callable[[Document], bool] | None]:
    """A shape's query and check, with `keep` checked too."""
    if keep is None or check is None:
        return asked, keep or check
    both = check
    return asked, lambda doc: both(doc) and keep(doc)


def _marked_page(ask: _Ask[_Keyed]) -> list[_Keyed]:
    """The entries a list holds beside its walk (storage/index/marked.py), after the
    cursor, in list order."""
    found = [entry for doc in ask.extra if (entry := ask.read.convert(doc)) is not None]
    after = ask.after
    if after is not None:
        found = [
            e
            for e in found
            if e.created_at < after.created_at
            or (e.created_at == after.created_at and e.run_id > after.run_id)
        ]
    found.sort(key=lambda e: (-e.created_at.timestamp(), e.run_id))
    return found


def _remembered_as(shape: Document) -> str:
    """A shape as the walks remember it: an escalation band's `suspendedAt` by its form,
    not its moment (that moves every request: each would push others out)."""
    if "suspendedAt" not in shape:
        return repr(shape)
    return repr({**shape, "suspendedAt": sorted(shape["suspendedAt"])})


def _read_key(doc: Document) -> Cursor | None:
    """A run's place in list order, or None for an entry without one (a page skips it)."""
    created_at, run_id = doc.get("createdAt"), doc.get("runId")
    if not isinstance(created_at, datetime) or not isinstance(run_id, str):
        return None
    return Cursor(created_at, run_id)


class _Ordered(Protocol):
    """What a list merges by: a run's place in `(createdAt desc, runId)` order."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def run_id(self) -> str: ...


_Keyed = TypeVar("_Keyed", bound=_Ordered)


@dataclass(frozen=True, slots=True)
class _Reading(Generic[_Keyed]):
    """What a list query reads of each entry, and what it makes of it (None: skipped)."""

    projection: Document
    convert: Callable[[Document], _Keyed | None]


@dataclass(frozen=True, slots=True)
class _Ask(Generic[_Keyed]):
    """What one list read asks: how to read each entry, how many, after which cursor, as of
    which version, at which moment, and what it holds beside its walk."""

    read: _Reading[_Keyed]
    need: int
    after: Cursor | None
    at: IndexVersion
    now: datetime
    extra: list[Document]
    """Entries the list holds that no walk finds (storage/index/marked.py)."""


_ENTRIES = _Reading({"_id": 0, "snapshotId": 0}, read_entry)  # pages are never written back
_KEYS = _Reading({"_id": 0, "createdAt": 1, "runId": 1}, _read_key)
