"""How long finished entries are kept, and what time alone changes in the index.

A finished entry carries `expiresAt` (its end plus the retention period) and is deleted
once it is due; a claim whose lease ran out shows as STALLED. Neither is a write anyone
makes, so the follower asks here, at least every so often, for a new version.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import PyMongoError

from suspended_runs.storage.index.counts import STAMP
from suspended_runs.storage.index.version import VersionDocument
from suspended_runs.storage.types import FINISHED, Document, RunStatus

_EXPIRY_INTERVAL = timedelta(seconds=60)
"""Longest a finished entry stays past its retention (as MongoDB's TTL monitor)."""
_CLOCK_SKEW = timedelta(minutes=5)
"""How far a run's end (this server's clock) may fall before its start (Mastra's)."""
_DELETE_BATCH = 1000


class Retention:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        version: VersionDocument,
        period: timedelta,
    ) -> None:
        self.collection = collection
        self.period = period
        self._version = version
        self._looked_at: datetime | None = None
        self._swept_at: datetime | None = None

    def end_update(self, now: datetime) -> Document:
        """The update that ends a suspended run now, kept for the retention period."""
        return {
            "$set": {
                "status": RunStatus.ENDED.value,
                "endedAt": now,
                "expiresAt": now + self.period,
            },
            "$inc": {"version": 1},
            **STAMP,
        }

    async def pass_deadlines(self, now: datetime, horizon: timedelta) -> bool:
        """A new version where time alone changed what a list shows: a claim's lease ran
        out since the last look (RUNNING now shows as STALLED), a review ended, or
        finished entries were deleted at the end of the retention period (here, at most
        `_EXPIRY_INTERVAL` after). One process (the follower) calls this at least every
        `horizon`; whether it made a new version."""
        since = now - horizon if self._looked_at is None else self._looked_at
        lapsed = await self.collection.find_one(
            {"status": RunStatus.RUNNING.value, "claim.expiresAt": {"$gt": since, "$lte": now}},
            {"_id": 1},
        )
        # A review that ended by itself (its own sparse index serves this, storage/index/marked.py).
        lapsed = lapsed or await self.collection.find_one(
            {"review.until": {"$gt": since, "$lte": now}}, {"_id": 1}
        )
        expired = 0
        if self._swept_at is None or now - self._swept_at >= _EXPIRY_INTERVAL:
            self._swept_at = now
            try:
                expired = await self._delete_expired(now)
            except PyMongoError:
                await self._version.changed()  # some may have gone before it failed
                raise
        changed = lapsed is not None or expired > 0 or self._looked_at is None
        self._looked_at = now
        if changed:
            await self._version.changed()
        return changed

    async def _delete_expired(self, now: datetime) -> int:
        """Delete the finished entries whose retention ended (`expiresAt`), rather than a
        TTL index: the embedded server's TTL monitor decodes every entry of the collection
        each minute while every request waits, and an index of its own would cost every
        write and a first start. Each finished state is asked by its `(status, createdAt)`
        index for the entries created a retention period ago (a run ends after it starts,
        give or take the writers' clock skew), and those due are deleted by `_id`: the
        embedded server serves an equality and one range from an index, and reads every
        match of the equality for a third condition. Not through the tracked writes:
        deleting finished entries leaves the counts of suspended runs as they are (those
        of finished states are counted afresh at every version)."""
        created_before = now - self.period + _CLOCK_SKEW
        deleted = 0
        for status in FINISHED:
            old = {"status": status.value, "createdAt": {"$lt": created_before}}
            found = self.collection.find(old, {"_id": 1, "expiresAt": 1})
            due = [doc["_id"] async for doc in found if _expired(doc.get("expiresAt"), now)]
            for i in range(0, len(due), _DELETE_BATCH):
                # expiresAt again: a run settled again meanwhile keeps its entry.
                ids = {"_id": {"$in": due[i : i + _DELETE_BATCH]}}
                result = await self.collection.delete_many(ids | {"expiresAt": {"$lte": now}})
                deleted += result.deleted_count
        return deleted


def _expired(expires_at: Any, now: datetime) -> bool:
    return isinstance(expires_at, datetime) and expires_at <= now
