"""Following the snapshots by polling, where the database offers no change stream.

`updatedAt` is written by each writer's own clock, so a writer whose clock is behind
writes times below what was seen already: every poll looks back an overlap below the
high-water mark, reading only `(_id, updatedAt, status)` there, and fetches the documents
it has not yet seen as they are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.follower.changes import ChangeApplier
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.settling import Settlement
from suspended_runs.storage.snapshots.reader import SnapshotReader
from suspended_runs.storage.snapshots.states import STATUS_FIELDS, status_of
from suspended_runs.storage.types import RUN_WORKFLOWS, Document

_BATCH = 500
_LOOK = {"_id": 1, "updatedAt": 1, **STATUS_FIELDS}
"""What a poll reads of each recent document to tell whether it changed since applied."""


class SnapshotPoller:
    def __init__(
        self,
        snapshots: AsyncCollection[Document],
        changes: ChangeApplier,
        position: FollowPosition,
        settlement: Settlement,
        *,
        interval: float,
        overlap: timedelta,
    ) -> None:
        self.snapshots = snapshots
        self.changes = changes
        self.position = position
        self.settlement = settlement
        self.interval = interval
        self.overlap = overlap
        """How far below the newest `updatedAt` seen each poll looks: the clock skew between
        snapshot writers that polling tolerates."""
        self._seen: dict[Any, tuple[Any, Any]] = {}
        """`_id` -> `_look_of` the documents applied within the poll overlap."""

    async def follow(self, following: Callable[[], None]) -> None:
        """Poll every `interval` until cancelled; `following` is called after each poll."""
        while True:
            await asyncio.sleep(self.interval)
            await self.poll_once()
            following()
            if self.position.due():
                await self.position.save(None)  # the high-water mark, for a restart

    async def poll_once(self) -> None:
        """Apply snapshots changed since the last look (de-duplicated by `_id` and
        `updatedAt`), and end runs whose snapshot is gone."""
        query: Document = {}
        high_water = self.position.high_water
        if high_water is not None:
            # `updatedAt` first: the embedded server serves the first clause an index can.
            query["updatedAt"] = {"$gte": high_water - self.overlap}
        query["workflow_name"] = {"$in": list(RUN_WORKFLOWS)}
        fresh = []
        async for doc in self.snapshots.find(query, _LOOK):
            if self._seen.get(doc["_id"]) != _look_of(doc):
                fresh.append(doc["_id"])
        reader = SnapshotReader(self.snapshots, reducing=True)
        for i in range(0, len(fresh), _BATCH):
            query = {"_id": {"$in": fresh[i : i + _BATCH]}}
            docs = [doc async for doc in reader.read([query])]
            await self.changes.apply_documents(docs, announce=True)  # one batch
            for doc in docs:
                self.changes.observed(doc.get("updatedAt"))
                self.position.raise_high_water(doc)
                self._seen[doc["_id"]] = _look_of(doc)
        self._forget_seen_before(self.position.high_water)
        await self.changes.end_vanished(announce=True)
        await self.settlement.settle_claimed()

    def _forget_seen_before(self, high_water: datetime | None) -> None:
        if high_water is None:
            return
        floor = high_water - self.overlap
        self._seen = {
            i: look
            for i, look in self._seen.items()
            if isinstance(look[0], datetime) and look[0] >= floor
        }


def _look_of(doc: Document) -> tuple[Any, Any]:
    return doc.get("updatedAt"), status_of(doc)
