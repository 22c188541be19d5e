"""Run-index entries: the compact, query-ready form of one run.

Plain slotted dataclasses rather than pydantic models: a page of 50 runs with 10 tool
calls each is built on every poll, and construction cost is the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storage.types import Document, RunStatus, Runtime


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool_call_id: str | None
    tool_name: str | None
    requires_approval: bool
    args: Any = None
    suspend_payload: Any = None

    def to_document(self) -> Document:
        return {
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "args": self.args,
            "requiresApproval": self.requires_approval,
            "suspendPayload": self.suspend_payload,
        }

    @classmethod
    def from_document(cls, doc: Document) -> ToolCall:
        return cls(
            tool_call_id=doc.get("toolCallId"),
            tool_name=doc.get("toolName"),
            requires_approval=bool(doc.get("requiresApproval")),
            args=doc.get("args"),
            suspend_payload=doc.get("suspendPayload"),
        )


@dataclass(frozen=True, slots=True)
class RunEntry:
    run_id: str
    workflow_name: str
    runtime: Runtime
    agent_id: str
    status: RunStatus
    created_at: datetime
    suspended_at: datetime | None
    thread_id: str | None = None
    resource_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = field(default=())
    snapshot_id: Any = None
    """The snapshot document's `_id`: a delete event carries only that."""
    version: int = 0
    ended_at: datetime | None = None

    def to_document(self) -> Document:
        return {
            "runId": self.run_id,
            "workflowName": self.workflow_name,
            "runtime": self.runtime.value,
            "agentId": self.agent_id,
            "status": self.status.value,
            "createdAt": self.created_at,
            "suspendedAt": self.suspended_at,
            "threadId": self.thread_id,
            "resourceId": self.resource_id,
            "toolCalls": [call.to_document() for call in self.tool_calls],
            "snapshotId": self.snapshot_id,
            "version": self.version,
            "endedAt": self.ended_at,
        }

    @classmethod
    def from_document(cls, doc: Document) -> RunEntry:
        return cls(
            run_id=doc["runId"],
            workflow_name=doc.get("workflowName", ""),
            runtime=Runtime(doc.get("runtime", Runtime.MASTRA.value)),
            agent_id=doc["agentId"],
            status=RunStatus(doc["status"]),
            created_at=doc["createdAt"],
            suspended_at=doc.get("suspendedAt"),
            thread_id=doc.get("threadId"),
            resource_id=doc.get("resourceId"),
            tool_calls=tuple(ToolCall.from_document(c) for c in doc.get("toolCalls") or ()),
            snapshot_id=doc.get("snapshotId"),
            version=int(doc.get("version", 0)),
            ended_at=doc.get("endedAt"),
        )
