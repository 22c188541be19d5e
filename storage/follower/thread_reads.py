"""Reading one LangGraph thread where it is now, by bounded queries only.

A thread's checkpoints carry its whole state and grow with its conversation, and the
embedded server fetches and sorts every match of a query (docs/design.md, "Lists on the
embedded server"): so a thread is never read by its history. Its latest root checkpoint
is the one an event or an interrupt named when no newer one exists (asked with a range
from it, limit 2), the invocation's input checkpoint is found by following `parent_checkpoint_id`
one equality read at a time, and a state blob is read only where a batched approval needs
the model's tool calls. A thread of 10,000 checkpoints costs a new interrupt what one of
3 does.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.errors import MalformedSnapshot
from suspended_runs.storage.snapshots.langgraph.decoding import Undecodable, decode_typed
from suspended_runs.storage.snapshots.langgraph.messages import (
    channel_messages,
    conversation,
    last_model_calls,
)
from suspended_runs.storage.snapshots.langgraph.shapes import ModelCall
from suspended_runs.storage.snapshots.langgraph.threads import (
    CONTROL_CHANNELS,
    ThreadReading,
    ThreadRun,
    is_input,
    thread_run,
    waiting,
)
from suspended_runs.storage.snapshots.messages import RunMessage
from suspended_runs.storage.snapshots.states import UNREADABLE
from suspended_runs.storage.types import Document

log = logging.getLogger(__name__)

ROOT = ""
"""The root graph's `checkpoint_ns`: a subgraph's interrupt is written there too."""
_CHECKPOINT_FIELDS = {
    "_id": 1,
    "thread_id": 1,
    "checkpoint_ns": 1,
    "checkpoint_id": 1,
    "parent_checkpoint_id": 1,
    "metadata": 1,
}
"""Everything but the state blob."""
_WALK_FIELDS = {"_id": 0, "checkpoint_id": 1, "parent_checkpoint_id": 1, "metadata.source": 1}
_REMEMBERED_INPUTS = 100_000
"""Checkpoints whose invocation's input is remembered: a run suspended again in the same
invocation walks back only to the last checkpoint it passed."""


@dataclass(frozen=True, slots=True)
class Hint:
    """What changes said of a thread: its newest root checkpoint they named, and the writes
    they showed (by `_id`). A change can arrive before a read sees its document (the
    embedded server publishes a change a moment before), so a look that does not see all
    of them yet concludes nothing."""

    checkpoint_id: str
    writes: frozenset[Any] = frozenset()
    seen: bool = True
    """The checkpoint was seen to exist (an event named it): not finding it is a lag, not a
    delete (deletes come as their own events)."""

    def joined(self, other: Hint) -> Hint:
        if other.checkpoint_id > self.checkpoint_id:
            return Hint(other.checkpoint_id, other.writes, other.seen)
        if other.checkpoint_id < self.checkpoint_id:
            return self
        return Hint(self.checkpoint_id, self.writes | other.writes, self.seen or other.seen)


@dataclass(frozen=True, slots=True)
class ThreadLook:
    """A thread as one look found it: gone (its checkpoint deleted), moved past the
    checkpoint looked at or resting there with no pending interrupt, or waiting in `run`."""

    thread_id: str
    gone: bool = False
    run: ThreadRun | None = None
    latest: str | None = None
    """The checkpoint looked at, where it is the thread's latest."""
    key: Any = None
    """That checkpoint's `_id` (its messages are a finished run's last)."""
    lagging: bool = False
    """A read did not yet see what the changes showed: look again, conclude nothing."""


