"""Keeps the run index in step with Mastra's snapshot collection.

One instance of those on a database follows, elected by a lease in the database
(`FollowerLease`); the others stand by, and take over when it runs out. A full reconcile
at the first start and on demand; then a change stream on the snapshot
collection, resumed from a stored token, where the server offers one; else an
incremental reconcile on a short interval. A restart whose token resumes reads nothing
again; one whose token does not catches up from the stored high-water mark of
`updatedAt`. Every path ends in `extract_entry`, on a snapshot that is small or reduced
to the fields it reads (`extraction_projection`), so what the follower writes is exactly
what a rebuild from the snapshots would write, and a snapshot's size hardly matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from bson import Timestamp
from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError, OperationFailure

from suspended_runs.storage.follower.ranges import RunIdRanges
from suspended_runs.storage.follower.settling import Settlement, extract_or_log
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.extraction import extraction_projection
from suspended_runs.storage.snapshots.reader import SnapshotReader
from suspended_runs.storage.types import RUN_WORKFLOWS, Document, RunStatus

log = logging.getLogger(__name__)

_BATCH = 500
_TOKEN_ID = "snapshot-change-stream"
_POLL_OVERLAP = timedelta(minutes=5)
_LEASE = timedelta(seconds=5)
_RELEASE_SECONDS = 2.0
_STOP_SECONDS = 10.0
_FIRST_RETRY = 0.5
_MAX_RETRY = 30.0
"""A follower that fails retries after 0.5 s, 1 s, 2 s, ... up to 30 s between tries."""
_SWEEP_INTERVAL = 1.0
"""Seconds between looks at runs in doubt (outcome unknown, or STALLED)."""
_DEADLINE_HORIZON = timedelta(seconds=5)
"""How far ahead the sweeper looks for deadlines: more than its interval, with room."""
_INDEX_EXISTS_OTHERWISE = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict
_TOKEN_SAVE_INTERVAL = 10.0
"""Seconds between saves of an idle stream's token, so it stays within the oplog."""
_REPLAY_SECONDS = 30.0
"""Longest a restart waits for a resumed stream's backlog before saying it is ready."""
_FOLLOW_AWAIT_MS = 500
"""How long a followed stream's read waits for a change: two reads a second when idle."""
_IDLE_AWAIT_MS = 100
"""How long a read up to now waits before it counts its stream idle. A restart is ready
after one such wait: at `_FOLLOW_AWAIT_MS` it was 0.5 s of a 2.5 s restart at 100,000
runs (measured on the embedded server). The stream followed after it goes on from where
this one ended, so a write not yet visible to it is read there."""
_PROGRESS_LOG_INTERVAL = 10.0
"""Seconds between progress lines while the index is built."""
_SETTLED = ["running", "success", "failed", "tripwire", "waiting", "pending", "canceled"]
_SETTLED += ["bailed", "paused", "skipped"]
"""Mastra's workflow states (WorkflowRunStatus of @mastra/core 1.71) other than suspended."""


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


@dataclass(slots=True)
class Progress:
    """How far a reconcile is: snapshot documents looked at, of about how many (None: not
    known yet)."""

    indexed: int = 0
    of: int | None = None
    """An estimate, from the share of the run ids read so far (`RunIdRanges`), never below
    `indexed`; exact once the reconcile has read them all."""


def utcnow() -> datetime:
    return datetime.now(UTC)


_LEASE_ID = "snapshot-follower"


