"""Following the snapshots by a change stream, resumed from a stored token.

Where the server offers change streams (a replica set, or the embedded server), every
write by Mastra arrives as it commits; a restart resumes where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from suspended_runs.storage.follower.changes import Change, ChangeApplier
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.reconcile import Reconciler
from suspended_runs.storage.follower.settling import Settlement
from suspended_runs.storage.types import RUN_WORKFLOWS, Document

log = logging.getLogger(__name__)

_BATCH = 1000
"""Most changes applied as one batch (a getMore's batch is applied whole up to this)."""
_GATHER = 0.05
"""Most seconds a batch waits for more changes once changes keep coming."""
_SAVE_EVERY = 0.5
"""Least seconds between two saves of the token while changes come."""
_SETTLE_EVERY = 0.5
"""Least seconds between two looks at runs in doubt after changes (the sweeper looks
every second anyway)."""
_FOLLOW_AWAIT_MS = 200
"""How long a followed stream's read waits for a change: five reads a second when idle.
The embedded server answers a read only when this wait ends, even when a change came
before: it bounds how late a change is seen there (a replica set answers at once)."""
_EVERY_CHANGE: list[Document] = [
    {
        "$set": {
            "fullDocument": {
                "$cond": [
                    {"$in": ["$fullDocument.workflow_name", list(RUN_WORKFLOWS)]},
                    "$fullDocument",
                    None,
                ]
            }
        }
    }
]
"""A stream read up to now (a restart's): every change, with its document only where it
is a run's. Not filtered: the embedded server filters a stretch of the oplog at a time and
answers an empty batch when none of it matched, which would read as the stream's end
while a backlog remains."""
_RUN_CHANGES: list[Document] = [
    {
        "$match": {
            "$or": [
                {"operationType": {"$nin": ["insert", "update", "replace"]}},
                {"fullDocument.workflow_name": {"$in": list(RUN_WORKFLOWS)}},
            ]
        }
    }
]
"""A stream followed once caught up: only runs' documents and deletes. A Mastra run's
`executionWorkflow` sibling, half of what Mastra writes, is not a run (`ChangeApplier`
passes it by), and the embedded server filters it for less than it sends it; an empty
batch here says nothing of the stream's end, and nothing waits for one."""
_IDLE_AWAIT_MS = 100
"""How long a read up to now waits before it counts its stream idle: a restart is ready
after one such wait. The stream followed after it goes on from where this one ended, so a
write not yet visible to it is read there."""


class ChangeStreamFollower:
    def __init__(
        self,
        snapshots: AsyncCollection[Document],
        changes: ChangeApplier,
        position: FollowPosition,
        reconciler: Reconciler,
        settlement: Settlement,
    ) -> None:
        self.snapshots = snapshots
        self.changes = changes
        self.position = position
        self.reconciler = reconciler
        self.settlement = settlement
        self.caught_up = False
        """Whether everything the stream had to give was applied (its last read was idle)."""
        self.replaying = False
        """Between a catch-up (or a resume) and being caught up: what was written while this
        instance was down is being applied from the stream."""
        self._since: datetime | None = None
        self._settled_at = 0.0
        self._busy = False
        """Whether the last read gave changes (a burst goes on): batches then gather."""

    async def works(self) -> bool:
        """Whether the database offers change streams."""
        return await offers_streams(self.snapshots, _EVERY_CHANGE, "snapshots")

    async def follow(self, following: Callable[[], None]) -> None:
        """Catch up where needed, then apply every change as it comes, until cancelled;
        `following` is called once the index is caught up."""
        self._since, self.caught_up = self.reconciler.clock(), False
        async with contextlib.AsyncExitStack() as streams:
            stream, resumed = await self._open_stream()
            streams.push_async_callback(stream.close)
            # A stream that resumed replays every change since its token: nothing to read
            # again; ready once what was written while down is applied.
            if not resumed or self.reconciler.index.created:
                # The stream opened first: nothing written meanwhile is missed.
                await self.reconciler.catch_up_or_reconcile()
            self.replaying = True
            stream = await self._from_now_on(stream, streams)
            await self.position.save(stream.resume_token)
            self.replaying = False
            following()
            await self._follow_changes(stream, until_caught_up=False)

    async def _from_now_on(
        self, stream: AsyncChangeStream[Document], streams: contextlib.AsyncExitStack
    ) -> AsyncChangeStream[Document]:
        """Read `stream` (resumed, or opened before a catch-up) up to now: until it is idle,
        or has given a change written after this follow began (a stream that never idles
        is caught up then); then the stream to follow: one resumed where `stream` ends,
        waiting `_FOLLOW_AWAIT_MS` for a change where `stream` waits `_IDLE_AWAIT_MS` (a
        restart is ready after one short wait; an idle follower reads five times a second). The
        token it keeps is past the catch-up's own writes: a restart that resumed from one
        before them would read every one again in the oplog (the embedded server decodes
        each)."""
        # The embedded server's token after an index build (a first start's last writes)
        # names the database, not the collection, and does not resume. There the stream
        # opened before the read goes on: exact on a single node, which shows a write as
        # it commits (a replica set's tokens resume, and never reach it).
        opened = await self._watch(await_ms=_FOLLOW_AWAIT_MS, followed=True)
        streams.push_async_callback(opened.close)
        idle = await self._follow_changes(stream, until_caught_up=True)
        if not stream.alive:
            return stream  # it ended: the follower reopens from the token kept
        try:
            after = await self._watch(
                resume_after=stream.resume_token, await_ms=_FOLLOW_AWAIT_MS, followed=True
            )
        except OperationFailure as exc:
            log.debug("a read stream's token does not resume", extra={"reason": str(exc)})
            return opened if idle else stream
        streams.push_async_callback(after.close)
        await stream.close()
        await opened.close()
        return after

    async def _follow_changes(
        self, stream: AsyncChangeStream[Document], *, until_caught_up: bool
    ) -> bool:
        """Apply the stream's changes a batch at a time, saving its token after each batch
        (and every so often while idle, from the stream's post-batch token, so the token
        stays within the oplog); `until_caught_up`: only until the stream is idle or has
        given a change written after this follow began. Whether it was idle."""
        unsaved = False
        while stream.alive:
            batch, idle = await self._next_batch(stream)
            if batch:
                await self._apply_changes(batch)
            unsaved = unsaved or bool(batch)
            # While changes come, at most every `_SAVE_EVERY` (a restart reads again what
            # came since, and applies it again to the same entries); once idle, at once.
            if (unsaved and (idle or self.position.due(_SAVE_EVERY))) or self.position.due():
                await self.position.save(stream.resume_token)
                unsaved = False
            self.caught_up = idle
            if until_caught_up and (idle or self._reached_since()):
                return idle
        return False

    async def _next_batch(self, stream: AsyncChangeStream[Document]) -> tuple[list[Document], bool]:
        """The changes of the stream's next batch (at most `_BATCH`), and whether the stream
        was idle (a read found nothing). A change after an idle read is applied with those
        the server sent with it, at once; while changes keep coming, a batch also takes
        what arrives within `_GATHER` seconds of its first change (one more read after that
        wait), so a burst is applied in batches that cover their round trips."""
        batch: list[Document] = []
        started = asyncio.get_running_loop().time()
        while len(batch) < _BATCH:
            change = await stream.try_next()
            if change is None:
                self._busy = False
                return batch, True
            batch.append(change)
            if buffered(stream):
                continue
            waited = asyncio.get_running_loop().time() - started
            if not self._busy or waited >= _GATHER:
                break
            await asyncio.sleep(_GATHER - waited)
        self._busy = True
        return batch, False

    def _reached_since(self) -> bool:
        reached = self.changes.applied_up_to
        return self._since is not None and reached is not None and reached >= self._since

    async def _open_stream(self) -> tuple[AsyncChangeStream[Document], bool]:
        """A stream on the snapshots, and whether it resumed from the stored token."""
        token = await self.position.token()
        if token is not None:
            try:
                return await self._watch(resume_after=token, await_ms=_IDLE_AWAIT_MS), True
            except OperationFailure as exc:
                log.warning("stored resume token no longer valid", extra={"reason": str(exc)})
        return await self._watch(await_ms=_IDLE_AWAIT_MS), False

    async def _watch(
        self, *, await_ms: int, resume_after: Any = None, followed: bool = False
    ) -> AsyncChangeStream[Document]:
        """A stream on the snapshots from now (or after `resume_after`) whose reads wait
        `await_ms` for a change: `followed`, of runs' changes only (`_RUN_CHANGES`), else of
        every change (`_EVERY_CHANGE`). Each run's change comes with its whole document:
        reducing it to what extraction reads (a `$set` stage, as collection reads do) costs
        the embedded server about a quarter of the writes it can take from Mastra meanwhile;
        this process decodes a whole document for less (docs/benchmarks.md, "The follower")."""
        return await self.snapshots.watch(
            _RUN_CHANGES if followed else _EVERY_CHANGE,
            full_document="updateLookup",
            resume_after=resume_after,
            max_await_time_ms=await_ms,
        )

    async def _apply_changes(self, batch: list[Document]) -> None:
        changes: list[Change] = []
        for change in batch:
            operation = change.get("operationType")
            if operation == "delete":
                changes.append(((change.get("documentKey") or {}).get("_id"), None))
            elif operation in ("insert", "update", "replace"):
                doc = change.get("fullDocument")
                if doc is not None:  # None: not a run, or deleted since (its delete follows)
                    changes.append((doc.get("_id"), doc))
        await self.changes.apply(changes, announce=True)
        for change in batch:
            self.changes.observed(change.get("wallTime") or change.get("clusterTime"))
        now = asyncio.get_running_loop().time()
        if now - self._settled_at >= _SETTLE_EVERY:  # a run in doubt may have just moved on
            self._settled_at = now
            await self.settlement.settle_claimed()


async def offers_streams(
    collection: AsyncCollection[Document], pipeline: list[Document], what: str
) -> bool:
    """Whether the database offers change streams on `collection` (else: logged, with
    `what` is followed by polling)."""
    try:
        async with await collection.watch(pipeline, max_await_time_ms=1):
            return True
    except OperationFailure as exc:
        log.warning(
            f"the database offers no change streams; following {what} by polling",
            extra={"reason": str(exc)},
        )
        return False


def buffered(stream: AsyncChangeStream[Document]) -> int:
    """How many changes of the server's last batch the stream holds unread. The driver
    says so only in its cursor's buffer (no public attribute): a driver without one reads
    as 0, a batch per change, slower but as exact. A batch's end cannot be told from its
    post-batch token: the embedded server sets it to its last change's."""
    cursor = getattr(stream, "_cursor", None)
    data = getattr(cursor, "_data", None)
    return len(data) if data is not None else 0
