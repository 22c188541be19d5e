"""Following the snapshots by a change stream, resumed from a stored token.

Where the server offers change streams (a replica set, or the embedded server), every
write by Mastra arrives as it commits; a restart resumes where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from suspended_runs.storage.follower.changes import ChangeApplier
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.reconcile import Reconciler
from suspended_runs.storage.follower.settling import Settlement
from suspended_runs.storage.snapshots.extraction import extraction_projection
from suspended_runs.storage.types import Document

log = logging.getLogger(__name__)

_REPLAY_SECONDS = 30.0
"""Longest a restart waits for a resumed stream's backlog before saying it is ready."""
_FOLLOW_AWAIT_MS = 500
"""How long a followed stream's read waits for a change: two reads a second when idle."""
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

    async def works(self) -> bool:
        """Whether the database offers change streams."""
        try:
            async with await self.snapshots.watch(max_await_time_ms=1):
                return True
        except OperationFailure as exc:
            log.warning(
                "the database offers no change streams; following snapshots by polling",
                extra={"reason": str(exc)},
            )
            return False

    async def follow(self, following: Callable[[], None]) -> None:
        """Catch up where needed, then apply every change as it comes, until cancelled;
        `following` is called once the index is caught up."""
        async with contextlib.AsyncExitStack() as streams:
            stream, resumed = await self._open_stream()
            streams.push_async_callback(stream.close)
            # A stream that resumed replays every change since its token: nothing to read
            # again; ready once what was written while down is applied.
            if not resumed or self.reconciler.index.created:
                # The stream opened first: nothing written meanwhile is missed.
                await self.reconciler.catch_up_or_reconcile()
            stream = await self._from_now_on(stream, streams)
            await self.position.save(stream.resume_token)
            following()
            await self._follow_changes(stream, until_idle=False)

    async def _from_now_on(
        self, stream: AsyncChangeStream[Document], streams: contextlib.AsyncExitStack
    ) -> AsyncChangeStream[Document]:
        """Read `stream` (resumed, or opened before a catch-up) up to now; then the stream
        to follow: one resumed where `stream` ends, waiting `_FOLLOW_AWAIT_MS` for a change
        where `stream` waits `_IDLE_AWAIT_MS` (a restart is ready after one short wait; an
        idle follower reads twice a second). The token it keeps is past the catch-up's own
        writes: a restart that resumed from one before them would read every one again in
        the oplog (the embedded server decodes each). A stream busy for longer than
        `_REPLAY_SECONDS` is handed on the same way."""
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
            if change is not None or self.position.due():
                await self.position.save(stream.resume_token)
            if until_idle and (change is None or asyncio.get_running_loop().time() > deadline):
                return change is None
        return False

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

    async def _apply_change(self, change: Document) -> None:
        self.changes.lagged(change.get("wallTime") or change.get("clusterTime"))
        operation = change.get("operationType")
        if operation == "delete":
            await self.changes.end_snapshot((change.get("documentKey") or {}).get("_id"))
        elif operation in ("insert", "update", "replace"):
            doc = change.get("fullDocument")
            if doc is not None:  # None: deleted since; its delete event follows
                await self.changes.apply_document(doc)
        await self.settlement.settle_claimed()  # a run in doubt may have just moved on


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