class ThreadReader:
    def __init__(
        self,
        checkpoints: AsyncCollection[Document],
        writes: AsyncCollection[Document],
        reading: ThreadReading,
        *,
        walk_limit: int = 200,
    ) -> None:
        self.checkpoints = checkpoints
        self.writes = writes
        self.reading = reading
        self.walk_limit = walk_limit
        self._inputs: OrderedDict[str, str | None] = OrderedDict()
        self._parents: OrderedDict[str, Document] = OrderedDict()
        """Checkpoints changes brought (their parent and source): a walk through a burst of
        new checkpoints reads none of them again."""

    async def look(self, thread_id: str, hint: Hint) -> ThreadLook:
        """The thread as of `hint`'s checkpoint (a root checkpoint known of it, the newest
        an event or an interrupt named): moved past it when a newer root checkpoint exists
        (whose own events, interrupts included, are looked at as they come), gone when it
        does not exist, else what its writes wait for."""
        checkpoint_id = hint.checkpoint_id
        # Two from it on, in any order: two, or one other than it, say it moved past it.
        # One query answers "is there a newer one" and reads it, bounded by the limit.
        found = self.checkpoints.find(
            {
                "thread_id": thread_id,
                "checkpoint_ns": ROOT,
                "checkpoint_id": {"$gte": checkpoint_id},
            },
            _CHECKPOINT_FIELDS,
            limit=2,
        )
        from_it = [doc async for doc in found]
        if len(from_it) > 1 or any(d.get("checkpoint_id") != checkpoint_id for d in from_it):
            return ThreadLook(thread_id)
        if not from_it:
            return ThreadLook(thread_id, gone=not hint.seen, lagging=hint.seen)
        latest = from_it[0]
        self.saw([latest])
        writes = await self.checkpoint_writes(thread_id, checkpoint_id)
        if not hint.writes <= {write.get("_id") for write in writes}:
            return ThreadLook(thread_id, lagging=True)
        state = waiting(writes)
        if not state.interrupts:
            return ThreadLook(thread_id, latest=checkpoint_id, key=latest.get("_id"))
        start = await self.input_checkpoint(latest)
        calls = await self.model_calls(thread_id, checkpoint_id) if state.needs_messages else []
        try:
            run = thread_run(latest, state, start, calls, self.reading)
        except MalformedSnapshot as exc:
            UNREADABLE.met(latest, str(exc))
            return ThreadLook(thread_id, latest=checkpoint_id)
        return ThreadLook(thread_id, run=run, latest=checkpoint_id)

    async def latest(self, thread_id: str, checkpoint_id: str) -> str | None:
        """The newest root checkpoint's id from `checkpoint_id` on (a run's own progress
        since: few); None when there is none."""
        newest = await self.checkpoints.find_one(
            {
                "thread_id": thread_id,
                "checkpoint_ns": ROOT,
                "checkpoint_id": {"$gte": checkpoint_id},
            },
            {"_id": 0, "checkpoint_id": 1},
            sort=[("checkpoint_id", -1)],
        )
        found = newest.get("checkpoint_id") if newest else None
        return found if isinstance(found, str) else None

    async def checkpoint_id_of(self, checkpoint_key: Any) -> tuple[str, str] | None:
        """(thread_id, checkpoint_id) of the checkpoint document with `_id` `checkpoint_key`."""
        doc = await self.checkpoints.find_one(
            {"_id": checkpoint_key}, {"thread_id": 1, "checkpoint_id": 1}
        )
        if doc is None:
            return None
        thread_id, checkpoint_id = doc.get("thread_id"), doc.get("checkpoint_id")
        if isinstance(thread_id, str) and isinstance(checkpoint_id, str):
            return thread_id, checkpoint_id
        return None

    async def checkpoint_writes(self, thread_id: str, checkpoint_id: Any) -> list[Document]:
        """A checkpoint's writes, each with its value only where it is a control write
        (an output's value may be a whole message list)."""
        keep = {"$in": ["$channel", list(CONTROL_CHANNELS)]}
        pipeline: list[Document] = [
            {
                "$match": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ROOT,
                    "checkpoint_id": checkpoint_id,
                }
            },
            {
                "$project": {
                    "task_id": 1,
                    "task_path": 1,
                    "channel": 1,
                    "type": 1,
                    "value": {"$cond": [keep, "$value", None]},
                }
            },
        ]
        return [doc async for doc in await self.writes.aggregate(pipeline)]

    async def input_checkpoint(self, checkpoint: Document) -> str | None:
        """The id of the checkpoint that the invocation `checkpoint` belongs to began with
        (`metadata.source == "input"`; the thread's first checkpoint if none says so),
        following parents one read at a time; None past `walk_limit` steps."""
        thread_id = checkpoint.get("thread_id")
        visited: list[str] = []
        current: Document | None = checkpoint
        found: str | None = None
        for _ in range(self.walk_limit + 1):
            if current is None:
                break
            checkpoint_id = current.get("checkpoint_id")
            if not isinstance(checkpoint_id, str):
                break
            if is_input(current):
                found = checkpoint_id
                break
            if checkpoint_id in self._inputs:
                found = self._inputs[checkpoint_id]
                break
            visited.append(checkpoint_id)
            parent = current.get("parent_checkpoint_id")
            if not isinstance(parent, str) or not parent:
                found = checkpoint_id  # the thread's first: its run starts here
                break
            current = self._parents.get(parent) or await self.checkpoints.find_one(
                {"thread_id": thread_id, "checkpoint_ns": ROOT, "checkpoint_id": parent},
                _WALK_FIELDS,
            )
            if current is None:  # an older checkpoint deleted (the saver's TTL)
                found = checkpoint_id
        for checkpoint_id in visited:
            self._remember(checkpoint_id, found)
        return found

    async def model_calls(self, thread_id: str, checkpoint_id: Any) -> list[ModelCall]:
        """The tool calls of the last AI message of a checkpoint's `messages` channel."""
        doc = await self.checkpoints.find_one(
            {"thread_id": thread_id, "checkpoint_ns": ROOT, "checkpoint_id": checkpoint_id},
            {"type": 1, "checkpoint": 1},
        )
        if doc is None:
            return []
        try:
            state = decode_typed(doc.get("type"), doc.get("checkpoint"))
        except Undecodable as exc:
            log.debug("a checkpoint's state is not read", extra={"reason": str(exc)})
            return []
        return last_model_calls(channel_messages(state))

    async def conversation(self, checkpoint_key: Any, last: int) -> list[RunMessage]:
        """The last `last` messages of the checkpoint with `_id` `checkpoint_key`."""
        doc = await self.checkpoints.find_one({"_id": checkpoint_key}, {"type": 1, "checkpoint": 1})
        if doc is None or last <= 0:
            return []
        try:
            state = decode_typed(doc.get("type"), doc.get("checkpoint"))
        except Undecodable:
            return []
        return list(conversation(channel_messages(state)))[-last:]

    def saw(self, checkpoints: list[Document]) -> None:
        """Checkpoints as a change (or a read) brought them: what a walk follows."""
        for doc in checkpoints:
            checkpoint_id = doc.get("checkpoint_id")
            if isinstance(checkpoint_id, str) and doc.get("checkpoint_ns") == ROOT:
                metadata = doc.get("metadata")
                source = metadata.get("source") if isinstance(metadata, dict) else None
                self._parents[checkpoint_id] = {
                    "checkpoint_id": checkpoint_id,
                    "parent_checkpoint_id": doc.get("parent_checkpoint_id"),
                    "metadata": {"source": source},
                }
                self._parents.move_to_end(checkpoint_id)
        while len(self._parents) > _REMEMBERED_INPUTS:
            self._parents.popitem(last=False)

    def _remember(self, checkpoint_id: str, found: str | None) -> None:
        self._inputs[checkpoint_id] = found
        self._inputs.move_to_end(checkpoint_id)
        if len(self._inputs) > _REMEMBERED_INPUTS:
            self._inputs.popitem(last=False)
