"""Following LangGraph's checkpoints: the follower's second source, beside Mastra's.

`MongoDBSaver` writes two collections (docs/design.md, "LangGraph threads"). Both are
followed by change streams resumed from a token each, where the database offers them;
by polling otherwise (new documents by `_id`, a look for deleted ones, and a reconcile
now and then for what changes in place). A change is a hint, never the state: it names a
thread and a checkpoint, and the thread is then read where it is (thread_reads.py). The
instance that holds the follower lease follows every source; it is ready once each
source has applied what was written before it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from suspended_runs.storage.errors import SuspendedRunsError
from suspended_runs.storage.follower.change_stream import buffered, offers_streams
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.thread_changes import ThreadApplier
from suspended_runs.storage.follower.thread_reads import ROOT, Hint, ThreadReader
from suspended_runs.storage.follower.thread_settling import ThreadSettlement
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.langgraph.threads import ERROR, INTERRUPT, ThreadReading
from suspended_runs.storage.types import Document, RunStatus, Runtime

log = logging.getLogger(__name__)

WRITES_INDEX = "suspended_runs_channel_ns"
"""The one index this server adds to the saver's writes: interrupts across threads (the
saver's own indexes all start with `thread_id`). A partial index is not used by the
embedded server."""
WRITES_INDEX_KEYS = [("channel", 1), ("checkpoint_ns", 1)]
_AWAIT_MS = 100
"""How long a stream's read waits for a change: the two streams are read in turn."""
_SAVE_EVERY = 0.5
_GATHER = 0.05
"""Most seconds a round reads on while a stream keeps giving changes."""
_BATCH = 1000
_RECONCILE_BATCH = 500
_POLL_OVERLAP = timedelta(seconds=10)
"""How far below the newest `_id` seen a poll looks again: ObjectIds are made by the
database's clock, so this is the skew between a replica set's members, not writers'."""
_POLL_RECONCILE_EVERY = 60.0
"""Seconds between reconciles while polling: a value the saver updates in place (a node
that interrupts a third time) has no new `_id` to be found by."""
_LOOKS_AGAIN = 50
"""Rounds a thread is looked at again while a read lags behind its changes."""
_LIGHT = {"thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "channel": 1}
_STREAM: list[Document] = [{"$project": {"fullDocument.checkpoint": 0, "fullDocument.value": 0}}]
"""Every change, without the documents' values: a change is a hint (which thread, which
checkpoint), and the embedded server answers an empty batch for a stretch it filtered
out, which would read as the stream's end while a backlog remains (as change_stream.py
says)."""


class StreamEnded(SuspendedRunsError):
    """A change stream the server ended: the follower opens new ones after its backoff."""


@dataclass(frozen=True, slots=True)
class LangGraphCheckpoints:
    """Where a `MongoDBSaver` writes (LANGGRAPH_DB and its collections), and how its
    threads are read."""

    database: str
    checkpoints: str = "checkpoints"
    writes: str = "checkpoint_writes"
    reading: ThreadReading = field(default_factory=ThreadReading)
    walk_limit: int = 200
    """Most parents followed back to an invocation's input checkpoint."""


class LangGraphSource:
    def __init__(
        self,
        checkpoints: AsyncCollection[Document],
        writes: AsyncCollection[Document],
        index: RunIndex,
        state: AsyncCollection[Document],
        reading: ThreadReading,
        clock: Callable[[], datetime],
        *,
        walk_limit: int = 200,
        poll_interval: float = 0.5,
    ) -> None:
        self.checkpoints, self.writes, self.index, self.clock = checkpoints, writes, index, clock
        self.reader = ThreadReader(checkpoints, writes, reading, walk_limit=walk_limit)
        self.applier = ThreadApplier(self.reader, index, clock)
        self.settlement = ThreadSettlement(self.reader, index, clock)
        self.poll_interval = poll_interval
        self._positions = {
            "checkpoints": FollowPosition(state, clock, "langgraph-checkpoints-stream"),
            "writes": FollowPosition(state, clock, "langgraph-writes-stream"),
        }
        self.ready = False
        """Caught up once since this instance began to follow: stays ready from then on."""
        self.caught_up = False
        self.healthy = True
        """False from a failure until a round of changes is applied again."""
        self.applied_up_to: datetime | None = None
        """When the newest change applied was written."""
        self.delays: list[float] = []
        self._seen: dict[Any, datetime] = {}
        self._again: dict[str, tuple[Hint, int]] = {}
        """Threads whose look lagged behind their changes, and how often so far."""

    @property
    def behind_seconds(self) -> float | None:
        if self.caught_up:
            return 0.0
        applied = self.applied_up_to
        return None if applied is None else max((self.clock() - applied).total_seconds(), 0.0)

    async def has_index(self) -> bool:
        indexes = await self.writes.index_information()
        return any(spec.get("key") == WRITES_INDEX_KEYS for spec in indexes.values())

    async def ensure_index(self) -> None:
        if not await self.has_index():
            log.info("building an index on the LangGraph writes (channel, checkpoint_ns)")
            await self.writes.create_index(WRITES_INDEX_KEYS, name=WRITES_INDEX)

    async def follow(self, *, poll: bool = False) -> None:
        """Follow until cancelled: by change streams where the database has them (unless
        `poll`: SYNC_MODE=poll), else by polling. Raises on a failure (the follower
        retries)."""
        self.caught_up = False
        if not poll and await self._streams_work():
            await self._follow_streams()
        else:
            await self._poll()

    async def reconcile(self) -> int:
        """Look at every thread an interrupt was ever written in (at its newest one) and at
        every thread the index holds a waiting run of: what a first start, or a restart
        whose streams cannot resume, applies. How many entries that wrote."""
        newest: dict[str, str] = {}
        found = self.writes.find(
            {"channel": INTERRUPT, "checkpoint_ns": ROOT},
            {"_id": 0, "thread_id": 1, "checkpoint_id": 1},
        )
        async for doc in found:
            thread_id, checkpoint_id = doc.get("thread_id"), doc.get("checkpoint_id")
            if isinstance(thread_id, str) and isinstance(checkpoint_id, str):
                newest[thread_id] = max(newest.get(thread_id, ""), checkpoint_id)
        held = self.index.collection.find(
            {"status": RunStatus.SUSPENDED.value},
            {"_id": 0, "threadId": 1, "runtime": 1, "snapshotId": 1},
        )
        missing: list[Any] = []
        async for doc in held:
            if doc.get("runtime") == Runtime.LANGGRAPH.value and doc.get("threadId") not in newest:
                found_at = await self.reader.checkpoint_id_of(doc.get("snapshotId"))
                if found_at is None:
                    missing.append(doc.get("snapshotId"))
                else:
                    newest[found_at[0]] = found_at[1]
        before = self.applier.written
        # Not seen by a change: a checkpoint that is not there was deleted.
        threads = [(thread_id, Hint(at, seen=False)) for thread_id, at in newest.items()]
        await self.applier.apply({}, missing)
        for i in range(0, len(threads), _RECONCILE_BATCH):
            await self.applier.apply(dict(threads[i : i + _RECONCILE_BATCH]))
        written = self.applier.written - before
        log.info(
            "reconciled LangGraph threads", extra={"threads": len(threads), "written": written}
        )
        return written

    # -- change streams --------------------------------------------------------------------

    async def _streams_work(self) -> bool:
        return await offers_streams(self.writes, _STREAM, "LangGraph threads")

    async def _follow_streams(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            streams: dict[str, AsyncChangeStream[Document]] = {}
            resumed = True
            for name, collection in (("checkpoints", self.checkpoints), ("writes", self.writes)):
                stream, from_token = await self._open(name, collection)
                stack.push_async_callback(stream.close)
                streams[name], resumed = stream, resumed and from_token
            if not resumed or self.index.created:
                await self.reconcile()  # the streams opened first: nothing meanwhile is missed
            while True:
                idle = await self._round(streams)
                self.caught_up, self.healthy = idle, True
                if idle and not self.ready:
                    self.ready = True
                    log.info("following LangGraph threads", extra={"mode": "change_stream"})

    async def _open(
        self, name: str, collection: AsyncCollection[Document]
    ) -> tuple[AsyncChangeStream[Document], bool]:
        token = await self._positions[name].token()
        if token is not None:
            try:
                stream = await collection.watch(
                    _STREAM,
                    full_document="updateLookup",
                    resume_after=token,
                    max_await_time_ms=_AWAIT_MS,
                )
                return stream, True
            except OperationFailure as exc:
                log.warning(
                    "a LangGraph stream's token no longer resumes", extra={"reason": str(exc)}
                )
        stream = await collection.watch(
            _STREAM, full_document="updateLookup", max_await_time_ms=_AWAIT_MS
        )
        return stream, False

    async def _round(self, streams: dict[str, AsyncChangeStream[Document]]) -> bool:
        """Read what each stream has (up to a batch), apply it as one batch, save each
        token; whether both streams were idle."""
        changes: dict[str, list[Document]] = {}
        for name, stream in streams.items():
            if not stream.alive:  # invalidated (its collection dropped or renamed): reopened
                raise StreamEnded(f"the LangGraph {name} stream ended")
            changes[name] = [change async for change in _available(stream)]
        if any(changes.values()) or self._again:
            await self._apply(changes.get("checkpoints", []), changes.get("writes", []))
        idle = not any(changes.values()) and not self._again
        for name, stream in streams.items():
            position = self._positions[name]
            if (changes[name] and (idle or position.due(_SAVE_EVERY))) or position.due():
                await position.save(stream.resume_token)
        return idle

    async def _apply(
        self, checkpoint_changes: list[Document], write_changes: list[Document]
    ) -> None:
        asked: dict[str, Hint] = {}
        touched: dict[str, Hint] = {}
        deleted: list[Any] = []
        self.reader.saw([c["fullDocument"] for c in checkpoint_changes if c.get("fullDocument")])
        for change in checkpoint_changes:
            if change.get("operationType") == "delete":
                deleted.append((change.get("documentKey") or {}).get("_id"))
            else:
                _note(touched, change.get("fullDocument"))
        for change in write_changes:
            doc = change.get("fullDocument")
            if isinstance(doc, dict) and doc.get("channel") in (INTERRUPT, ERROR):
                _note(asked, doc)
            else:
                _note(touched, doc)
        await self._apply_hints(asked, touched, deleted)
        for change in [*checkpoint_changes, *write_changes]:
            self._observed(change.get("wallTime"))

    async def _apply_hints(
        self, asked: dict[str, Hint], touched: dict[str, Hint], deleted: list[Any]
    ) -> None:
        """Look at the threads an interrupt or error was written in, at the threads
        otherwise touched that hold a waiting run here, and again at those whose last look
        lagged behind their changes."""
        for thread_id, (hint, _) in self._again.items():
            asked[thread_id] = asked[thread_id].joined(hint) if thread_id in asked else hint
        others = [t for t in touched if t not in asked]
        held = await self.applier.suspended_in(others) if others else {}
        hints = asked | {t: touched[t] for t in others if t in held}
        for thread_id, hint in touched.items():
            if thread_id in hints:
                hints[thread_id] = hints[thread_id].joined(hint)
        lagging = await self.applier.apply(hints, deleted) if hints or deleted else []
        tries = {t: self._again.get(t, (hints[t], 0))[1] + 1 for t in lagging}
        self._again = {t: (hints[t], n) for t, n in tries.items() if n <= _LOOKS_AGAIN}
        if len(self._again) < len(tries):
            log.warning("a LangGraph thread's changes stayed unread; left to a reconcile")

    def _observed(self, written: Any) -> None:
        if isinstance(written, datetime):
            moment = written if written.tzinfo else written.replace(tzinfo=self.clock().tzinfo)
            self.delays.append(max((self.clock() - moment).total_seconds(), 0.0))
            del self.delays[:-10_000]
            if self.applied_up_to is None or moment > self.applied_up_to:
                self.applied_up_to = moment

    # -- polling ---------------------------------------------------------------------------

    async def _poll(self) -> None:
        await self.reconcile()
        self.ready = self.caught_up = True
        log.info("following LangGraph threads", extra={"mode": "poll"})
        reconciled = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.poll_once()
            self.healthy = True
            if asyncio.get_running_loop().time() - reconciled >= _POLL_RECONCILE_EVERY:
                await self.reconcile()
                reconciled = asyncio.get_running_loop().time()

    async def poll_once(self) -> None:
        """Apply the documents inserted since the last look, and end the runs whose
        checkpoint is gone."""
        asked: dict[str, Hint] = {}
        touched: dict[str, Hint] = {}
        for collection in (self.checkpoints, self.writes):
            async for doc in self._new(collection):
                if doc.get("channel") in (INTERRUPT, ERROR):
                    _note(asked, doc)
                else:
                    _note(touched, doc)
        await self._apply_hints(asked, touched, await self._vanished())

    async def _new(self, collection: AsyncCollection[Document]) -> AsyncIterator[Document]:
        newest = max(self._seen.values(), default=None)
        query: Document = {}
        if newest is not None:
            query = {"_id": {"$gte": ObjectId.from_datetime(newest - _POLL_OVERLAP)}}
        async for doc in collection.find(query, _LIGHT):
            key = doc.get("_id")
            if key in self._seen or not isinstance(key, ObjectId):
                continue
            self._seen[key] = key.generation_time
            self._observed(key.generation_time)
            yield doc
        if newest is not None:
            floor = newest - _POLL_OVERLAP
            self._seen = {k: at for k, at in self._seen.items() if at >= floor}

    async def _vanished(self) -> list[Any]:
        """The checkpoints of waiting LangGraph runs that no longer exist."""
        held = self.index.collection.find(
            {"status": RunStatus.SUSPENDED.value}, {"_id": 0, "runtime": 1, "snapshotId": 1}
        )
        keys = [
            d.get("snapshotId") async for d in held if d.get("runtime") == Runtime.LANGGRAPH.value
        ]
        present: set[Any] = set()
        for i in range(0, len(keys), _BATCH):
            batch = {"_id": {"$in": keys[i : i + _BATCH]}}
            present |= {doc["_id"] async for doc in self.checkpoints.find(batch, {"_id": 1})}
        return [key for key in keys if key not in present]


async def _available(stream: AsyncChangeStream[Document]) -> AsyncIterator[Document]:
    """The stream's changes up to a batch: what the server sends at once, and while changes
    keep coming, what more comes within `_GATHER` seconds (a burst is applied in batches
    that cover their reads)."""
    loop, taken = asyncio.get_running_loop(), 0
    started = loop.time()
    while taken < _BATCH:
        change = await stream.try_next()
        if change is None:
            return
        taken += 1
        yield change
        if not buffered(stream) and loop.time() - started >= _GATHER:
            return


def _note(hints: dict[str, Hint], doc: Any) -> None:
    """Keep `doc`'s thread with the newest root checkpoint seen of it (and, for a write,
    the write: a look must see it)."""
    if not isinstance(doc, dict) or doc.get("checkpoint_ns") != ROOT:
        return
    thread_id, checkpoint_id = doc.get("thread_id"), doc.get("checkpoint_id")
    if isinstance(thread_id, str) and isinstance(checkpoint_id, str):
        written = frozenset([doc.get("_id")]) if "channel" in doc else frozenset()
        hint = Hint(checkpoint_id, written)
        hints[thread_id] = hints[thread_id].joined(hint) if thread_id in hints else hint
