"""The agents list: every (agent, runtime) ever indexed, and every (agent, tool) of their
calls, kept in one document.

`agents` and the per-agent counts would otherwise group every entry of the index, and
`assignedToMe` (storage/index/assignment.py) every call.
"""

from __future__ import annotations

from collections.abc import Iterable

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.assignment import tool_name, tool_order
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.types import Document

AGENTS_ID = "run-index-agents"
"""The document in `suspended_runs_sync` that lists every (agent, runtime) ever indexed."""


class AgentList:
    def __init__(self, state: AsyncCollection[Document]) -> None:
        self.state = state
        self._noted: set[tuple[str, str]] = set()
        self._tools_noted: set[tuple[str, str | None]] = set()

    async def note(self, entries: Iterable[RunEntry]) -> None:
        """Remember the (agent, runtime) and (agent, tool) of `entries`, so neither list
        reads an entry; written before the entries (an agent listed a moment early shows
        0 runs, never missing; a tool, no call)."""
        entries = list(entries)
        pairs = {(e.agent_id, e.runtime.value) for e in entries} - self._noted
        tools = {(e.agent_id, c.tool_name) for e in entries for c in e.tool_calls}
        tools -= self._tools_noted
        if pairs or tools:
            seen = [{"agentId": agent, "runtime": runtime} for agent, runtime in sorted(pairs)]
            await self.state.update_one(
                {"_id": AGENTS_ID},
                {"$addToSet": {"seen": {"$each": seen}, "tools": {"$each": _tools(tools)}}},
                upsert=True,
            )
            self._noted |= pairs
            self._tools_noted |= tools

    async def note_existing(self, entries: AsyncCollection[Document]) -> None:
        """The agents and tools of entries written before the index kept them (once each:
        O(entries))."""
        kept = await self.state.find_one({"_id": AGENTS_ID}, {"_id": 1, "toolsNoted": 1})
        if kept is not None and kept.get("toolsNoted"):
            return
        update: Document = {"$set": {"toolsNoted": True}}
        if kept is None:
            group: Document = {"$group": {"_id": {"agentId": "$agentId", "runtime": "$runtime"}}}
            rows = [row["_id"] async for row in await entries.aggregate([group])]
            seen = [r for r in rows if isinstance(r.get("agentId"), str) and "runtime" in r]
            update["$addToSet"] = {"seen": {"$each": seen}}
        calls: list[Document] = [
            {"$unwind": "$toolCalls"},
            {"$group": {"_id": {"agentId": "$agentId", "toolName": "$toolCalls.toolName"}}},
        ]
        rows = [row["_id"] async for row in await entries.aggregate(calls)]
        tools = {
            (r["agentId"], tool_name(r.get("toolName")))
            for r in rows
            if isinstance(r.get("agentId"), str)
        }
        update.setdefault("$addToSet", {})["tools"] = {"$each": _tools(tools)}
        await self.state.update_one({"_id": AGENTS_ID}, update, upsert=True)

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

    async def tools(self) -> set[tuple[str, str | None]]:
        """(agentId, toolName) of every call ever indexed (None: a name not readable)."""
        doc = await self.state.find_one({"_id": AGENTS_ID}, {"tools": 1}) or {}
        return {
            (seen["agentId"], tool_name(seen.get("toolName")))
            for seen in doc.get("tools", [])
            if isinstance(seen, dict) and isinstance(seen.get("agentId"), str)
        }


def _tools(pairs: set[tuple[str, str | None]]) -> list[Document]:
    return [
        {"agentId": agent, "toolName": tool}
        for agent, tool in sorted(pairs, key=lambda pair: (pair[0], tool_order(pair[1])))
    ]
