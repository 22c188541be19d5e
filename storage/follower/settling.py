"""Settling Mastra runs whose answer was lost, from their snapshots.

Mastra writes no "running" status: while a decision sent from here is under way, only
this server's claim says so. When the answer is lost (a timeout, a broken stream, a
process that died), the claim stays and the run is settled here once its snapshot moves
on: suspended on a next call, failed, or gone (Mastra deletes a completed run's snapshot).
A run whose snapshot never moves stays claimed, and shows as STALLED once its lease ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.entry import Outcome, RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.states import extract_or_log, resting_state
from suspended_runs.storage.types import MASTRA_RUN_WORKFLOWS, Document, RunStatus, Runtime

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Settlement:
    snapshots: AsyncCollection[Document]
    index: RunIndex
    clock: Callable[[], datetime]

    async def mastra_snapshot(self, run_id: str) -> Document | None:
        return await self.snapshots.find_one(
            {"workflow_name": {"$in": list(MASTRA_RUN_WORKFLOWS)}, "run_id": run_id}
        )

    async def moved_on(self, claimed: RunEntry) -> RunEntry | None:
        """Where a claimed Mastra run came to rest, by its snapshot; None while the snapshot
        still shows the suspension it was claimed at (or no resting state yet)."""
        doc = await self.mastra_snapshot(claimed.run_id)
        now = self.clock()
        if doc is None:  # Mastra deletes a run's snapshot when the run completes
            return claimed.finished(RunStatus.COMPLETED, Outcome(), now)
        entry = extract_or_log(doc)
        if entry is not None:
            # Mastra rewrites the snapshot as it starts on a decision, still suspended on
            # the same call: only a suspension on other calls is a next resting state.
            if _call_ids(entry) == _call_ids(claimed):
                return None
            return replace(entry, version=claimed.version, claim=None).decided_as(claimed)
        status, error = resting_state(doc.get("snapshot"))
        if status == "failed":
            return claimed.finished(RunStatus.FAILED, Outcome(error=error), now)
        if status == "success":
            return claimed.finished(RunStatus.COMPLETED, Outcome(), now)
        return None

    async def settle_claimed(self) -> int:
        """Settle every Mastra run in doubt (outcome unknown, or STALLED: its holder died)
        whose snapshot moved on; how many were settled."""
        settled = 0
        now = self.clock()
        for entry in await self.index.claims.claimed():
            in_doubt = entry.outcome_unknown or entry.status_at(now) is RunStatus.STALLED
            if entry.runtime is not Runtime.MASTRA or not in_doubt:
                continue
            after = await self.moved_on(entry)
            if after is not None and await self.index.claims.settle_seen(entry, after):
                log.info(
                    "settled a run in doubt from its snapshot",
                    extra={"runId": entry.run_id, "status": after.status.value},
                )
                settled += 1
        return settled


def _call_ids(entry: RunEntry) -> set[str | None]:
    return {call.tool_call_id for call in entry.tool_calls}
