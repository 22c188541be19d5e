"""`AgentRun` and `AgentRunToolCall`: a run waiting for a person, and what it waits on."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

import storage

RunStatus = strawberry.enum(
    storage.RunStatus, description="Where a run stands. A run in the suspended list is SUSPENDED."
)
Runtime = strawberry.enum(
    storage.Runtime, description="What continues a run: a Python agent here, or a Mastra server."
)


# Plain attributes, no per-field resolvers: a page is built once, then read as data.
@strawberry.type(description="A tool call the run waits on: an approval, or a suspend().")
class AgentRunToolCall:
    tool_call_id: str | None
    tool_name: str | None
    args: JSON | None = strawberry.field(description="What the model passed (approvals).")
    requires_approval: bool
    suspend_payload: JSON | None = strawberry.field(
        description="What the tool passed to suspend() (suspensions)."
    )

    @classmethod
    def from_entry(cls, call: storage.ToolCall) -> AgentRunToolCall:
        return cls(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            requires_approval=call.requires_approval,
            suspend_payload=call.suspend_payload,
        )


@strawberry.type(description="An agent run, as the run index holds it.")
class AgentRun:
    run_id: strawberry.ID
    agent_id: strawberry.ID
    runtime: storage.Runtime
    status: storage.RunStatus
    thread_id: str | None
    resource_id: str | None
    created_at: datetime
    suspended_at: datetime | None
    tool_calls: list[AgentRunToolCall]

    @classmethod
    def from_entry(cls, entry: storage.RunEntry) -> AgentRun:
        return cls(
            run_id=strawberry.ID(entry.run_id),
            agent_id=strawberry.ID(entry.agent_id),
            runtime=entry.runtime,
            status=entry.status,
            thread_id=entry.thread_id,
            resource_id=entry.resource_id,
            created_at=entry.created_at,
            suspended_at=entry.suspended_at,
            tool_calls=[AgentRunToolCall.from_entry(call) for call in entry.tool_calls],
        )