class FollowerLease:
    """Which instance follows the snapshots: a document in `suspended_runs_sync` naming its
    holder and when the hold runs out. The holder renews it every third of its length; any
    instance takes it once it ran out (a holder that died, or lost the database), so one
    follows within a lease of the last one stopping. Instances' clocks are assumed to
    agree within a fraction of the lease."""

    def __init__(
        self,
        state: AsyncCollection[Document],
        holder: str,
        length: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.state = state
        self.holder = holder
        self.length = length
        self.clock = clock

    @property
    def renew_every(self) -> float:
        return self.length.total_seconds() / 3

    async def take(self, status: Document) -> bool:
        """Hold the lease (newly, or again), unless another instance holds it."""
        now = self.clock()
        # A top-level $or is scanned by the embedded server: this collection holds a few.
        held_by_none = {"$or": [{"holder": self.holder}, {"expiresAt": {"$lte": now}}]}
        try:
            await self.state.update_one(
                {"_id": _LEASE_ID, **held_by_none}, self._holding(now, status), upsert=True
            )
        except DuplicateKeyError:  # the lease exists, held by another: the upsert's insert
            return False
        return True

    async def renew(self, status: Document) -> bool:
        """Hold on; False when another instance took the lease meanwhile."""
        now = self.clock()
        result = await self.state.update_one(
            {"_id": _LEASE_ID, "holder": self.holder}, self._holding(now, status)
        )
        return result.matched_count == 1

    async def current(self) -> Document | None:
        """The lease as its holder last said (mode, health, progress), while it holds."""
        doc = await self.state.find_one({"_id": _LEASE_ID})
        expires = doc.get("expiresAt") if doc else None
        return doc if isinstance(expires, datetime) and expires > self.clock() else None

    async def release(self) -> None:
        """Let go (a clean stop), so another instance takes over at once."""
        await self.state.update_one(
            {"_id": _LEASE_ID, "holder": self.holder}, {"$set": {"expiresAt": self.clock()}}
        )

    def _holding(self, now: datetime, status: Document) -> Document:
        held = {"holder": self.holder, "expiresAt": now + self.length, "renewedAt": now}
        return {"$set": held | status}


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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
        holder: str | None = None,
        lease: timedelta = _LEASE,
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
        self.progress = Progress()
        """Of the reconcile under way (`/readyz` shows it while starting)."""
        self._token_saved_at = self._progress_logged_at = 0.0
        self.lease = FollowerLease(state, holder or instance_name(), lease, clock)
        self.role = "standby"
        """"follower" while this instance holds the lease and follows, else "standby"."""
        self.lag: float | None = None
        """Seconds from the last change applied (committed, or `updatedAt` when polling)
        to its application here."""

    async def ensure_indexes(self) -> None:
        # Indexes are the only writes to Mastra's documents: reconciles and lookups of one
        # run read by (workflow_name, run_id); Mastra makes its own at init (unique).
        await self._ensure_snapshot_index([("workflow_name", 1), ("run_id", 1)])

    async def _ensure_updated_at_index(self) -> None:
        """The index that reads by `updatedAt` (polls, a catch-up) need, made when first
        needed: a change stream needs none, and building one holds the embedded server for
        as long as decoding every snapshot takes (about 30 s at 100,000 runs, before a
        first start could end). Mastra's own (`updatedAt: -1`, made where retention is
        set) serves too."""
        indexes = await self.snapshots.index_information()
        if not any(spec["key"][0][0] == "updatedAt" for spec in indexes.values()):
            log.info("building the snapshots' updatedAt index")
            await self._ensure_snapshot_index([("updatedAt", 1)])

    async def _ensure_snapshot_index(self, keys: list[tuple[str, int]]) -> None:
        try:
            await self.snapshots.create_index(keys)
        except OperationFailure as exc:
            if exc.code not in _INDEX_EXISTS_OTHERWISE:
                raise

    async def reconcile(self) -> ReconcileReport:
        """Rebuild every entry from the snapshots: new, changed and vanished suspended runs.

        With entries in the index, two passes: a light one over `(run_id, updatedAt)` of
        every candidate, then the documents of the runs the index does not hold as they are
        (a restart with nothing changed reads none of them). With none (a first start), one
        pass that reads and inserts them all. Either streams in batches: what it holds is
        the index's `runId -> state` map, never every snapshot.
        """
        report = ReconcileReport()
        self.progress = Progress()
        known = await self.index.discovered_versions()
        seen: set[str] = set()
        reader = SnapshotReader(self.snapshots)
        if known:
            async for stale in self._stale_batches(known, seen, report):
                docs = reader.read([{"_id": {"$in": stale}}])
                await self._index_documents(docs, known, seen, report, counted=False)
        else:
            docs = self._candidates(reader.read)
            await self._index_documents(docs, known, seen, report, counted=True)
        gone = [
            run_id
            for run_id, (status, _) in known.items()
            if status == RunStatus.SUSPENDED.value and run_id not in seen
        ]
        report.ended = await self.index.end_runs(gone, self.clock())
        await self.index.ensure_read_indexes()
        log.info("reconciled run index", extra=asdict(report))
        return report

    async def _candidates(
        self, read: Callable[[list[Document]], AsyncIterator[Document]]
    ) -> AsyncIterator[Document]:
        """The documents that may be suspended runs (`_candidate`) of what `read` gives for
        every run workflow, range of `run_id` after range (`RunIdRanges`); `/readyz`'s
        `of` estimated from the share read."""
        ranges = RunIdRanges()
        while not ranges.done:
            within = ranges.query()
            matched = kept = 0
            for name in RUN_WORKFLOWS:
                async for doc in read([{"workflow_name": name, **within}]):
                    matched += 1
                    if _candidate(doc):
                        kept += 1
                        yield doc
            ranges.saw(matched, kept)
            self.progress.of = ranges.estimate()  # kept, scaled up: at least `indexed`

    async def _stale_batches(
        self,
        known: dict[str, tuple[str, Any]],
        seen: set[str],
        report: ReconcileReport,
    ) -> AsyncIterator[list[Any]]:
        """The light pass: ids of the candidates the index does not hold as they are, a
        batch at a time; runs it does hold go into `seen`."""
        stale: list[Any] = []
        async for doc in self._candidates(self._look):
            self._looked_at(report)
            self._raise_high_water(doc)
            run_id = doc.get("run_id")
            if isinstance(run_id, str) and known.get(run_id) == (
                RunStatus.SUSPENDED.value,
                doc.get("updatedAt"),
            ):
                seen.add(run_id)
            else:
                stale.append(doc["_id"])
            if len(stale) >= _BATCH:
                yield stale
                stale = []
        if stale:
            yield stale

    async def _index_documents(
        self,
        docs: AsyncIterator[Document],
        known: dict[str, tuple[str, Any]],
        seen: set[str],
        report: ReconcileReport,
        *,
        counted: bool,
    ) -> None:
        """Write the suspended runs of `docs`, a batch at a time: inserted where the index
        holds no entry, else put over it as the follower does. A batch is written while
        the next is read and extracted (one write at a time), so the database and this
        process work at once."""
        writing: asyncio.Task[int] | None = None
        try:
            async for batch in self._batches(docs, seen, report, counted=counted):
                report.written += await writing if writing else 0
                writing = asyncio.create_task(self._write_batch(batch, known))
            report.written += await writing if writing else 0
            writing = None
        finally:
            if writing is not None:
                await _stopped(writing)

    async def _batches(
        self,
        docs: AsyncIterator[Document],
        seen: set[str],
        report: ReconcileReport,
        *,
        counted: bool,
    ) -> AsyncIterator[list[RunEntry]]:
        """The entries of `docs`' suspended runs, `_BATCH` at a time (the last may be
        empty). `counted`: each document is one looked at (in the light pass, it was
        counted there)."""
        batch: list[RunEntry] = []
        async for doc in docs:
            if counted:
                self._looked_at(report)
            self._raise_high_water(doc)
            entry = extract_or_log(doc)
            if entry is None:
                report.skipped += 1
                continue
            seen.add(entry.run_id)
            batch.append(entry)
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        yield batch

    async def _write_batch(self, batch: list[RunEntry], known: dict[str, tuple[str, Any]]) -> int:
        new = [e for e in batch if e.run_id not in known]
        held = [e for e in batch if e.run_id in known]
        return await self.index.put_new(new) + await self.index.put_suspended(held)

    def _looked_at(self, report: ReconcileReport) -> None:
        report.scanned += 1
        self.progress.indexed = report.scanned
        if self.progress.of is not None and self.progress.of < report.scanned:
            self.progress.of = report.scanned  # more than estimated: at least these
        now = asyncio.get_running_loop().time()
        if now - self._progress_logged_at >= _PROGRESS_LOG_INTERVAL:
            self._progress_logged_at = now
            log.info(
                "indexing snapshots",
                extra={"indexed": self.progress.indexed, "of": self.progress.of},
            )

    async def _read_snapshots(self, queries: list[Document]) -> AsyncIterator[Document]:
        """The few documents `queries` select (a catch-up, a poll), one query after the
        other, each small one whole and a large one reduced to what extraction reads."""
        async for doc in SnapshotReader(self.snapshots, reducing=True).read(queries):
            yield doc

    async def _look(self, queries: list[Document]) -> AsyncIterator[Document]:
        """`_id`, `run_id`, `updatedAt` and state of the documents `queries` select."""
        looked = {"_id": 1, "run_id": 1, "updatedAt": 1, "snapshot.status": 1}
        for query in queries:
            async for doc in self.snapshots.find(query, looked, batch_size=1000):
                yield doc

    async def catch_up(self, since: datetime) -> ReconcileReport:
        """After a change stream that could not resume (or a restart in poll mode): apply
        the snapshots changed since `since` (the high-water mark of `updatedAt` applied, less
        the writers' clock skew) and end the runs whose snapshot is gone. O(changes), plus
        the ids of the suspended entries."""
        await self._ensure_updated_at_index()
        report = ReconcileReport()
        self.progress = Progress()
        # `updatedAt` first: the embedded server serves the first clause an index can.
        query: Document = {"updatedAt": {"$gte": since - self.poll_overlap}}
        query["workflow_name"] = {"$in": list(RUN_WORKFLOWS)}  # settled too: they end runs
        async for doc in self._read_snapshots([query]):
            self._looked_at(report)
            report.written += await self.apply_document(doc)
            self._raise_high_water(doc)
        report.ended = await self._end_vanished()
        log.info("caught up with the snapshots", extra=asdict(report))
        return report

    async def _catch_up(self) -> None:
        """From the stored high-water mark where there is one (and an index), else in full."""
        since = await self._stored_high_water()
        if since is None or self.index.created:
            await self.reconcile()
        else:
            await self.catch_up(since)

    async def run(self) -> None:
        """Follow the snapshots while this instance holds the follower lease; stand by while
        another does (ready when it is), and take over when its lease runs out. Never dies;
        lets the lease go when cancelled."""
        try:
            while True:
                try:
                    if await self.lease.take(self._status()):
                        await self._lead()
                    else:
                        await self._stand_by()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.healthy = False
                    log.warning(
                        "the follower lease could not be checked",
                        extra={"errorType": type(exc).__name__},
                    )
                await asyncio.sleep(self.lease.renew_every)
        finally:
            if self.role == "follower":
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.lease.release(), _RELEASE_SECONDS)

    async def _lead(self) -> None:
        """Follow while the lease holds, renewing it every third of its length."""
        if self.role != "follower":
            log.info("this instance follows the snapshots", extra={"holder": self.lease.holder})
        self.role = "follower"
        following = asyncio.create_task(self._follow_forever(), name="follow-snapshots")
        try:
            while not following.done():
                await asyncio.wait([following], timeout=self.lease.renew_every)
                if not await self.lease.renew(self._status()):
                    log.warning("another instance took the follower lease: standing by")
                    self.role = "standby"
                    return
        finally:
            await _stopped(following)

    async def _stand_by(self) -> None:
        """Another instance follows: show its mode, health and progress as ours."""
        if self.role != "standby":
            log.info("another instance follows the snapshots: standing by")
        self.role = "standby"
        leader = await self.lease.current()
        mode = leader.get("mode") if leader else None
        self.following = SyncMode(mode) if mode in set(SyncMode) else None
        self.healthy = bool(leader.get("healthy", True)) if leader else True
        if leader and isinstance(leader.get("indexed"), int):
            self.progress = Progress(leader["indexed"], leader.get("of"))

    def _status(self) -> Document:
        """What the follower tells the instances standing by, with each renewal."""
        mode = self.following.value if self.following and self.role == "follower" else None
        progress = {"indexed": self.progress.indexed, "of": self.progress.of}
        return {"mode": mode, "healthy": self.healthy} | progress

    async def _follow_forever(self) -> None:
        """Reconcile, then follow changes until cancelled. Never dies: a failure is logged
        and retried after a capped exponential backoff, unhealthy meanwhile."""
        self.following = None
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
            await self._ensure_updated_at_index()
            if self.following is None:
                await self._catch_up()
                # At once: a restart a moment later starts from here, not from scratch.
                await self._save_token(None)
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
            if not self.index.read_indexed:
                continue  # a first start: nothing is in doubt yet, and each look would scan
            try:
                await self.settlement.settle_claimed()
                # Leases that ran out and expired entries deleted change lists too.
                await self.index.pass_deadlines(self.clock(), _DEADLINE_HORIZON)
            except Exception as exc:  # the follower's own retry reports a database outage
                log.debug("settling runs in doubt failed", extra={"errorType": type(exc).__name__})

    async def apply_document(self, doc: Document) -> int:
        """Bring one run's entry in line with its current snapshot document (whole, or as
        `extraction_projection` gives it); how many entries that wrote."""
        if doc.get("workflow_name") not in RUN_WORKFLOWS:
            return 0
        entry = extract_or_log(doc)
        if entry is not None:
            return await self._put_changed([entry])
        if isinstance(doc.get("run_id"), str):
            return await self.index.end_runs([doc["run_id"]], self.clock())
        return 0

    async def current_entry(self, run_id: str) -> RunEntry | None:
        """A Mastra run as its snapshot says now: its suspended entry, or None if it is not."""
        doc = await self.settlement.mastra_snapshot(run_id)
        return extract_or_log(doc) if doc else None

    async def moved_on(self, claimed: RunEntry) -> RunEntry | None:
        """Where a claimed Mastra run came to rest, by its snapshot (see `Settlement`): what
        a runtime asks, so it never reaches into the follower's parts."""
        return await self.settlement.moved_on(claimed)

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
        async with contextlib.AsyncExitStack() as streams:
            stream, resumed = await self._open_stream()
            streams.push_async_callback(stream.close)
            # A stream that resumed replays every change since its token: nothing to read
            # again; ready once what was written while down is applied.
            if not resumed or self.index.created:
                await self._catch_up()  # the stream opened first: nothing written is missed
            stream = await self._from_now_on(stream, streams)
            await self._save_token(stream.resume_token)
            self._following(SyncMode.CHANGE_STREAM)
            await self._follow_changes(stream, until_idle=False)

    async def _from_now_on(
        self, stream: AsyncChangeStream[Document], streams: contextlib.AsyncExitStack
    ) -> AsyncChangeStream[Document]:
        """Read `stream` (resumed, or opened before a catch-up) up to now; then the stream
        to follow: one resumed where `stream` ends, waiting `_FOLLOW_AWAIT_MS` for a change
        where `stream` waits `_IDLE_AWAIT_MS` (a restart is ready after one short wait; an
        idle follower reads twice a second). The token it keeps is past the catch-up's own
        writes: a restart that resumed from one before them would read every one again in
        the oplog (the embedded server decodes each: 2.3 to 3.5 s after the 100,000 writes
        of a first start). A stream busy for longer than `_REPLAY_SECONDS` is handed on
        the same way."""
        # The embedded server's token after an index build (a first start's last writes)
        # names the database, not the collection, and does not resume. There the stream
        # opened before the read goes on: exact on a single node, which shows a write as
        # it commits (a replica set's tokens resume, and never reach it).
        opened = await self._watch(await_ms=_FOLLOW_AWAIT_MS)
        streams.push_async_callback(opened.close)
        idle = await self._follow_changes(stream, until_idle=True)
        if not stream.alive:
            return stream  # it ended: the follower reopens from the token kept
        try:
            after = await self._watch(resume_after=stream.resume_token, await_ms=_FOLLOW_AWAIT_MS)
        except OperationFailure as exc:
            log.debug("a read stream's token does not resume", extra={"reason": str(exc)})
            return opened if idle else stream
        streams.push_async_callback(after.close)
        await stream.close()
        await opened.close()
        return after

    async def _follow_changes(
        self, stream: AsyncChangeStream[Document], *, until_idle: bool
    ) -> bool:
        """Apply the stream's changes, saving its token; `until_idle`: only those waiting
        (for at most `_REPLAY_SECONDS`: a busy stream is followed as it goes). Whether it
        read them all (the stream was idle)."""
        deadline = asyncio.get_running_loop().time() + _REPLAY_SECONDS
        while stream.alive:
            change = await stream.try_next()
            if change is not None:
                await self._apply_change(change)
            if change is not None or self._token_due():
                await self._save_token(stream.resume_token)
            if until_idle and (change is None or asyncio.get_running_loop().time() > deadline):
                return change is None
        return False

    async def _open_stream(self) -> tuple[AsyncChangeStream[Document], bool]:
        """A stream on the snapshots, and whether it resumed from the stored token."""
        token = await self._load_token()
        if token is not None:
            try:
                return await self._watch(resume_after=token, await_ms=_IDLE_AWAIT_MS), True
            except OperationFailure as exc:
                log.warning("stored resume token no longer valid", extra={"reason": str(exc)})
        return await self._watch(await_ms=_IDLE_AWAIT_MS), False

    async def _watch(
        self, *, await_ms: int, resume_after: Any = None
    ) -> AsyncChangeStream[Document]:
        """A stream on the snapshots from now (or after `resume_after`) whose reads wait
        `await_ms` for a change; each change's document comes with only what extraction
        reads."""
        return await self.snapshots.watch(
            _CHANGE_PIPELINE,
            full_document="updateLookup",
            resume_after=resume_after,
            max_await_time_ms=await_ms,
        )

    def _token_due(self) -> bool:
        return asyncio.get_running_loop().time() - self._token_saved_at >= _TOKEN_SAVE_INTERVAL

    async def _apply_change(self, change: Document) -> None:
        self._lagged(change.get("wallTime") or change.get("clusterTime"))
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

    async def _stored_high_water(self) -> datetime | None:
        """The newest `updatedAt` applied, as saved with the token (or by polling)."""
        doc = await self.state.find_one({"_id": _TOKEN_ID})
        stored = doc.get("highWater") if doc else None
        return stored if isinstance(stored, datetime) else None

    async def _save_token(self, token: Any) -> None:
        """Save where the stream is, with the high-water mark of `updatedAt` applied."""
        state: Document = {"savedAt": self.clock()}
        if token is not None:
            state["resumeToken"] = token
        if self._high_water is not None:
            state["highWater"] = self._high_water
        await self.state.update_one({"_id": _TOKEN_ID}, {"$set": state}, upsert=True)
        self._token_saved_at = asyncio.get_running_loop().time()

    # -- polling -----------------------------------------------------------------------

    async def _follow_by_polling(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.poll_once()
            self._following(SyncMode.POLL)
            if self._token_due():
                await self._save_token(None)  # the high-water mark, for a restart

    async def poll_once(self) -> None:
        """Apply snapshots changed since the last look, and end runs whose snapshot is gone.

        `updatedAt` is written by each writer's own clock, so a writer whose clock is behind
        writes times below what was seen already: every poll looks back `poll_overlap` below
        the high-water mark, reading only `(_id, updatedAt)` there, and fetches the documents
        it has not yet seen as they are (de-duplicated by `_id` and `updatedAt`).
        """
        query: Document = {}
        if self._high_water is not None:
            # `updatedAt` first: the embedded server serves the first clause an index can.
            query["updatedAt"] = {"$gte": self._high_water - self.poll_overlap}
        query["workflow_name"] = {"$in": list(RUN_WORKFLOWS)}
        fresh = []
        async for doc in self.snapshots.find(query, _LOOK):
            if self._seen.get(doc["_id"]) != _look_of(doc):
                fresh.append(doc["_id"])
        for i in range(0, len(fresh), _BATCH):
            async for doc in self._read_snapshots([{"_id": {"$in": fresh[i : i + _BATCH]}}]):
                await self.apply_document(doc)
                self._lagged(doc.get("updatedAt"))
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

    async def _end_vanished(self) -> int:
        """End the suspended runs whose snapshot is gone; how many."""
        by_snapshot = await self.index.suspended_by_snapshot()
        ids = list(by_snapshot)
        present: set[Any] = set()
        for i in range(0, len(ids), _BATCH * 2):
            batch = {"_id": {"$in": ids[i : i + _BATCH * 2]}}
            present |= {doc["_id"] async for doc in self.snapshots.find(batch, {"_id": 1})}
        gone = [run_id for snapshot_id, run_id in by_snapshot.items() if snapshot_id not in present]
        return await self.index.end_runs(gone, self.clock())

    # -- shared --------------------------------------------------------------------------

    async def _put_changed(self, entries: Iterable[RunEntry]) -> int:
        wanted = list(entries)
        known = await self.index.resting_states([e.run_id for e in wanted])
        changed = [
            e for e in wanted if known.get(e.run_id) != (RunStatus.SUSPENDED.value, e.suspended_at)
        ]
        return await self.index.put_suspended(changed)

    def _lagged(self, committed: Any) -> None:
        if isinstance(committed, Timestamp):
            committed = committed.as_datetime()
        if isinstance(committed, datetime):
            moment = committed if committed.tzinfo else committed.replace(tzinfo=UTC)
            self.lag = max((self.clock() - moment).total_seconds(), 0.0)

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


def _candidate(doc: Document) -> bool:
    """A document that may be a suspended run: its snapshot is not in a settled state (or
    is not an object: a JSON string by older writers, or malformed; it is parsed, or
    logged)."""
    snapshot = doc.get("snapshot")
    return not isinstance(snapshot, dict) or snapshot.get("status") not in _SETTLED


async def _stopped(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait for it to end, cancelling again while it does not (a driver
    call may finish what it was doing first), for `_STOP_SECONDS` at most."""
    for _ in range(int(_STOP_SECONDS)):
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=1.0)
        if done:
            return
    log.warning("the snapshot follower did not stop within %s s", _STOP_SECONDS)


_CHANGE_PIPELINE: list[Document] = [
    {
        "$set": {
            "fullDocument": {
                "$cond": [
                    {"$eq": [{"$type": "$fullDocument"}, "object"]},
                    extraction_projection("fullDocument."),
                    "$fullDocument",
                ]
            }
        }
    }
]
"""A change's document reduced to what extraction reads (null stays null: deleted since)."""
