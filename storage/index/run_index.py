"""The run index: a compact document per run, the read model every list query uses.

Snapshots are large and keep the agent id under a step key that varies, so no index
can serve a list query on them; this collection can (docs/design.md, "The run index").
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from bson import ObjectId
from pymongo import ASCENDING, UpdateMany, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError, PyMongoError, ServerSelectionTimeoutError
from pymongo.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

from suspended_runs.storage.index.counts import STAMP, IndexVersion, RunCounts
from suspended_runs.storage.index.entry import Claim, RunEntry
from suspended_runs.storage.index.filters import (
    RUN_INDEXES,
    SORT,
    Cursor,
    RunFilter,
    Span,
    WindowWalk,
    remember,
    shape_key,
)
from suspended_runs.storage.index.tallies import SuspendedTallies
from suspended_runs.storage.types import FINISHED, SYNC_STATE_COLLECTION, Document, RunStatus

log = logging.getLogger(__name__)

_LIST_PROJECTION = {"_id": 0, "snapshotId": 0}  # pages are only read, never written back
_SYNC_OWNED = [RunStatus.SUSPENDED.value, RunStatus.ENDED.value]
_KEPT = ("version", "endedAt", "decidedAt", "decidedBy")  # the follower never decides
_DUPLICATE_KEY = 11000


_STATE_ID = "run-index"
"""The document in `suspended_runs_sync` that changes with every write to the index."""
_AGENTS_ID = "run-index-agents"
"""The document in `suspended_runs_sync` that lists every (agent, runtime) ever indexed."""
_MARK_AFTER_FAILURE_SECONDS = 2.0
_EXPIRY_INTERVAL = timedelta(seconds=60)
"""Longest a finished entry stays past its retention (as MongoDB's TTL monitor)."""
_CLOCK_SKEW = timedelta(minutes=5)
"""How far a run's end (this server's clock) may fall before its start (Mastra's)."""
_OLD_TTL_INDEX = "expiresAt_1"
_DELETE_BATCH = 1000


def _new_epoch() -> Document:
    """What the version document is made with (an operator may have deleted it): counts
    kept against an earlier one, whose `changes` it restarts, start afresh."""
    return {"epoch": ObjectId()}


class RunIndex:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        retention: timedelta,
        state: AsyncCollection[Document] | None = None,
        *,
        tallied: bool = True,
    ) -> None:
        self.state = collection.database[SYNC_STATE_COLLECTION] if state is None else state
        self.collection: AsyncCollection[Document] = _Tracked(collection, self._changed)
        self._untracked = collection
        self.retention = retention
        self._densities: dict[tuple[Any, ...], float] = {}
        self._counts = RunCounts(self.collection, self._densities)
        self.tallies = (
            SuspendedTallies(self.collection, self.version, lambda: self.read_indexed)
            if tallied
            else None
        )
        """Counts of suspended runs kept for every shape at once; without them (a test of
        the counts beneath), each filter's count is kept by itself."""
        self._reached: OrderedDict[str, tuple[datetime, datetime]] = OrderedDict()
        """The newest and oldest `createdAt` the last first page of each shape found: the
        next one's first window spans them (open above, so nothing newer is missed), not
        the time since the newest run of every shape, nor a width from a density averaged
        across a gap in time."""
        self._looked_at: datetime | None = None
        self._swept_at: datetime | None = None
        self.created = False
        """The collection was made by `ensure_indexes` (it holds nothing yet, and a resume
        token kept from before describes another index: a full reconcile rebuilds it)."""
        self.read_indexed = True
        """False while a new index waits for its read indexes: a read but by `runId` would
        scan every entry written so far."""
        self._read: tuple[float, IndexVersion] | None = None
        """When the version was last read (monotonic seconds), and what it was."""
        self._writes = 0
        self._agents_noted: set[tuple[str, str]] = set()
        self._recount_owed = False

    async def ensure_indexes(self) -> None:
        names = await self.collection.database.list_collection_names(
            filter={"name": self.collection.name}
        )
        self.created = not names
        await self.collection.create_index([("runId", ASCENDING)], unique=True)
        if not self.created:
            await self.ensure_read_indexes()
        else:
            self.read_indexed = False
        await self._bound_existing()
        await self._agents_of_existing()

    async def ensure_read_indexes(self) -> None:
        """The indexes of every read but those by `runId`. A new index has them made after
        its first reconcile has filled it: the embedded server pays each index of a
        collection on every insert, and once over all entries for an index made after
        (100,000 entries: 47 s against 64 s). Made again, each costs a lookup."""
        await self.collection.create_index([("snapshotId", ASCENDING)])
        # Counts: what was written since (an insert leaves it out, and costs no entry here).
        await self.collection.create_index([("changedAt", ASCENDING)], sparse=True)
        for keys in RUN_INDEXES:
            await self.collection.create_index(keys)
        if _OLD_TTL_INDEX in await self.collection.index_information():
            # Expired entries are deleted by `pass_deadlines` now (made by an older version).
            await self.collection.drop_index(_OLD_TTL_INDEX)
        self.read_indexed = True

    # -- lists: O(page) on the embedded server (docs/design.md, "Lists on the embedded server")

    async def page(
        self,
        run_filter: RunFilter,
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
        decoding (page 6 of 20 read 120 whole entries to show 20)."""
        now = now or datetime.now(UTC)
        version = await self.version()
        if skip:
            passed = await self._merged(run_filter, _KEYS, skip, after, version, now)
            if len(passed) < skip:
                return []
            after = passed[-1]
        return await self._merged(run_filter, _ENTRIES, limit, after, version, now)

    async def _merged(
        self,
        run_filter: RunFilter,
        read: _Reading[_Keyed],
        need: int,
        after: Cursor | None,
        at: IndexVersion,
        now: datetime,
    ) -> list[_Keyed]:
        """The first `need` runs of every shape of `run_filter` after `after`, merged."""
        span = run_filter.span()
        pages = [
            await self._page_of(shape, span, read, need=need, after=after, at=at, now=now)
            for shape in run_filter.shapes(now)
        ]
        merged = heapq.merge(*pages, key=lambda e: (-e.created_at.timestamp(), e.run_id))
        return list(itertools.islice(merged, need))

    async def _page_of(
        self,
        shape: Document,
        span: Span,
        read: _Reading[_Keyed],
        *,
        need: int,
        after: Cursor | None,
        at: IndexVersion,
        now: datetime,
    ) -> list[_Keyed]:
        """`need` runs of one shape within `span`, after the cursor: first the ties at the
        cursor's moment (`runId` after it), then windows below it. The same page as
        `createdAt < c or (createdAt == c and runId > r)` without a top-level $or, which the
        embedded server scans for."""
        found: list[_Keyed] = []
        if after is not None:
            if span.holds(after.created_at):
                ties = {**shape, "createdAt": after.created_at, "runId": {"$gt": after.run_id}}
                found += await self._find(ties, need, read)
            span = span.below(after.created_at)
        newest, reach = self._reached.get(repr(shape)) or (None, None)
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
            query = {**shape, "createdAt": window} if window else shape
            more = await self._find(query, walk.wanted, read)
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
            remember(self._reached, repr(shape), (entries[0].created_at, entries[-1].created_at))

    async def _find(self, query: Document, limit: int, read: _Reading[_Keyed]) -> list[_Keyed]:
        cursor = self.collection.find(query, read.projection, sort=SORT, limit=limit)
        return [found async for doc in cursor if (found := read.convert(doc)) is not None]

    async def count(
        self,
        run_filter: RunFilter,
        now: datetime | None = None,
        *,
        version: IndexVersion | None = None,
    ) -> int:
        """How many runs `run_filter` selects, exact as of `version` (read now if None):
        suspended runs from the tallies of every shape (storage/index/tallies.py) once they are
        read, else kept per filter, and brought up to date from what changed
        (storage/index/counts.py)."""
        now = now or datetime.now(UTC)
        version = version or await self.version()
        span = run_filter.span()
        total = 0
        for shape in run_filter.shapes(now):
            tallied = await self.tallies.count(shape, span, version) if self.tallies else None
            if tallied is None:
                tallied = await self._counts.count(shape, span, version, now)
            total += tallied
        return total

    # -- the index's version: what caches and ETags are checked against -----------------

    async def version(self, *, within: float = 0.0) -> IndexVersion:
        """The index's version as the database holds it (every process sees the same); or,
        with `within`, as read at most that many seconds ago and not written here since."""
        started, writes = time.monotonic(), self._writes
        if within and self._read is not None and started - self._read[0] <= within:
            return self._read[1]
        doc = await self.state.find_one({"_id": _STATE_ID})
        version = IndexVersion()
        if doc is not None:
            version = IndexVersion(
                token=doc.get("token"),
                changes=int(doc.get("changes", 0)),
                oldest=doc.get("oldest"),
                newest=doc.get("newest"),
                at=doc.get("at"),
                epoch=doc.get("epoch"),
            )
        if writes == self._writes:  # else a write here may have come after the read
            self._read = (started, version)
        return version

    async def _changed(self, *, recount: bool = False) -> None:
        """A write changed the index: a new version, after the write (a reader that sees
        the new version sees the write); `recount`: entries were written without a stamp
        (or deleted), so counts start afresh. A recount that could not be marked (the
        database failed) is owed, and marked with the next change."""
        self._writes += 1
        self._read = None
        self._recount_owed = recount = recount or self._recount_owed
        new = {"token": ObjectId(), **({"epoch": ObjectId()} if recount else {})}
        update = {"$set": new, "$inc": {"changes": 1}, "$currentDate": {"at": True}}
        if not recount:
            update["$setOnInsert"] = _new_epoch()
        await self.state.update_one({"_id": _STATE_ID}, update, upsert=True)
        self._recount_owed = False
        self._writes += 1
        self._read = None

    async def pass_deadlines(self, now: datetime, horizon: timedelta) -> bool:
        """A new version where time alone changed what a list shows: a claim's lease ran
        out since the last look (RUNNING now shows as STALLED), or finished entries were
        deleted at the end of the retention period (here, at most `_EXPIRY_INTERVAL`
        after). One process (the follower) calls this at least every `horizon`; whether
        it made a new version."""
        since = now - horizon if self._looked_at is None else self._looked_at
        lapsed = await self.collection.find_one(
            {"status": RunStatus.RUNNING.value, "claim.expiresAt": {"$gt": since, "$lte": now}},
            {"_id": 1},
        )
        expired = 0
        if self._swept_at is None or now - self._swept_at >= _EXPIRY_INTERVAL:
            self._swept_at = now
            try:
                expired = await self._delete_expired(now)
            except PyMongoError:
                await self._changed()  # some may have gone before it failed
                raise
        changed = lapsed is not None or expired > 0 or self._looked_at is None
        self._looked_at = now
        if changed:
            await self._changed()
        return changed

    async def _delete_expired(self, now: datetime) -> int:
        """Delete the finished entries whose retention ended (`expiresAt`), rather than a
        TTL index: the embedded server's TTL monitor decodes every entry of the collection
        each minute while every request waits (about a second at 100,000 entries), and an
        index of its own would cost every write and a first start. Each finished state is
        asked by its `(status, createdAt)` index for the entries created a retention
        period ago (a run ends after it starts, give or take the writers' clock skew), and
        those due are deleted by `_id`: the embedded server serves an equality and one
        range from an index, and reads every match of the equality for a third condition.
        Untracked: deleting finished entries leaves the counts of suspended runs as they
        are (those of finished states are counted afresh at every version)."""
        created_before = now - self.retention + _CLOCK_SKEW
        deleted = 0
        for status in FINISHED:
            old = {"status": status.value, "createdAt": {"$lt": created_before}}
            found = self._untracked.find(old, {"_id": 1, "expiresAt": 1})
            due = [doc["_id"] async for doc in found if _expired(doc.get("expiresAt"), now)]
            for i in range(0, len(due), _DELETE_BATCH):
                # expiresAt again: a run settled again meanwhile keeps its entry.
                ids = {"_id": {"$in": due[i : i + _DELETE_BATCH]}}
                result = await self._untracked.delete_many(ids | {"expiresAt": {"$lte": now}})
                deleted += result.deleted_count
        return deleted

    async def _note_created(self, moments: list[datetime]) -> None:
        """Widen the `createdAt` bounds to `moments`: they only make list windows short."""
        if moments:
            await self.state.update_one(
                {"_id": _STATE_ID},
                {
                    "$min": {"oldest": min(moments)},
                    "$max": {"newest": max(moments)},
                    "$setOnInsert": _new_epoch(),
                },
                upsert=True,
            )

    async def _bound_existing(self) -> None:
        """Bounds for entries written before the index kept them (once: O(entries))."""
        if (await self.version()).oldest is not None:
            return
        pipeline: list[Document] = [
            {
                "$group": {
                    "_id": None,
                    "oldest": {"$min": "$createdAt"},
                    "newest": {"$max": "$createdAt"},
                }
            }
        ]
        async for row in await self.collection.aggregate(pipeline):
            if isinstance(row.get("oldest"), datetime) and isinstance(row.get("newest"), datetime):
                await self._note_created([row["oldest"], row["newest"]])

    async def _note_agents(self, entries: Iterable[RunEntry]) -> None:
        """Remember the (agent, runtime) of `entries`, so `agents` reads no entry; written
        before the entries (an agent listed a moment early shows 0 runs, never missing)."""
        pairs = {(e.agent_id, e.runtime.value) for e in entries} - self._agents_noted
        if pairs:
            each = [{"agentId": agent, "runtime": runtime} for agent, runtime in sorted(pairs)]
            await self.state.update_one(
                {"_id": _AGENTS_ID}, {"$addToSet": {"seen": {"$each": each}}}, upsert=True
            )
            self._agents_noted |= pairs

    async def _agents_of_existing(self) -> None:
        """The agents of entries written before the index kept them (once: O(entries))."""
        if await self.state.find_one({"_id": _AGENTS_ID}, {"_id": 1}) is not None:
            return
        group: Document = {"$group": {"_id": {"agentId": "$agentId", "runtime": "$runtime"}}}
        rows = [row["_id"] async for row in await self.collection.aggregate([group])]
        seen = [r for r in rows if isinstance(r.get("agentId"), str) and "runtime" in r]
        await self.state.update_one(
            {"_id": _AGENTS_ID}, {"$addToSet": {"seen": {"$each": seen}}}, upsert=True
        )

    async def agents(self) -> list[tuple[str, str]]:
        """(agentId, runtime) of every agent ever indexed, sorted."""
        doc = await self.state.find_one({"_id": _AGENTS_ID}) or {}
        pairs = {
            (seen["agentId"], seen["runtime"])
            for seen in doc.get("seen", [])
            if isinstance(seen, dict)
            and isinstance(seen.get("agentId"), str)
            and isinstance(seen.get("runtime"), str)
        }
        return sorted(pairs)

    async def get(self, run_id: str) -> RunEntry | None:
        """The whole entry (its snapshotId too): what `get` reads may be written back."""
        doc = await self.collection.find_one({"runId": run_id}, {"_id": 0})
        return _read_entry(doc) if doc else None

    async def discovered_versions(self) -> dict[str, tuple[str, Any]]:
        """runId -> (status, suspendedAt) of every entry: what a reconcile compares."""
        cursor = self.collection.find({}, {"_id": 0, "runId": 1, "status": 1, "suspendedAt": 1})
        return {d["runId"]: (d["status"], d.get("suspendedAt")) async for d in cursor}

    async def put_suspended(self, entries: Iterable[RunEntry]) -> int:
        """Write discovered suspended runs over what the index held for them.

        Only over an entry that is older (an earlier `suspendedAt`; ENDED ones included): a
        follower that read the snapshot before a decision was recorded must not write it back.
        An entry in another state (claimed here, RUNNING) belongs to its claim holder.
        Where the filter misses, the upsert's insert hits the unique runId and is left.
        """
        entries = list(entries)
        await self._note_created([e.created_at for e in entries])
        await self._note_agents(entries)
        ops = [
            UpdateOne(
                # No top-level $or: the embedded server then scans instead of using runId.
                {
                    "runId": e.run_id,
                    "status": {"$in": _SYNC_OWNED},
                    "suspendedAt": {"$lt": e.suspended_at},
                },
                {
                    "$set": {k: v for k, v in e.to_document().items() if k not in _KEPT},
                    "$inc": {"version": 1},
                    "$unset": {"endedAt": "", "expiresAt": ""},
                    **STAMP,
                },
                upsert=True,
            )
            for e in entries
        ]
        if not ops:
            return 0
        try:
            result = await self.collection.bulk_write(ops, ordered=False)
        except BulkWriteError as exc:
            _lost_to_taken_ids(exc)
            return int(exc.details.get("nModified", 0)) + int(exc.details.get("nUpserted", 0))
        return result.modified_count + result.upserted_count

    async def put_new(self, entries: list[RunEntry]) -> int:
        """Insert discovered suspended runs the index held no entry for (a first start):
        an insert costs a third of `put_suspended`'s conditional upsert on the embedded
        server. One written meanwhile (its runId taken) is put as `put_suspended` puts it."""
        if not entries:
            return 0
        await self._note_created([e.created_at for e in entries])
        await self._note_agents(entries)
        docs = [
            {**{k: v for k, v in e.to_document().items() if k not in _KEPT}, "version": 1}
            for e in entries
        ]
        try:
            result = await self.collection.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            taken = [entries[error["index"]] for error in _lost_to_taken_ids(exc)]
            return int(exc.details.get("nInserted", 0)) + await self.put_suspended(taken)
        return len(result.inserted_ids)

    async def end_runs(self, run_ids: Iterable[str], now: datetime) -> int:
        """Mark suspended runs that left the suspended state elsewhere as ENDED."""
        ids = list(run_ids)
        if not ids:
            return 0
        result = await self.collection.bulk_write(
            [
                UpdateMany(
                    {"runId": {"$in": ids[i : i + 1000]}, "status": RunStatus.SUSPENDED.value},
                    self._end_update(now),
                )
                for i in range(0, len(ids), 1000)
            ],
            ordered=False,
        )
        return result.modified_count

    async def end_by_snapshot(self, snapshot_id: Any, now: datetime) -> int:
        result = await self.collection.update_many(
            {"snapshotId": snapshot_id, "status": RunStatus.SUSPENDED.value},
            self._end_update(now),
        )
        return result.modified_count

    # -- claims: exactly one continuation per decision (docs/design.md, "Claims") ------------

    async def put_started(self, entry: RunEntry) -> None:
        """The entry of a run this server just started.

        An upsert: the follower may have indexed the run's snapshot a moment before.
        """
        await self._note_created([entry.created_at])
        await self._note_agents([entry])
        # The whole entry, as a replacement would put it (to_document names every field but
        # expiresAt), stamped.
        update = {"$set": entry.to_document(), "$unset": {"expiresAt": ""}, **STAMP}
        await self.collection.update_one({"runId": entry.run_id}, update, upsert=True)

    async def apply_decision(self, seen: RunEntry, decided: RunEntry, claim: Claim | None) -> bool:
        """Record decisions on the entry as it was seen; with a claim, also take the run.

        One conditional update: of any number of concurrent callers that saw the same
        version, exactly one wins; the others find the version moved on and look again.
        """
        update: Document = {
            "$set": {
                "toolCalls": [call.to_document() for call in decided.tool_calls],
                "decidedAt": decided.decided_at,
                "decidedBy": decided.decided_by,
            },
            "$inc": {"version": 1},
            **STAMP,
        }
        if claim is not None:
            update["$set"] |= {"status": RunStatus.RUNNING.value, "claim": claim.to_document()}
        result = await self.collection.update_one(
            {"runId": seen.run_id, "status": RunStatus.SUSPENDED.value, "version": seen.version},
            update,
        )
        return result.modified_count == 1

    async def settle(self, after: RunEntry, claimed_by: str) -> bool:
        """Write where a continued run came to rest; only the holder of its claim may."""
        return await self._rest(
            {"runId": after.run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            after,
        )

    async def settle_seen(self, seen: RunEntry, after: RunEntry) -> bool:
        """Write where a run came to rest over the entry exactly as it was `seen` (its
        version): a run whose outcome was unknown, settled from its snapshot; a run an
        operator released or cancelled."""
        return await self._rest({"runId": seen.run_id, "version": seen.version}, after)

    async def take_over(self, seen: RunEntry, claim: Claim) -> bool:
        """Claim a run as it was `seen` (SUSPENDED, or STALLED: its holder died), so that
        an operator's action on it runs once."""
        result = await self.collection.update_one(
            {"runId": seen.run_id, "version": seen.version},
            {
                "$set": {"status": RunStatus.RUNNING.value, "claim": claim.to_document()},
                "$inc": {"version": 1},
                **STAMP,
            },
        )
        return result.modified_count == 1

    async def mark_outcome_unknown(self, run_id: str, claimed_by: str) -> bool:
        """Keep the claim of a run whose decision may have been applied, and say so."""
        result = await self.collection.update_one(
            {"runId": run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            {"$set": {"claim.outcomeUnknown": True}, "$inc": {"version": 1}, **STAMP},
        )
        return result.modified_count == 1

    async def suspended_before(
        self,
        cutoff: datetime,
        *,
        agent_ids: list[str] | None = None,
        exclude_agent_ids: list[str] | None = None,
        limit: int = 100,
    ) -> list[RunEntry]:
        """SUSPENDED runs that have waited since before `cutoff` (for expiry), oldest first."""
        query: Document = {"status": RunStatus.SUSPENDED.value, "suspendedAt": {"$lte": cutoff}}
        if agent_ids is not None:
            query["agentId"] = {"$in": agent_ids}
        elif exclude_agent_ids:
            query["agentId"] = {"$nin": exclude_agent_ids}
        cursor = self.collection.find(query, {"_id": 0}, sort=[("suspendedAt", 1)], limit=limit)
        return [entry async for doc in cursor if (entry := _read_entry(doc)) is not None]

    async def claimed(self) -> list[RunEntry]:
        """Every RUNNING entry (few: the runs being continued, stalled or in doubt)."""
        cursor = self.collection.find({"status": RunStatus.RUNNING.value}, {"_id": 0})
        return [entry async for doc in cursor if (entry := _read_entry(doc)) is not None]

    async def _rest(self, condition: Document, after: RunEntry) -> bool:
        doc = {k: v for k, v in after.to_document().items() if k not in ("version", "runId")}
        update: Document = {"$set": doc, "$inc": {"version": 1}, **STAMP}
        if after.status in FINISHED and after.ended_at:
            doc["expiresAt"] = after.ended_at + self.retention
        else:
            update["$unset"] = {"expiresAt": ""}
        result = await self.collection.update_one(condition, update)
        return result.modified_count == 1

    async def renew_claim(self, run_id: str, claimed_by: str, expires_at: datetime) -> bool:
        result = await self.collection.update_one(
            {"runId": run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            {"$set": {"claim.expiresAt": expires_at}},
        )
        return result.modified_count == 1

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

    async def suspended_by_agent(self, within: RunFilter) -> dict[tuple[str, str], int]:
        """(agentId, runtime) -> suspended runs, of every agent indexed that `within`'s
        agent scope allows; with a resource scope, only agents with a run (in any state)
        in those resources. Counted as `count` counts: kept, and brought up to date."""
        counts: dict[tuple[str, str], int] = {}
        version = await self.version()  # one read for every agent's count
        for agent_id, runtime in await self.agents():
            if within.agent_ids is not None and agent_id not in within.agent_ids:
                continue
            mine = replace(within, agent_id=agent_id, statuses=frozenset({RunStatus.SUSPENDED}))
            suspended = await self.count(mine, version=version)
            if suspended or within.resource_ids is None or await self._any(mine):
                counts[(agent_id, runtime)] = suspended
        return counts

    async def _any(self, run_filter: RunFilter) -> bool:
        """Whether any run in any state matches `run_filter`'s scope and agent."""
        every = replace(run_filter, statuses=frozenset(RunStatus))
        for shape in every.shapes(datetime.now(UTC)):
            if await self.collection.find_one(shape, {"_id": 1}) is not None:
                return True
        return False

    def _end_update(self, now: datetime) -> Document:
        return {
            "$set": {
                "status": RunStatus.ENDED.value,
                "endedAt": now,
                "expiresAt": now + self.retention,
            },
            "$inc": {"version": 1},
            **STAMP,
        }


_Result = TypeVar("_Result")


def _expired(expires_at: Any, now: datetime) -> bool:
    return isinstance(expires_at, datetime) and expires_at <= now


def _lost_to_taken_ids(exc: BulkWriteError) -> list[Document]:
    """The errors of a bulk write whose every error is an insert (or an upsert's insert)
    that met the unique runId, the entry being someone else's; `exc` raised again if any
    other error came."""
    errors: list[Document] = exc.details.get("writeErrors", [])
    if any(error.get("code") != _DUPLICATE_KEY for error in errors):
        raise exc
    return errors


def _only_lost_inserts(exc: BulkWriteError) -> bool:
    """A bulk write that changed nothing: each of its errors is an upsert's insert that met
    the unique runId (the entry is someone else's), and nothing else was written."""
    details = exc.details
    written = sum(details.get(k, 0) for k in ("nInserted", "nUpserted", "nModified", "nRemoved"))
    errors = details.get("writeErrors", [])
    return written == 0 and bool(errors) and all(e.get("code") == _DUPLICATE_KEY for e in errors)


class _Tracked(AsyncCollection[Document]):
    """The index's collection, whose every write that changed something (or may have: it
    failed mid-way) is followed by `changed`: no write can forget to give a new version.
    A write that may have left entries unstamped (an insert: a stamp costs an update; a
    deletion; a failure) asks counts to start afresh."""

    def __init__(
        self, collection: AsyncCollection[Document], changed: Callable[..., Awaitable[None]]
    ) -> None:
        super().__init__(
            collection.database,
            collection.name,
            codec_options=collection.codec_options,
            read_preference=collection.read_preference,
            write_concern=collection.write_concern,
            read_concern=collection.read_concern,
        )
        self._changed = changed

    async def _tracked(
        self,
        write: Awaitable[_Result],
        changed: Callable[[_Result], bool],
        *,
        recount: bool = False,
    ) -> _Result:
        try:
            result = await write
        except ServerSelectionTimeoutError:
            raise  # no server took it: nothing was written
        except BulkWriteError as exc:
            if not _only_lost_inserts(exc):
                await self._mark_after_failure()
            raise
        except PyMongoError:
            await self._mark_after_failure()  # it may have been applied
            raise
        if changed(result):
            await self._changed(recount=recount)
        return result

    async def _mark_after_failure(self) -> None:
        try:
            await asyncio.wait_for(self._changed(recount=True), _MARK_AFTER_FAILURE_SECONDS)
        except (PyMongoError, TimeoutError):
            log.debug("could not mark the run index changed after a failed write")

    async def update_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        return await self._tracked(super().update_one(*args, **kwargs), _updated)

    async def update_many(self, *args: Any, **kwargs: Any) -> UpdateResult:
        return await self._tracked(super().update_many(*args, **kwargs), _updated)

    async def replace_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        return await self._tracked(super().replace_one(*args, **kwargs), _updated)

    async def bulk_write(self, *args: Any, **kwargs: Any) -> BulkWriteResult:
        return await self._tracked(super().bulk_write(*args, **kwargs), _bulk_changed)

    async def insert_one(self, *args: Any, **kwargs: Any) -> InsertOneResult:
        return await self._tracked(super().insert_one(*args, **kwargs), _any, recount=True)

    async def insert_many(self, *args: Any, **kwargs: Any) -> InsertManyResult:
        return await self._tracked(super().insert_many(*args, **kwargs), _any, recount=True)

    async def delete_one(self, *args: Any, **kwargs: Any) -> DeleteResult:
        return await self._tracked(super().delete_one(*args, **kwargs), _deleted, recount=True)

    async def delete_many(self, *args: Any, **kwargs: Any) -> DeleteResult:
        return await self._tracked(super().delete_many(*args, **kwargs), _deleted, recount=True)

    async def find_one_and_update(self, *args: Any, **kwargs: Any) -> Document | None:
        return await self._tracked(super().find_one_and_update(*args, **kwargs), _always)

    async def find_one_and_replace(self, *args: Any, **kwargs: Any) -> Document | None:
        return await self._tracked(super().find_one_and_replace(*args, **kwargs), _always)

    async def find_one_and_delete(self, *args: Any, **kwargs: Any) -> Document | None:
        return await self._tracked(super().find_one_and_delete(*args, **kwargs), _always)


def _updated(result: UpdateResult) -> bool:
    return bool(result.modified_count or result.upserted_id is not None)


def _bulk_changed(result: BulkWriteResult) -> bool:
    return bool(
        result.modified_count + result.upserted_count + result.inserted_count + result.deleted_count
    )


def _any(result: object) -> bool:
    return True


def _deleted(result: DeleteResult) -> bool:
    return bool(result.deleted_count)


def _always(result: object) -> bool:
    return True


def _read_entry(doc: Document) -> RunEntry | None:
    """An entry, or None (logged) for a document that is not one: a bad entry never fails a page."""
    try:
        return RunEntry.from_document(doc)
    except (KeyError, ValueError, TypeError) as exc:
        log.warning(
            "skipped a malformed run-index entry",
            extra={"runId": str(doc.get("runId")), "reason": f"{type(exc).__name__}: {exc}"},
        )
        return None


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


_ENTRIES = _Reading(_LIST_PROJECTION, _read_entry)
_KEYS = _Reading({"_id": 0, "createdAt": 1, "runId": 1}, _read_key)
