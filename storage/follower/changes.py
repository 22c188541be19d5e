"""Applying one snapshot's change to the run index, whichever way it was read.

A change stream, a poll and a catch-up all end here, in `extract_entry`, so what the
follower writes is exactly what a rebuild from the snapshots would write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bson import Timestamp
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.states import extract_or_log
from suspended_runs.storage.types import RUN_WORKFLOWS, Document, RunStatus

_BATCH = 1000


@dataclass(slots=True)
class ChangeApplier:
    snapshots: AsyncCollection[Document]
    index: RunIndex
    clock: Callable[[], datetime]
    lag: float | None = None
    """Seconds from the last change applied (committed, or `updatedAt` when polling)
    to its application here."""

    async def apply_document(self, doc: Document) -> int:
        """Bring one run's entry in line with its current snapshot document (whole, or as
        `extraction_projection` gives it); how many entries that wrote."""
        if doc.get("workflow_name") not in RUN_WORKFLOWS:
            return 0
        entry = extract_or_log(doc)
        if entry is not None:
            return await self._put_changed([entry])
        if isinstance(doc.get("run_id"), str):
            return await self.end_run(doc["run_id"])
        return 0

    async def end_run(self, run_id: str) -> int:
        """End a run whose snapshot is no longer suspended (or gone)."""
        return await self.index.discovery.end_runs([run_id], self.clock())

    async def end_snapshot(self, snapshot_id: Any) -> None:
        """End the run of a snapshot that was deleted."""
        await self.index.discovery.end_by_snapshot(snapshot_id, self.clock())

    async def end_vanished(self) -> int:
        """End the suspended runs whose snapshot is gone; how many."""
        by_snapshot = await self.index.discovery.suspended_by_snapshot()
        ids = list(by_snapshot)
        present: set[Any] = set()
        for i in range(0, len(ids), _BATCH):
            batch = {"_id": {"$in": ids[i : i + _BATCH]}}
            present |= {doc["_id"] async for doc in self.snapshots.find(batch, {"_id": 1})}
        gone = [run_id for snapshot_id, run_id in by_snapshot.items() if snapshot_id not in present]
        return await self.index.discovery.end_runs(gone, self.clock())

    def lagged(self, committed: Any) -> None:
        """A change committed at `committed` (a timestamp or a time) was just applied."""
        if isinstance(committed, Timestamp):
            committed = committed.as_datetime()
        if isinstance(committed, datetime):
            moment = committed if committed.tzinfo else committed.replace(tzinfo=UTC)
            self.lag = max((self.clock() - moment).total_seconds(), 0.0)

    async def _put_changed(self, entries: list[RunEntry]) -> int:
        known = await self.index.discovery.resting_states([e.run_id for e in entries])
        changed = [
            e for e in entries if known.get(e.run_id) != (RunStatus.SUSPENDED.value, e.suspended_at)
        ]
        return await self.index.discovery.put_suspended(changed)
