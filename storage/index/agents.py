"""The agents list: every (agent, runtime) ever indexed, kept in one document.

`agents` and the per-agent counts would otherwise group every entry of the index.
"""

from __future__ import annotations

from collections.abc import Iterable

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.types import Document

AGENTS_ID = "run-index-agents"
"""The document in `suspended_runs_sync` that lists every (agent, runtime) ever indexed."""


class AgentList:
    def __init__(self, state: AsyncCollection[Document]) -> None:
        self.state = state
        self._noted: set[tuple[str, str]] = set()

    async def note(self, entries: Iterable[RunEntry]) -> None:
        """Remember the (agent, runtime) of `entries`, so `agents` reads no entry; written
        before the entries (an agent listed a moment early shows 0 runs, never missing)."""
        pairs = {(e.agent_id, e.runtime.value) for e in entries} - self._noted
        if pairs:
            each = [{"agentId": agent, "runtime": runtime} for agent, runtime in sorted(pairs)]
            await self.state.update_one(
                {"_id": AGENTS_ID}, {"$addToSet": {"seen": {"$each": each}}}, upsert=True
            )
            self._noted |= pairs

    async def note_existing(self, entries: AsyncCollection[Document]) -> None:
        """The agents of entries written before the index kept them (once: O(entries))."""
        if await self.state.find_one({"_id": AGENTS_ID}, {"_id": 1}) is not None:
            return
        group: Document = {"$group": {"_id": {"agentId": "$agentId", "runtime": "$runtime"}}}
        rows = [row["_id"] async for row in await entries.aggregate([group])]
        seen = [r for r in rows if isinstance(r.get("agentId"), str) and "runtime" in r]
        await self.state.update_one(
            {"_id": AGENTS_ID}, {"$addToSet": {"seen": {"$each": seen}}}, upsert=True
        )

    async def read(self) -> list[tuple[str, str]]:
        """(agentId, runtime) of every agent ever indexed, sorted."""
        doc = await self.state.find_one({"_id": AGENTS_ID}) or {}
        pairs = {
            (seen["agentId"], seen["runtime"])
            for seen in doc.get("seen", [])
            if isinstance(seen, dict)
            and isinstance(seen.get("agentId"), str)
            and isinstance(seen.get("runtime"), str)
        }
        return sorted(pairs)
