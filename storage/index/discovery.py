"""What the follower writes to the run index: the runs it discovered in snapshots.

The follower only ever puts SUSPENDED runs and ENDs them; every other state belongs to a
claim holder (storage/index/claims.py), and a write here never undoes one.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pymongo import UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError

from suspended_runs.storage.index.counts import STAMP
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.writes import IndexWriter, lost_to_taken_ids
from suspended_runs.storage.types import RunStatus

_FOLLOWER_OWNED = [RunStatus.SUSPENDED.value, RunStatus.ENDED.value]
_KEPT = ("version", "endedAt", "decidedAt", "decidedBy")  # the follower never decides
_BATCH = 1000


class Discovery(IndexWriter):
    async def apply(
        self,
        entries: Iterable[RunEntry],
        ended: Iterable[str] = (),
        deleted: Iterable[Any] = (),
        now: datetime | None = None,
    ) -> int:
        """One batch of what the follower found, as one bulk write (one new version): the
        suspended runs `entries` put over what the index held for them, the runs `ended`
        (by runId) and those whose snapshot was `deleted` (by snapshotId) marked ENDED.

        An entry is put only over one that is older (an earlier `suspendedAt`; ENDED ones
        included): a follower that read the snapshot before a decision was recorded must not
        write it back. An entry in another state (claimed here, RUNNING) belongs to its
        claim holder; where the filter misses, the upsert's insert hits the unique runId and
        is left. Only SUSPENDED entries are ended."""
        entries, ended, deleted = list(entries), list(ended), list(deleted)
        if entries:
            await self._version.note_created([e.created_at for e in entries])
            await self._agents.note(entries)
        ops: list[UpdateOne | UpdateMany] = [_put(e) for e in entries]
        if ended or deleted:
            end = self._retention.end_update(now or datetime.now(UTC))
            suspended = RunStatus.SUSPENDED.value
            for field, keys in (("runId", ended), ("snapshotId", deleted)):
                ops += [
                    UpdateMany({field: {"$in": keys[i : i + _BATCH]}, "status": suspended}, end)
                    for i in range(0, len(keys), _BATCH)
                ]
        if not ops:
            return 0
        try:
            result = await self._writes.bulk_write(ops, ordered=False)
        except BulkWriteError as exc:
            lost_to_taken_ids(exc)
            return int(exc.details.get("nModified", 0)) + int(exc.details.get("nUpserted", 0))
        return result.modified_count + result.upserted_count

    async def put_suspended(self, entries: Iterable[RunEntry]) -> int:
        """Write discovered suspended runs over what the index held for them (`apply`)."""
        return await self.apply(entries)

    async def put_new(self, entries: list[RunEntry]) -> int:
        """Insert discovered suspended runs the index held no entry for (a first start):
        an insert costs a third of `put_suspended`'s conditional upsert on the embedded
        server. One written meanwhile (its runId taken) is put as `put_suspended` puts it."""
        if not entries:
            return 0
        await self._version.note_created([e.created_at for e in entries])
        await self._agents.note(entries)
        docs = [
            {**{k: v for k, v in e.to_document().items() if k not in _KEPT}, "version": 1}
            for e in entries
        ]
        try:
            result = await self._writes.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            taken = [entries[error["index"]] for error in lost_to_taken_ids(exc)]
            return int(exc.details.get("nInserted", 0)) + await self.put_suspended(taken)
        return len(result.inserted_ids)

    async def end_runs(self, run_ids: Iterable[str], now: datetime) -> int:
        """Mark suspended runs that left the suspended state elsewhere as ENDED."""
        return await self.apply([], run_ids, (), now)

    async def end_by_snapshot(self, snapshot_id: Any, now: datetime) -> int:
        """End the suspended run of a snapshot that was deleted."""
        return await self.apply([], (), [snapshot_id], now)

    async def discovered_versions(self) -> dict[str, tuple[str, Any]]:
        """runId -> (status, suspendedAt) of every entry: what a reconcile compares."""
        cursor = self.collection.find({}, {"_id": 0, "runId": 1, "status": 1, "suspendedAt": 1})
        return {d["runId"]: (d["status"], d.get("suspendedAt")) async for d in cursor}

    async def suspended_by_snapshot(self) -> dict[Any, str]:
        """snapshotId -> runId of every SUSPENDED run (the follower checks they still exist)."""
        live = self.collection.find(
            {"status": RunStatus.SUSPENDED.value}, {"_id": 0, "runId": 1, "snapshotId": 1}
        )
        return {doc["snapshotId"]: doc["runId"] async for doc in live if "snapshotId" in doc}

    async def resting_states(self, run_ids: list[str]) -> dict[str, tuple[str, Any]]:
        """runId -> (status, suspendedAt) of the runs that have an entry."""
        current = self.collection.find(
            {"runId": {"$in": run_ids}}, {"_id": 0, "runId": 1, "status": 1, "suspendedAt": 1}
        )
        return {d["runId"]: (d["status"], d.get("suspendedAt")) async for d in current}


def _put(entry: RunEntry) -> UpdateOne:
    return UpdateOne(
        # No top-level $or: the embedded server then scans instead of using runId.
        {
            "runId": entry.run_id,
            "status": {"$in": _FOLLOWER_OWNED},
            "suspendedAt": {"$lt": entry.suspended_at},
        },
        {
            "$set": {k: v for k, v in entry.to_document().items() if k not in _KEPT},
            "$inc": {"version": 1},
            "$unset": {"endedAt": "", "expiresAt": ""},
            **STAMP,
        },
        upsert=True,
    )
