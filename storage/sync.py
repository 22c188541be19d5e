"""Keeps the run index in step with Mastra's snapshot collection.

A full reconcile at start-up and on demand; then a change stream on the snapshot
collection, resumed from a stored token, where the server offers one; else an
incremental reconcile on a short interval. Every path ends in `extract_entry`, so
what the follower writes is exactly what a rebuild from the snapshots would write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from suspended_runs.storage.entries import RunEntry
from suspended_runs.storage.run_index import RunIndex
from suspended_runs.storage.settlement import Settlement, extract_or_log
from suspended_runs.storage.types import RUN_WORKFLOWS, Document, RunStatus

log = logging.getLogger(__name__)

_BATCH = 500
_TOKEN_ID = "snapshot-change-stream"
_POLL_OVERLAP = timedelta(minutes=5)
_FIRST_RETRY = 0.5
_MAX_RETRY = 30.0
"""A follower that fails retries after 0.5 s, 1 s, 2 s, ... up to 30 s between tries."""
_SWEEP_INTERVAL = 1.0
"""Seconds between looks at runs in doubt (outcome unknown, or STALLED)."""
_DEADLINE_HORIZON = timedelta(seconds=5)
"""How far ahead the sweeper looks for deadlines: more than its interval, with room."""
_INDEX_EXISTS_OTHERWISE = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict


class SyncMode(StrEnum):
    AUTO = "auto"
    CHANGE_STREAM = "change_stream"
    POLL = "poll"


@dataclass(slots=True)
class ReconcileReport:
    scanned: int = 0
    written: int = 0
    ended: int = 0
    skipped: int = 0


def utcnow() -> datetime:
    return datetime.now(UTC)


class SnapshotSync:
    def __init__(
        self,
        snapshots: AsyncCollection[Document],
        index: RunIndex,
        state: AsyncCollection[Document],
        *,
        mode: SyncMode = SyncMode.AUTO,
        poll_interval: float = 0.5,
        poll_overlap: timedelta = _POLL_OVERLAP,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.snapshots = snapshots
        self.index = index
        self.state = state
        self.mode = SyncMode(mode)
        self.poll_interval = poll_interval
        self.poll_overlap = poll_overlap
        """How far below the newest `updatedAt` seen each poll looks: the clock skew between
        snapshot writers that polling tolerates."""
        self.clock = clock
        self.following: SyncMode | None = None
        """The mode in use once the initial reconcile is done; None before."""
        self.healthy = True
        """False from a failure of the follower until it follows again (`/readyz` says 503)."""
        self.settlement = Settlement(snapshots, index, clock)
        self._high_water: datetime | None = None
        self._seen: dict[Any, tuple[Any, Any]] = {}
        """`_id` -> `_look_of` the documents applied within the poll overlap."""
        self._retry = _FIRST_RETRY

    async def ensure_indexes(self) -> None:
        # Indexes are the only writes to Mastra's documents: polling reads by updatedAt,
        # lookups of one run by (workflow_name, run_id) (Mastra's own may exist already).
        for keys in ([("updatedAt", 1)], [("workflow_name", 1), ("run_id", 1)]):
            try:
                await self.snapshots.create_index(keys)
            except OperationFailure as exc:
                if exc.code not in _INDEX_EXISTS_OTHERWISE:
                    raise

    async def reconcile(self) -> ReconcileReport:
        """Rebuild every entry from the snapshots: new, changed and vanished suspended runs.

        Two passes: a light one over `(run_id, updatedAt)` of every suspended snapshot, then
        whole documents only for runs the index does not hold as they are (snapshots are
        15 kB and more; a restart with nothing changed reads none of them).
        """
        report = ReconcileReport()
        known = await self.index.discovered_versions()
        seen: set[str] = set()
        stale = await self._stale_snapshots(known, seen, report)
        for i in range(0, len(stale), _BATCH):
            entries = []
            async for doc in self.snapshots.find({"_id": {"$in": stale[i : i + _BATCH]}}):
                entry = extract_or_log(doc)
                if entry is None:
                    report.skipped += 1
                else:
                    seen.add(entry.run_id)
                    entries.append(entry)
            report.written += await self.index.put_suspended(entries)
        gone = [
            run_id
            for run_id, (status, _) in known.items()
            if status == RunStatus.SUSPENDED.value and run_id not in seen
        ]
        report.ended = await self.index.end_runs(gone, self.clock())
        log.info("reconciled run index", extra=asdict(report))
        return report

    async def _stale_snapshots(
        self, known: dict[str, tuple[str, Any]], seen: set[str], report: ReconcileReport
    ) -> list[Any]:
        """The light pass: ids of the suspended snapshots the index does not hold as they
        are; runs it does hold go into `seen`."""
        stale: list[Any] = []
        query = {
            "workflow_name": {"$in": list(RUN_WORKFLOWS)},
            # Older writers store the snapshot as a JSON string: those are read and parsed.
            "$or": [{"snapshot.status": "suspended"}, {"snapshot": {"$type": "string"}}],
        }
        async for doc in self.snapshots.find(query, {"_id": 1, "run_id": 1, "updatedAt": 1}):
            report.scanned += 1
            self._raise_high_water(doc)
            run_id = doc.get("run_id")
            if isinstance(run_id, str) and known.get(run_id) == (
                RunStatus.SUSPENDED.value,
                doc.get("updatedAt"),
            ):
                seen.add(run_id)
            else:
                stale.append(doc["_id"])
        return stale

    async def run(self) -> None:
        """Reconcile, then follow changes until cancelled. Never dies: a failure is logged
        and retried after a capped exponential backoff, unhealthy meanwhile."""
        sweeper = asyncio.create_task(self._sweep_forever(), name="settle-runs-in-doubt")
        try:
            while True:
                try:
                    await self._follow()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.healthy = False
                    log.warning(
                        "the snapshot follower failed; retrying",
                        extra={"errorType": type(exc).__name__, "retryInSeconds": self._retry},
                    )
                    await asyncio.sleep(self._retry)
                    self._retry = min(self._retry * 2, _MAX_RETRY)
        finally:
            sweeper.cancel()

    async def _follow(self) -> None:
        mode = self.mode
        if mode is SyncMode.AUTO:
            mode = SyncMode.CHANGE_STREAM if await self._change_streams_work() else SyncMode.POLL
        if mode is SyncMode.CHANGE_STREAM:
            await self._follow_change_stream()
        else:
            await self.reconcile()
            self._following(SyncMode.POLL)
            await self._follow_by_polling()

    def _following(self, mode: SyncMode) -> None:
        """The follower is (again) following: healthy, with its backoff reset."""
        if self.following is None or not self.healthy:
            log.info("following snapshots", extra={"mode": mode.value})
        self.following, self.healthy, self._retry = mode, True, _FIRST_RETRY

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(_SWEEP_INTERVAL)
            try:
                await self.settlement.settle_claimed()
                # Leases that ran out and entries the TTL index deletes change lists too.
                await self.index.pass_deadlines(self.clock(), _DEADLINE_HORIZON)
            except Exception as exc:  # the follower's own retry reports a database outage
                log.debug("settling runs in doubt failed", extra={"errorType": type(exc).__name__})

    async def apply_document(self, doc: Document) -> None:
        """Bring one run's entry in line with its current snapshot document."""
        if doc.get("workflow_name") not in RUN_WORKFLOWS:
            return
        entry = extract_or_log(doc)
        if entry is not None:
            await self._put_changed([entry])
        elif isinstance(doc.get("run_id"), str):
            await self.index.end_runs([doc["run_id"]], self.clock())

    async def current_entry(self, run_id: str) -> RunEntry | None:
        """A Mastra run as its snapshot says now: its suspended entry, or None if it is not."""
        doc = await self.settlement.mastra_snapshot(run_id)
        return extract_or_log(doc) if doc else None

    async def refresh(self, run_id: str) -> None:
        """Bring a run's entry in line with its snapshot (after a Mastra call that failed)."""
        doc = await self.settlement.mastra_snapshot(run_id)
        if doc is None:
            await self.index.end_runs([run_id], self.clock())
        else:
            await self.apply_document(doc)

    # -- change stream ---------------------------------------------------------------

    async def _change_streams_work(self) -> bool:
        try:
            async with await self.snapshots.watch(max_await_time_ms=1):
                return True
        except OperationFailure as exc:
            log.warning(
                "the database offers no change streams; following snapshots by polling",
                extra={"reason": str(exc)},
            )
            return False

    async def _follow_change_stream(self) -> None:
        stream, resumed = await self._open_stream()
        async with stream:
            if not resumed or self.following is None:
                # Opened first, so nothing written during the reconcile is missed; needed
                # at start-up and whenever the stream could not resume.
                await self.reconcile()
            self._following(SyncMode.CHANGE_STREAM)
            async for change in _changes(stream):
                await self._apply_change(change)
                await self._save_token(stream.resume_token)

    async def _open_stream(self) -> tuple[AsyncChangeStream[Document], bool]:
        """A stream on the snapshots, and whether it resumed from the stored token."""
        token = await self._load_token()
        if token is not None:
            try:
                stream = await self.snapshots.watch(
                    full_document="updateLookup", resume_after=token, max_await_time_ms=500
                )
                return stream, True
            except OperationFailure as exc:
                log.warning("stored resume token no longer valid", extra={"reason": str(exc)})
        stream = await self.snapshots.watch(full_document="updateLookup", max_await_time_ms=500)
        return stream, False

    async def _apply_change(self, change: Document) -> None:
        operation = change.get("operationType")
        if operation == "delete":
            snapshot_id = (change.get("documentKey") or {}).get("_id")
            await self.index.end_by_snapshot(snapshot_id, self.clock())
        elif operation in ("insert", "update", "replace"):
            doc = change.get("fullDocument")
            if doc is not None:  # None: deleted since; its delete event follows
                await self.apply_document(doc)
        await self.settlement.settle_claimed()  # a run in doubt may have just moved on

    async def _load_token(self) -> Any:
        doc = await self.state.find_one({"_id": _TOKEN_ID})
        return doc.get("resumeToken") if doc else None

    async def _save_token(self, token: Any) -> None:
        if token is not None:
            await self.state.update_one(
                {"_id": _TOKEN_ID},
                {"$set": {"resumeToken": token, "savedAt": self.clock()}},
                upsert=True,
            )

    # -- polling -----------------------------------------------------------------------

    async def _follow_by_polling(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.poll_once()
            self._following(SyncMode.POLL)

    async def poll_once(self) -> None:
        """Apply snapshots changed since the last look, and end runs whose snapshot is gone.

        `updatedAt` is written by each writer's own clock, so a writer whose clock is behind
        writes times below what was seen already: every poll looks back `poll_overlap` below
        the high-water mark, reading only `(_id, updatedAt)` there, and fetches the documents
        it has not yet seen as they are (de-duplicated by `_id` and `updatedAt`).
        """
        query: Document = {"workflow_name": {"$in": list(RUN_WORKFLOWS)}}
        if self._high_water is not None:
            query["updatedAt"] = {"$gte": self._high_water - self.poll_overlap}
        fresh = []
        async for doc in self.snapshots.find(query, _LOOK):
            if self._seen.get(doc["_id"]) != _look_of(doc):
                fresh.append(doc["_id"])
        for i in range(0, len(fresh), _BATCH):
            async for doc in self.snapshots.find({"_id": {"$in": fresh[i : i + _BATCH]}}):
                await self.apply_document(doc)
                self._raise_high_water(doc)
                self._seen[doc["_id"]] = _look_of(doc)
        self._forget_seen_before(self._high_water)
        await self._end_vanished()
        await self.settlement.settle_claimed()

    def _forget_seen_before(self, high_water: datetime | None) -> None:
        if high_water is None:
            return
        floor = high_water - self.poll_overlap
        self._seen = {
            i: look
            for i, look in self._seen.items()
            if isinstance(look[0], datetime) and look[0] >= floor
        }

    async def _end_vanished(self) -> None:
        by_snapshot = await self.index.suspended_by_snapshot()
        if not by_snapshot:
            return
        present = {
            doc["_id"]
            async for doc in self.snapshots.find({"_id": {"$in": list(by_snapshot)}}, {"_id": 1})
        }
        gone = [run_id for snapshot_id, run_id in by_snapshot.items() if snapshot_id not in present]
        await self.index.end_runs(gone, self.clock())

    # -- shared --------------------------------------------------------------------------

    async def _put_changed(self, entries: Iterable[RunEntry]) -> None:
        wanted = list(entries)
        known = await self.index.resting_states([e.run_id for e in wanted])
        changed = [
            e for e in wanted if known.get(e.run_id) != (RunStatus.SUSPENDED.value, e.suspended_at)
        ]
        await self.index.put_suspended(changed)

    def _raise_high_water(self, doc: Document) -> None:
        updated = doc.get("updatedAt")
        if isinstance(updated, datetime) and (
            self._high_water is None or updated > self._high_water
        ):
            self._high_water = updated


_LOOK = {"_id": 1, "updatedAt": 1, "snapshot.status": 1}
"""What a poll reads of each recent document to tell whether it changed since applied."""


def _look_of(doc: Document) -> tuple[Any, Any]:
    snapshot = doc.get("snapshot")
    return doc.get("updatedAt"), snapshot.get("status") if isinstance(snapshot, dict) else None


async def _changes(stream: AsyncChangeStream[Document]) -> AsyncIterator[Document]:
    while stream.alive:
        change = await stream.try_next()
        if change is not None:
            yield change
