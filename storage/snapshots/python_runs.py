"""Snapshots of this server's own Python runs: their layout, and the one writer of them.

They live in Mastra's collection under a `workflow_name` of their own (Mastra never
resumes them), with Mastra's top-level fields, so the snapshot collection stays the one
source of truth for every run and the run index can be rebuilt from it:

    {
      "workflow_name": "suspended-runs.python-agent",
      "run_id": "...", "resourceId": "...", "createdAt": <date>, "updatedAt": <date>,
      "snapshot": {
        "layout": 1,
        "status": "suspended",
        "agentId": "...", "threadId": "...", "resourceId": "...",
        "toolCalls": [{"toolCallId", "toolName", "args", "requiresApproval",
                       "suspendPayload", "decision": null | {"action", "by", "at", ...}}],
        "messages": [...]          # pydantic-ai's message history (ModelMessagesTypeAdapter, JSON)
      }
    }

`updatedAt` is when the run suspended; recording a decision does not change it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.snapshots.extraction import extract_entry
from suspended_runs.storage.types import PYTHON_RUN_WORKFLOW, Document

LAYOUT = 1


def _of(run_id: str) -> Document:
    """The filter that finds one Python run's snapshot (Mastra's unique key)."""
    return {"workflow_name": PYTHON_RUN_WORKFLOW, "run_id": run_id}


class PythonSnapshots:
    def __init__(self, collection: AsyncCollection[Document]) -> None:
        self.collection = collection

    async def put(self, entry: RunEntry, messages: list[Any]) -> Any:
        """Write the snapshot of a run that just suspended; returns its `_id`."""
        doc = await self.collection.find_one_and_update(
            _of(entry.run_id),
            {
                "$set": {
                    "resourceId": entry.resource_id,
                    "updatedAt": entry.suspended_at,
                    "snapshot": {
                        "layout": LAYOUT,
                        "status": "suspended",
                        "agentId": entry.agent_id,
                        "threadId": entry.thread_id,
                        "resourceId": entry.resource_id,
                        "startedBy": entry.started_by,
                        "toolCalls": [call.to_document() for call in entry.tool_calls],
                        "messages": messages,
                    },
                },
                "$setOnInsert": {"createdAt": entry.created_at},
            },
            projection={"_id": 1},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        return doc["_id"] if doc else None

    async def messages(self, run_id: str) -> list[Any] | None:
        doc = await self.collection.find_one(
            _of(run_id),
            {"snapshot.messages": 1},
        )
        messages = (doc or {}).get("snapshot", {}).get("messages")
        return messages if isinstance(messages, list) else None

    async def record_decisions(self, entry: RunEntry) -> None:
        """Copy the entry's decisions into the snapshot, so they survive a lost index."""
        await self.collection.update_one(
            _of(entry.run_id),
            {"$set": {"snapshot.toolCalls": [call.to_document() for call in entry.tool_calls]}},
        )

    async def mark_failed(self, run_id: str) -> None:
        """Keep a failed run's snapshot for inspection, no longer suspended."""
        await self.collection.update_one(
            _of(run_id),
            {"$set": {"snapshot.status": "failed"}},
        )

    async def undecided(self, run_id: str) -> RunEntry | None:
        """Clear the decisions a snapshot holds (an operator released the run); the run's
        entry as the snapshot now says, or None when it has no suspended snapshot."""
        doc = await self.collection.find_one({**_of(run_id), "snapshot.status": "suspended"})
        entry = extract_entry(doc) if doc else None
        if entry is None:
            return None
        calls = [replace(call, decision=None) for call in entry.tool_calls]
        # The whole array, not `toolCalls.$[].decision`: the portable form of the update.
        await self.collection.update_one(
            _of(run_id), {"$set": {"snapshot.toolCalls": [c.to_document() for c in calls]}}
        )
        return replace(entry, tool_calls=tuple(calls))

    async def delete(self, run_id: str) -> None:
        await self.collection.delete_one(_of(run_id))
