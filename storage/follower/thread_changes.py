"""Applying what a look at LangGraph threads found to the run index, a batch at a time.

As Mastra's changes are (changes.py): one read of what the index holds for the threads
looked at, one bulk write, one new version. A thread waiting in a run puts that run
(inserted when new, over its entry when its calls or suspension moved); the thread's other
SUSPENDED runs (earlier invocations) end, as they moved on without a decision made here;
a thread whose checkpoints are gone ends its runs with that reason. Runs claimed here are
their holders' (discovery never writes over them).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.events.outbox import EventOutbox, RunEvent
from suspended_runs.storage.follower.thread_reads import Hint, ThreadLook, ThreadReader
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.types import RunStatus, Runtime

GONE = "its LangGraph checkpoints were deleted (delete_thread, or the saver's TTL)"
"""The outcome of a run whose thread's documents went away while it waited."""
_CONCURRENT_LOOKS = 16
"""Threads looked at at once: each look is a few round trips of its own."""


@dataclass(slots=True)
class ThreadApplier:
    reader: ThreadReader
    index: RunIndex
    clock: Callable[[], datetime]
    outbox: EventOutbox | None = None
    looked: int = 0
    """Threads looked at since this process started."""
    written: int = 0
    """Entries written since this process started."""
    _gate: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(_CONCURRENT_LOOKS))

    async def apply(
        self, hints: dict[str, Hint], deleted: Iterable[Any] = (), *, announce: bool = True
    ) -> list[str]:
        """Look at each thread of `hints` and write what was found; end the runs whose
        checkpoint (by `_id`) is in `deleted`. The threads whose look lagged behind what
        their changes showed: nothing was concluded of them, look again."""
        looks = await asyncio.gather(*(self._look(t, h) for t, h in hints.items()))
        concluded = [look for look in looks if not look.lagging]
        self.written += await self.apply_looks(concluded, list(deleted), announce=announce)
        return [look.thread_id for look in looks if look.lagging]

    async def apply_looks(
        self, looks: list[ThreadLook], deleted: list[Any], *, announce: bool = True
    ) -> int:
        held = await self.suspended_in([look.thread_id for look in looks])
        found = [look.run.entry for look in looks if look.run is not None]
        known = await self.index.discovery.resting_states([e.run_id for e in found])
        moved_on: list[str] = []
        gone: list[str] = []
        for look in looks:
            current = look.run.entry.run_id if look.run else None
            left = [run_id for run_id in held.get(look.thread_id, ()) if run_id != current]
            (gone if look.gone else moved_on).extend(left)
        waiting = [e for e in found if e.status is RunStatus.SUSPENDED]
        failed = [e for e in found if e.status is RunStatus.FAILED]
        new = [e for e in waiting if e.run_id not in known]
        put = [e for e in waiting if e.run_id in known and known[e.run_id] != _resting(e)]
        failing = [e for e in failed if known.get(e.run_id, ("SUSPENDED",))[0] == "SUSPENDED"]
        if announce:
            happened = await self._events([*put, *new], failing, moved_on + gone, deleted)
            if happened and self.outbox is not None:
                await self.outbox.add(happened)
        discovery, now = self.index.discovery, self.clock()
        written = await discovery.apply(put, moved_on, (), now, new=new, failed=failing)
        if gone or deleted:
            written += await discovery.apply([], gone, deleted, now, reason=GONE)
        return written

    async def suspended_in(self, thread_ids: list[str]) -> dict[str, list[str]]:
        """thread id -> the SUSPENDED LangGraph runs the index holds for it."""
        held: defaultdict[str, list[str]] = defaultdict(list)
        for i in range(0, len(thread_ids), 500):
            query = {
                "status": RunStatus.SUSPENDED.value,
                "threadId": {"$in": thread_ids[i : i + 500]},
            }
            projection = {"_id": 0, "runId": 1, "threadId": 1, "runtime": 1}
            async for doc in self.index.collection.find(query, projection):
                if doc.get("runtime") == Runtime.LANGGRAPH.value:
                    held[doc["threadId"]].append(doc["runId"])
        return held

    async def _look(self, thread_id: str, hint: Hint) -> ThreadLook:
        async with self._gate:
            self.looked += 1
            return await self.reader.look(thread_id, hint)

    async def _events(
        self,
        suspended: list[RunEntry],
        failed: list[RunEntry],
        ended_ids: list[str],
        deleted: list[Any],
    ) -> list[RunEvent]:
        """What these changes announce, if any webhook listens (as changes.py's)."""
        if self.outbox is None or not await self.outbox.active():
            return []
        now = self.clock()
        ended = await self.index.discovery.suspended_among(ended_ids, deleted)
        return [
            *(events.suspended(e, now) for e in suspended),
            *(events.settled(e, now) for e in failed),
            *(events.settled(e.finished(RunStatus.ENDED, None, now), now) for e in ended),
        ]


def _resting(entry: RunEntry) -> tuple[str, Any]:
    return entry.status.value, entry.suspended_at
