"""Keeps the run index in step with Mastra's snapshot collection.

One instance of those on a database follows, elected by a lease in the database
(lease.py); the others stand by, and take over when it runs out. A full reconcile at the
first start and on demand (reconcile.py); then a change stream on the snapshot
collection, resumed from a stored token, where the server offers one
(change_stream.py); else polling on a short interval (polling.py). Every path ends in
`extract_entry` (changes.py), on a snapshot that is small or reduced to the fields it
reads, so what the follower writes is exactly what a rebuild from the snapshots would
write, and a snapshot's size hardly matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.follower.change_stream import ChangeStreamFollower
from suspended_runs.storage.follower.changes import ChangeApplier
from suspended_runs.storage.follower.langgraph_source import LangGraphSource
from suspended_runs.storage.follower.polling import SnapshotPoller
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.reconcile import Progress, Reconciler, ReconcileReport
from suspended_runs.storage.follower.settling import Settlement
from suspended_runs.storage.follower.stopping import cancelled_meanwhile, stopped
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.lease import Lease, instance_name
from suspended_runs.storage.snapshots.states import extract_or_log
from suspended_runs.storage.types import Document

log = logging.getLogger(__name__)

_POLL_OVERLAP = timedelta(minutes=5)
_LEASE = timedelta(seconds=5)
_RELEASE_SECONDS = 2.0
_FIRST_RETRY = 0.5
_MAX_RETRY = 30.0
"""A follower that fails retries after `_FIRST_RETRY`, twice as long after each failure,
up to this between tries."""
_SWEEP_INTERVAL = 1.0
"""Seconds between looks at runs in doubt (outcome unknown, or STALLED)."""
_DEADLINE_HORIZON = timedelta(seconds=5)
"""How far ahead the sweeper looks for deadlines: more than its interval, with room."""


class FollowMode(StrEnum):
    AUTO = "auto"
    CHANGE_STREAM = "change_stream"
    POLL = "poll"


def utcnow() -> datetime:
    return datetime.now(UTC)


class SnapshotFollower:
    def __init__(
        self,
        snapshots: AsyncCollection[Document],
        index: RunIndex,
        state: AsyncCollection[Document],
        *,
        mode: FollowMode = FollowMode.AUTO,
        poll_interval: float = 0.5,
        poll_overlap: timedelta = _POLL_OVERLAP,
        clock: Callable[[], datetime] = utcnow,
        holder: str | None = None,
        lease: timedelta = _LEASE,
        langgraph: LangGraphSource | None = None,
    ) -> None:
        self.snapshots = snapshots
        self.index = index
        self.mode = FollowMode(mode)
        self.clock = clock
        self.following: FollowMode | None = None
        """The mode in use once the initial reconcile is done; None before."""
        self._ready_mode: FollowMode | None = None
        self._leader: Document = {}  # what the follower said last, while this one stands by
        self._healthy, self.langgraph = True, langgraph  # the second source, if any
        self.settlement = Settlement(snapshots, index, clock)
        self.changes = ChangeApplier(snapshots, index, clock)
        position = FollowPosition(state, clock)
        self.reconciler = Reconciler(
            snapshots, index, self.changes, position, overlap=poll_overlap, clock=clock
        )
        self._stream = ChangeStreamFollower(
            snapshots, self.changes, position, self.reconciler, self.settlement
        )
        parts = (snapshots, self.changes, position, self.settlement)
        self._poller = SnapshotPoller(*parts, interval=poll_interval, overlap=poll_overlap)
        self._position, self._retry = position, _FIRST_RETRY
        self.lease = Lease(state, holder or instance_name(), lease, clock)
        self.role = "standby"
        """"follower" while this instance holds the lease and follows, else "standby"."""

    @property
    def ready_mode(self) -> FollowMode | None:
        """The mode this instance was first caught up in (every source caught up); from then
        on it stays ready. None before."""
        if self.role == "follower" and self.langgraph is not None and not self.langgraph.ready:
            return None
        return self._ready_mode

    @property
    def healthy(self) -> bool:
        """False from a failure of a source until it follows again (`/readyz` says 503)."""
        return self._healthy and (self.langgraph is None or self.langgraph.healthy)

    @property
    def progress(self) -> Progress:
        """Of the reconcile under way (`/readyz` shows it while starting)."""
        return self.reconciler.progress

    @property
    def lag(self) -> float | None:
        """Seconds from the last change applied to its application here."""
        return self.changes.lag

    @property
    def catching_up(self) -> bool:
        """Applying what was written while this instance was down (after its catch-up)."""
        if self.role != "follower":
            return bool(self._leader.get("catchingUp"))
        return self._stream.replaying

    @property
    def caught_up(self) -> bool:
        """Whether every change read so far is applied (polling: as of the last poll)."""
        if self.role != "follower":
            return bool(self._leader.get("caughtUp"))
        if self.langgraph is not None and not self.langgraph.caught_up:
            return False
        if self.following is FollowMode.CHANGE_STREAM:
            return self._stream.caught_up
        return self.following is FollowMode.POLL

    @property
    def behind_seconds(self) -> float | None:
        """How far behind the writes the index is: 0 when caught up; else the age of the
        newest change applied; None when not known yet."""
        if self.role != "follower":
            behind = self._leader.get("behindSeconds")
            return float(behind) if isinstance(behind, int | float) else None
        if self.caught_up:
            return 0.0
        behind = [] if self.langgraph is None else [self.langgraph.behind_seconds]
        applied = self.changes.applied_up_to
        if not (self.following is FollowMode.POLL or self._stream.caught_up):
            behind.append(None if applied is None else (self.clock() - applied).total_seconds())
        known = [max(b, 0.0) for b in behind if b is not None]
        return max(known) if known and len(known) == len(behind) else None

    async def ensure_indexes(self) -> None:
        await self.reconciler.ensure_indexes()

    async def reconcile(self) -> ReconcileReport:
        """Rebuild every entry from the snapshots (reconcile.py) and LangGraph's threads."""
        report = await self.reconciler.reconcile()
        if self.langgraph is not None:
            report.written += await self.langgraph.reconcile()
        return report

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
                    if cancelled_meanwhile():
                        raise asyncio.CancelledError from exc
                    self._healthy = False
                    log.warning(
                        "the follower lease could not be checked",
                        extra={"errorType": type(exc).__name__},
                    )
                await asyncio.sleep(self.lease.renew_every)
        finally:
            if self.role == "follower":
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.lease.release(), _RELEASE_SECONDS)

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
            await self.changes.end_run(run_id)
        else:
            await self.changes.apply_documents([doc], announce=True)

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
            await stopped(following)

    async def _stand_by(self) -> None:
        """Another instance follows: show its mode, health and progress as ours."""
        if self.role != "standby":
            log.info("another instance follows the snapshots: standing by")
        self.role = "standby"
        leader = await self.lease.current()
        self._leader = leader or {}
        mode = leader.get("mode") if leader else None
        self.following = FollowMode(mode) if mode in set(FollowMode) else None
        ready = leader is not None and leader.get("sourcesReady", True) is True
        if self.following is not None and self._ready_mode is None and ready:
            self._ready_mode = self.following  # the follower it reads is caught up
        self._healthy = bool(leader.get("healthy", True)) if leader else True
        if leader and isinstance(leader.get("indexed"), int):
            self.reconciler.progress = Progress(leader["indexed"], leader.get("of"))

    def _status(self) -> Document:
        """What the follower tells the instances standing by, with each renewal."""
        mode = self.following.value if self.following and self.role == "follower" else None
        progress = {"indexed": self.progress.indexed, "of": self.progress.of}
        lag = {"caughtUp": self.caught_up, "behindSeconds": self.behind_seconds}
        return {
            "mode": mode,
            "sourcesReady": self.langgraph is None or self.langgraph.ready,
            "healthy": self.healthy,
            "catchingUp": self.catching_up,
            **progress,
            **lag,
        }

    async def _follow_forever(self) -> None:
        """Reconcile, then follow changes until cancelled. Never dies: a failure is logged
        and retried after a capped exponential backoff, unhealthy meanwhile."""
        self.following = None
        sweeper = asyncio.create_task(self._sweep_forever(), name="settle-runs-in-doubt")
        threads = None
        if self.langgraph is not None:
            threads = asyncio.create_task(self._follow_langgraph(), name="follow-langgraph")
        try:
            while True:
                try:
                    await self._follow()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if cancelled_meanwhile():
                        raise asyncio.CancelledError from exc
                    self._healthy = False
                    log.warning(
                        "the snapshot follower failed; retrying",
                        extra={"errorType": type(exc).__name__, "retryInSeconds": self._retry},
                    )
                    await asyncio.sleep(self._retry)
                    self._retry = min(self._retry * 2, _MAX_RETRY)
        finally:
            sweeper.cancel()
            if threads is not None:
                await stopped(threads)

    async def _follow_langgraph(self) -> None:
        """Follow LangGraph's checkpoints until cancelled; a failure is logged and retried
        after a capped exponential backoff, unhealthy meanwhile (as the snapshots')."""
        assert self.langgraph is not None
        retry = _FIRST_RETRY
        while True:
            try:
                await self.langgraph.follow(poll=self.mode is FollowMode.POLL)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if cancelled_meanwhile():
                    raise asyncio.CancelledError from exc
                self.langgraph.healthy = False
                log.warning(
                    "following LangGraph threads failed; retrying",
                    extra={"errorType": type(exc).__name__, "retryInSeconds": retry},
                )
                await asyncio.sleep(retry)
                retry = min(retry * 2, _MAX_RETRY)
            else:
                retry = _FIRST_RETRY

    async def _follow(self) -> None:
        mode = self.mode
        if mode is FollowMode.AUTO:
            streams = await self._stream.works()
            mode = FollowMode.CHANGE_STREAM if streams else FollowMode.POLL
        if mode is FollowMode.CHANGE_STREAM:
            await self._stream.follow(lambda: self._following(FollowMode.CHANGE_STREAM))
        else:
            await self.reconciler.ensure_updated_at_index()
            if self.following is None:
                await self.reconciler.catch_up_or_reconcile()
                # At once: a restart a moment later starts from here, not from scratch.
                await self._position.save(None)
            self._following(FollowMode.POLL)
            await self._poller.follow(lambda: self._following(FollowMode.POLL))

    def _following(self, mode: FollowMode) -> None:
        """The follower is (again) following: healthy, with its backoff reset."""
        if self.following is None or not self._healthy:
            log.info("following snapshots", extra={"mode": mode.value})
        self.following, self._healthy, self._retry = mode, True, _FIRST_RETRY
        self._ready_mode = self._ready_mode or mode

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(_SWEEP_INTERVAL)
            if not self.index.read_indexed:
                continue  # a first start: nothing is in doubt yet, and each look would scan
            try:
                await self.settlement.settle_claimed()
                if self.langgraph is not None:
                    await self.langgraph.settlement.settle_claimed()
                # Leases that ran out and expired entries deleted change lists too.
                await self.index.pass_deadlines(self.clock(), _DEADLINE_HORIZON)
            except Exception as exc:  # the follower's own retry reports a database outage
                log.debug("settling runs in doubt failed", extra={"errorType": type(exc).__name__})
