"""What the follower writes to the run index: the runs it discovered in snapshots.

The follower only ever puts SUSPENDED runs and ENDs them; every other state belongs to a
claim holder (storage/index/claims.py), and a write here never undoes one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import InsertOne, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError

from suspended_runs.storage.index.counts import STAMP
from suspended_runs.storage.index.entry import RunEntry, read_entry
from suspended_runs.storage.index.writes import IndexWriter, lost_to_taken_ids, written_by
from suspended_runs.storage.types import Document, RunStatus, Runtime

_ELSEWHERE = Runtime.LANGGRAPH.value
"""The runtime whose runs are followed from other collections than the snapshots."""
_FOLLOWER_OWNED = [RunStatus.SUSPENDED.value, RunStatus.ENDED.value]
_KEPT = ("version", "endedAt", "decidedAt", "decidedBy")  # the follower never decides
_BATCH = 1000
_CLOCK_ASKED_EVERY = 10.0


class Discovery(IndexWriter):
    _clock: tuple[float, datetime] | None = None
    """When (monotonic) the database's clock was last asked, and what it said."""

    async def apply(
        self,
        entries: Iterable[RunEntry],
        ended: Iterable[str] = (),
        deleted: Iterable[Any] = (),
        now: datetime | None = None,
        *,
        new: Iterable[RunEntry] = (),
        failed: Iterable[RunEntry] = (),
        reason: str | None = None,
    ) -> int:
        """One batch of what the follower found, as one bulk write (one new version): the
        suspended runs `entries` put over older entries (an earlier `suspendedAt`, ENDED
        too: a follower that read a snapshot before a decision was recorded must not write
        it back; one claimed here is its holder's, and the upsert's insert that misses it
        meets the unique runId and is left), the runs `new` (none a moment ago) inserted,
        stamped with the database's clock (a fifth of an upsert's cost on the embedded
        server; one inserted meanwhile is put instead), and the SUSPENDED runs `ended` (by
        runId) or whose snapshot was `deleted` (by snapshotId) marked ENDED, with `reason`
        as their outcome's error where given. The runs `failed` (a LangGraph thread's task
        that failed at its interrupt) are put FAILED over a SUSPENDED entry, or inserted;
        one in any other state is its holder's, and left."""
        entries, new, failed = list(entries), list(new), list(failed)
        ended, deleted = list(ended), list(deleted)
        if found := [*entries, *new, *failed]:
            await self._version.note_created([e.created_at for e in found])
            await self._agents.note(found)
        stamp = await self._database_now() if new else None
        ops: list[InsertOne[Document] | UpdateOne | UpdateMany] = [
            *(InsertOne(_inserted(e, stamp)) for e in new if stamp is not None),
            *(_put(e) for e in entries),
            *self._ends(ended, deleted, now or datetime.now(UTC), reason),
            *(self._fail(e) for e in failed),
        ]
        return await self._write(ops, new)

    async def _write(
        self, ops: list[InsertOne[Document] | UpdateOne | UpdateMany], new: list[RunEntry]
    ) -> int:
        if not ops:
            return 0
        try:
            result = await self._writes.bulk_write(ops, ordered=False)
        except BulkWriteError as exc:
            # A failed run's upsert that met another state's entry (its runId taken) is left.
            lost = [new[e["index"]] for e in lost_to_taken_ids(exc) if e["index"] < len(new)]
            return written_by(exc) + (await self.apply(lost) if lost else 0)
        return result.inserted_count + result.modified_count + result.upserted_count

    def _ends(
        self, ended: list[str], deleted: list[Any], now: datetime, reason: str | None
    ) -> list[UpdateMany]:
        """The updates that end the SUSPENDED runs `ended` (by runId), and those whose
        snapshot was `deleted` (by snapshotId)."""
        end, suspended = self._retention.end_update(now), RunStatus.SUSPENDED.value
        if reason is not None:
            end["$set"]["outcome"] = {"output": None, "error": reason}
        return [
            UpdateMany({field: {"$in": keys[i : i + _BATCH]}, "status": suspended}, end)
            for field, keys in (("runId", ended), ("snapshotId", deleted))
            for i in range(0, len(keys), _BATCH)
        ]

    def _fail(self, entry: RunEntry) -> UpdateOne:
        assert entry.ended_at is not None
        doc = {k: v for k, v in entry.to_document().items() if k not in _KEPT}
        doc |= {"endedAt": entry.ended_at, "expiresAt": entry.ended_at + self._retention.period}
        return UpdateOne(
            {"runId": entry.run_id, "status": RunStatus.SUSPENDED.value},
            {"$set": doc, "$inc": {"version": 1}, **STAMP},
            upsert=True,
        )

    async def _database_now(self) -> datetime:
        """The database's clock, which every other write stamps `changedAt` with: asked
        every `_CLOCK_ASKED_EVERY` seconds and carried on by this process's monotonic
        clock meanwhile (a step of the wall clock here does not move it; a step of the
        database's is within what counts look back, storage/index/counts.py)."""
        now = time.monotonic()
        if self._clock is None or now - self._clock[0] >= _CLOCK_ASKED_EVERY:
            hello = await self.collection.database.command("hello")
            local = hello.get("localTime")
            if not isinstance(local, datetime):
                return datetime.now(UTC)  # a server that does not say: this clock, within slack
            self._clock = (now, local if local.tzinfo else local.replace(tzinfo=UTC))
        asked_at, database_time = self._clock
        return database_time + timedelta(seconds=now - asked_at)

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

    async def suspended_among(self, run_ids: list[str], snapshot_ids: list[Any]) -> list[RunEntry]:
        """The SUSPENDED runs of `run_ids` and of `snapshot_ids`: those `apply` would end."""
        found: list[RunEntry] = []
        for field, keys in (("runId", run_ids), ("snapshotId", snapshot_ids)):
            for i in range(0, len(keys), _BATCH):
                query = {field: {"$in": keys[i : i + _BATCH]}, "status": RunStatus.SUSPENDED.value}
                cursor = self.collection.find(query, {"_id": 0})
                found += [entry async for doc in cursor if (entry := read_entry(doc)) is not None]
        return found

    async def discovered_versions(self) -> dict[str, tuple[str, Any]]:
        """runId -> (status, suspendedAt) of every entry of the snapshot collection's runs
        (a LangGraph thread's run is not there): what a reconcile compares."""
        fields = {"_id": 0, "runId": 1, "status": 1, "suspendedAt": 1, "runtime": 1}
        cursor = self.collection.find({}, fields)
        return {
            d["runId"]: (d["status"], d.get("suspendedAt"))
            async for d in cursor
            if d.get("runtime") != _ELSEWHERE
        }

    async def suspended_by_snapshot(self) -> dict[Any, str]:
        """snapshotId -> runId of every SUSPENDED run of the snapshot collection (the
        follower checks they still exist)."""
        live = self.collection.find(
            {"status": RunStatus.SUSPENDED.value},
            {"_id": 0, "runId": 1, "snapshotId": 1, "runtime": 1},
        )
        return {
            doc["snapshotId"]: doc["runId"]
            async for doc in live
            if "snapshotId" in doc and doc.get("runtime") != _ELSEWHERE
        }

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


def _inserted(entry: RunEntry, stamp: datetime) -> Document:
    doc = {k: v for k, v in entry.to_document().items() if k not in _KEPT}
    return doc | {"version": 1, "changedAt": stamp}
