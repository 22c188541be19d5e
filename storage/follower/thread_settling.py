"""Settling LangGraph runs this server claimed, from their threads' documents.

A resume runs in this process. When it died, or its answer was lost, the claim stays
(STALLED once its lease ends) and the run is settled here once its thread shows where it
went: asked again (SUSPENDED, with its new calls), failed, or on past the interrupts
(COMPLETED). A thread still waiting on the claimed interrupts has not moved: the run stays
claimed, for an operator to release or cancel (docs/design.md, "Faults").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from suspended_runs.storage.follower.thread_changes import GONE
from suspended_runs.storage.follower.thread_reads import Hint, ThreadReader
from suspended_runs.storage.index.entry import Outcome, RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.types import RunStatus, Runtime

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ThreadSettlement:
    reader: ThreadReader
    index: RunIndex
    clock: Callable[[], datetime]

    async def moved_on(self, claimed: RunEntry) -> RunEntry | None:
        """Where a claimed run came to rest, by its thread; None while the thread still
        waits on the interrupts it was claimed at (or shows no resting state yet)."""
        at = await self.reader.checkpoint_id_of(claimed.snapshot_id)
        now = self.clock()
        if at is None:
            return claimed.finished(RunStatus.ENDED, Outcome(error=GONE), now)
        thread_id, checkpoint_id = at
        latest = await self.reader.latest(thread_id, checkpoint_id) or checkpoint_id
        look = await self.reader.look(thread_id, Hint(latest, seen=False))
        if look.gone:
            return claimed.finished(RunStatus.ENDED, Outcome(error=GONE), now)
        if look.run is None:  # no interrupt waits: on past them, or still in a step
            return (
                None
                if latest == checkpoint_id
                else claimed.finished(RunStatus.COMPLETED, Outcome(), now)
            )
        entry = look.run.entry
        if entry.run_id != claimed.run_id:  # a new invocation began: this one ended
            return claimed.finished(RunStatus.COMPLETED, Outcome(), now)
        asked = {call.interrupt_id for call in claimed.tool_calls if call.decision}
        waiting = {call.interrupt_id for call in entry.tool_calls}
        if entry.status is RunStatus.SUSPENDED and latest == checkpoint_id and asked & waiting:
            return None
        return replace(entry, version=claimed.version, claim=None).decided_as(claimed)

    async def settle_claimed(self) -> int:
        """Settle every LangGraph run in doubt (outcome unknown, or STALLED: its holder
        died) whose thread moved on; how many were settled."""
        settled = 0
        now = self.clock()
        for entry in await self.index.claims.claimed():
            in_doubt = entry.outcome_unknown or entry.status_at(now) is RunStatus.STALLED
            if entry.runtime is not Runtime.LANGGRAPH or not in_doubt:
                continue
            after = await self.moved_on(entry)
            if after is not None and await self.index.claims.settle_seen(entry, after):
                log.info(
                    "settled a LangGraph run in doubt from its thread",
                    extra={"runId": entry.run_id, "status": after.status.value},
                )
                settled += 1
        return settled
