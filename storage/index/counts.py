"""Exact counts of the run index's lists, kept per filter and brought up to date from what
changed (docs/design.md, "Counts").

The embedded server counts a query by reading its matches, so counting every match after
every write would cost seconds at 100,000 runs. A count is kept as the `createdAt` windows
it was counted in, each with its matches; after a write, only the windows that hold an
entry written since are counted again. Every write that changes an entry's state stamps it
with the database's clock (`changedAt`, `$currentDate`), and the index's version carries the
time of the write that made it (`at`), so "written since" is one query on `changedAt`.
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.assignment import CHECKED_FIELDS, TOOL_CALLS, checked
from suspended_runs.storage.index.filters import Span, WindowWalk, remember, shape_key
from suspended_runs.storage.index.version import IndexVersion
from suspended_runs.storage.types import Document, RunStatus

STAMP: Document = {"$currentDate": {"changedAt": True}}
"""The part of an update that stamps an entry as changed, at the database's clock."""

_CHUNK = 1000
"""Matches a count asks for at a time, so other requests are served between its parts."""
_CLOCK_SLACK = timedelta(seconds=5)
"""How far the database's clock may step back (a new primary): changes this much before
a count's version are looked at again."""
_MOST_CHANGED = 2000
"""Entries written since a count beyond which it is counted afresh."""


@dataclass(frozen=True, slots=True)
class _Counted:
    """A count as of `version`: the windows it was counted in, with their matches."""

    version: IndexVersion
    windows: tuple[tuple[Span, int], ...]

    @property
    def total(self) -> int:
        return sum(matches for _, matches in self.windows)


class RunCounts:
    def __init__(
        self, collection: AsyncCollection[Document], densities: dict[tuple[Any, ...], float]
    ) -> None:
        self.collection = collection
        self._densities = densities
        """Matches per second of `createdAt`, learned per shape (shared with the lists)."""
        self._kept: OrderedDict[str, _Counted] = OrderedDict()

    async def count(self, shape: Document, span: Span, version: IndexVersion, now: datetime) -> int:
        """How many entries match `shape` within `span`, exact as of `version` or later."""
        key = repr((shape, span))
        kept = self._kept.get(key)
        if kept is not None and version.token is not None and kept.version.token == version.token:
            self._kept.move_to_end(key)
            return kept.total
        windows = await self._recounted(shape, kept, version) if kept else None
        if windows is None:
            windows = await self._walked(shape, span, version, now)
        counted = _Counted(version, windows)
        # RUNNING against STALLED, and an escalation's band of `suspendedAt`, move with the clock.
        if "claim.expiresAt" not in shape and "suspendedAt" not in shape:
            remember(self._kept, key, counted)
        return counted.total

    async def _walked(
        self, shape: Document, span: Span, version: IndexVersion, now: datetime
    ) -> tuple[tuple[Span, int], ...]:
        """Every match counted, in windows of about `_CHUNK` matches, newest first (the
        first window is open above, the last open below: together they cover `span`)."""
        walk = WindowWalk(
            span,
            top=version.newest or now,
            floor=version.oldest,
            need=None,
            chunk=_CHUNK,
            density=self._densities.get(shape_key(shape)),
        )
        windows: list[tuple[Span, int]] = []
        while not walk.done:
            pieces = await self._pieces(shape, walk.window())
            walk.saw(sum(matches for _, matches in pieces))
            windows += pieces
        return tuple(windows)

    async def _pieces(self, shape: Document, window: Span) -> list[tuple[Span, int]]:
        """The matches in `window`, counted as pieces of about `_CHUNK` each: read as their
        `createdAt` alone (on the embedded server, about what counting them costs), so a
        window that holds many (a walk across a gap in time, new runs piling into the
        newest) is cut where its matches are, and a later change there costs one piece."""
        asked, check = checked(shape)
        fields = {"_id": 0, "createdAt": 1, **(CHECKED_FIELDS if check else {})}
        found = self.collection.find(_within(asked, window), fields)
        moments = sorted(
            [
                doc["createdAt"]
                async for doc in found
                if "createdAt" in doc and (not check or check(doc))
            ]
        )
        cuts = sorted({moments[i - 1] for i in range(_CHUNK, len(moments), _CHUNK)})
        cuts = [cut for cut in cuts if window.upto is None or cut < window.upto]
        below = [0, *(bisect.bisect_right(moments, cut) for cut in cuts), len(moments)]
        bounds = [window.after, *cuts, window.upto]
        return [
            (Span(low, high), below[k + 1] - below[k])
            for k, (low, high) in enumerate(itertools.pairwise(bounds))
        ]

    async def _recounted(
        self, shape: Document, kept: _Counted, version: IndexVersion
    ) -> tuple[tuple[Span, int], ...] | None:
        """`kept`, its windows that hold an entry written since counted again; None when
        it cannot be brought up to date (counted afresh instead)."""
        since = kept.version.at
        if since is None or kept.version.epoch != version.epoch or not _stamped_state(shape):
            return None
        # A run keeps its scope, so what changed is checked against it here; not its
        # pending calls, which a decision changes (such a change counts its window again).
        scope = {k: v for k, v in shape.items() if k not in ("status", TOOL_CALLS)}
        fields = {"_id": 0, "createdAt": 1, **{name: 1 for name in scope}}
        changed = await written_since(self.collection, since, fields)
        if changed is None:
            return None
        moments = [
            doc["createdAt"] for doc in changed if "createdAt" in doc and _in_scope(doc, scope)
        ]
        windows: list[tuple[Span, int]] = []
        for window, matches in kept.windows:
            if not any(window.holds(moment) for moment in moments):
                windows.append((window, matches))
                continue
            windows += await self._pieces(shape, window)
        return tuple(windows)


async def written_since(
    collection: AsyncCollection[Document],
    since: datetime,
    fields: Document,
    most: int | None = None,
) -> list[Document] | None:
    """The entries written since `since` (a version's `at`, less `_CLOCK_SLACK`), as
    `fields`; None when there are more than `most`. Only `changedAt` is asked: the
    embedded server scans the collection for a query whose first field no index leads
    with."""
    most = _MOST_CHANGED if most is None else most
    query = {"changedAt": {"$gte": since - _CLOCK_SLACK}}
    cursor = collection.find(query, fields, limit=most + 1)
    changed = [doc async for doc in cursor]
    return None if len(changed) > most else changed


def _in_scope(doc: Document, scope: Document) -> bool:
    """Whether an entry matches a shape's equalities (a scope's `$in` beyond the spelled-out
    ones included)."""
    for name, wanted in scope.items():
        if isinstance(wanted, dict) and "$in" in wanted:
            if doc.get(name) not in wanted["$in"]:
                return False
        elif isinstance(wanted, dict) and "$ne" in wanted:
            if doc.get(name) == wanted["$ne"]:
                return False
        elif doc.get(name) != wanted:
            return False
    return True


def _within(shape: Document, window: Span) -> Document:
    bounds = window.to_query()
    return {**shape, "createdAt": bounds} if bounds else shape


def _stamped_state(shape: Document) -> bool:
    """Whether every way into or out of the shape's state is a stamped write. Finished
    entries also leave when their retention ends, deleted without a stamp: their counts
    are kept only until the next change."""
    return bool(shape.get("status") == RunStatus.SUSPENDED.value)
