"""Applying what changed in the snapshots to the run index, a batch at a time, whichever
way it was read (a change stream's batch, a poll, a window of a catch-up).

Every path ends in `extract_entry`, so what the follower writes is exactly what a rebuild
from the snapshots would write; a batch is one bulk write and one new version, so N
changes cost N / batch round trips.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bson import Timestamp
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.events.outbox import EventOutbox, RunEvent
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.states import extract_or_log
from suspended_runs.storage.types import RUN_WORKFLOWS, Document, RunStatus, Runtime

_BATCH = 1000
_DELAYS_KEPT = 10_000

Change = tuple[Any, Document | None]
"""A snapshot document's `_id`, and the document as it is now (None: deleted)."""


@dataclass(slots=True)
class ChangeApplier:
    snapshots: AsyncCollection[Document]
    index: RunIndex
    clock: Callable[[], datetime]
    lag: float | None = None
    """Seconds from the last change applied (committed, or `updatedAt` when polling)
    to its application here."""
    delays: deque[float] = field(default_factory=lambda: deque(maxlen=_DELAYS_KEPT))
    """The write-to-applied seconds of changes applied since the metrics last took them."""
    applied_up_to: datetime | None = None
    """When the newest change applied was written (its commit, or its `updatedAt`)."""
    outbox: EventOutbox | None = None

    async def apply(self, changes: Iterable[Change], *, announce: bool = False) -> int:
        """Bring the entries of the changed snapshots in line with them, as one batch (the
        last change of each document counts); how many entries that wrote. `announce`:
        Mastra's runs that became suspended or ended are events (storage/events/outbox.py),
        written before the caller saves its place past these changes."""
        latest: dict[Any, Document | None] = {}
        for snapshot_id, doc in changes:
            latest.pop(snapshot_id, None)  # moved to the end: the order of last changes
            latest[snapshot_id] = doc
        entries: list[RunEntry] = []
        ended: list[str] = []
        deleted = [snapshot_id for snapshot_id, doc in latest.items() if doc is None]
        for doc in latest.values():
            if doc is None or doc.get("workflow_name") not in RUN_WORKFLOWS:
                continue
            entry = extract_or_log(doc)
            if entry is not None:
                entries.append(entry)
            elif isinstance(doc.get("run_id"), str):
                ended.append(doc["run_id"])
        held, new = await self._changed(entries)
        happened = await self._events(held + new, ended, deleted) if announce else []
        if happened and self.outbox is not None:  # first: a replay finds these entries written
            await self.outbox.add(happened)
        return await self.index.discovery.apply(held, ended, deleted, self.clock(), new=new)

    async def apply_documents(self, docs: list[Document], *, announce: bool = False) -> int:
        """`apply` to documents as they are now, `_BATCH` at a time."""
        written = 0
        for i in range(0, len(docs), _BATCH):
            batch = ((doc.get("_id"), doc) for doc in docs[i : i + _BATCH])
            written += await self.apply(batch, announce=announce)
        return written

    async def end_run(self, run_id: str) -> int:
        """End a run whose snapshot is no longer suspended (or gone)."""
        return await self.index.discovery.end_runs([run_id], self.clock())

    async def end_vanished(self, *, announce: bool = False) -> int:
        """End the suspended runs whose snapshot is gone; how many (`announce` as `apply`)."""
        by_snapshot = await self.index.discovery.suspended_by_snapshot()
        ids = list(by_snapshot)
        present: set[Any] = set()
        for i in range(0, len(ids), _BATCH):
            batch = {"_id": {"$in": ids[i : i + _BATCH]}}
            present |= {doc["_id"] async for doc in self.snapshots.find(batch, {"_id": 1})}
        gone = [run_id for snapshot_id, run_id in by_snapshot.items() if snapshot_id not in present]
        happened = await self._events([], gone, []) if announce and gone else []
        if happened and self.outbox is not None:  # first, as in `apply`
            await self.outbox.add(happened)
        return await self.index.discovery.end_runs(gone, self.clock())

    def observed(self, committed: Any) -> None:
        """A change written at `committed` (a timestamp or a time) was just applied."""
        if isinstance(committed, Timestamp):
            committed = committed.as_datetime()
        if isinstance(committed, datetime):
            moment = committed if committed.tzinfo else committed.replace(tzinfo=UTC)
            self.lag = max((self.clock() - moment).total_seconds(), 0.0)
            self.delays.append(self.lag)
            if self.applied_up_to is None or moment > self.applied_up_to:
                self.applied_up_to = moment

    async def _events(
        self, suspended: list[RunEntry], ended: list[str], deleted: list[Any]
    ) -> list[RunEvent]:
        """What these changes announce, if any webhook listens: a suspension of each run of
        `suspended`, and the end of each SUSPENDED run that `ended` and `deleted` end.
        Python runs are announced by their runtime, as it writes them."""
        if self.outbox is None or not await self.outbox.active():
            return []
        now = self.clock()
        ending = (
            await self.index.discovery.suspended_among(ended, deleted) if ended or deleted else []
        )
        return [
            *(events.suspended(e, now) for e in suspended if e.runtime is Runtime.MASTRA),
            *(
                events.settled(e.finished(RunStatus.ENDED, None, now), now)
                for e in ending
                if e.runtime is Runtime.MASTRA
            ),
        ]

    async def _changed(self, entries: list[RunEntry]) -> tuple[list[RunEntry], list[RunEntry]]:
        """Of `entries`, those the index holds otherwise, and those it holds no entry for
        (new runs: inserted). One the index holds as it is writes nothing, and makes no
        new version."""
        if not entries:
            return [], []
        known = await self.index.discovery.resting_states([e.run_id for e in entries])
        held = [
            e
            for e in entries
            if e.run_id in known and known[e.run_id] != (RunStatus.SUSPENDED.value, e.suspended_at)
        ]
        return held, [e for e in entries if e.run_id not in known]
