"""`AgentRun` and `AgentRunToolCall`: a run waiting for a person, and what it waits on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from suspended_runs import resolvers, storage

RunStatus = strawberry.enum(
    storage.RunStatus,
    description=(
        "Where a run stands: SUSPENDED (waiting for decisions), RUNNING (being continued), "
        "COMPLETED, FAILED, ENDED (left the suspended state elsewhere), STALLED (RUNNING, "
        "but the process continuing it stopped renewing its lease; not re-run by itself)."
    ),
)
Runtime = strawberry.enum(
    storage.Runtime, description="What continues a run: a Python agent here, or a Mastra server."
)
DecisionAction = strawberry.enum(
    storage.Action, name="DecisionAction", description="What was decided on a tool call."
)


@strawberry.type(description="A decision recorded on a tool call.")
class ToolCallDecision:
    action: storage.Action
    decided_by: str
    decided_at: datetime
    reason: str | None
    resume_data: JSON | None
    edited_args: JSON | None = strawberry.field(
        description="Arguments approved instead of the model's `args`."
    )

    @classmethod
    def from_decision(cls, decision: storage.Decision) -> ToolCallDecision:
        return cls(
            action=decision.action,
            decided_by=decision.by,
            decided_at=decision.at,
            reason=decision.reason,
            resume_data=decision.resume_data,
            edited_args=decision.edited_args,
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
    decision: ToolCallDecision | None = strawberry.field(
        description="Null while the call is pending."
    )
    agent_id: strawberry.Private[str]
    waiting_since: strawberry.Private[datetime | None]

    @strawberry.field(
        description="When this pending approval is declined unless decided (the agent's "
        "DECISION_TIMEOUTS, else DECISION_TIMEOUT_SECONDS); null: never, or not pending."
    )
    def expires_at(self, info: strawberry.Info[resolvers.Context, Any]) -> datetime | None:
        if self.decision is not None or not self.requires_approval:
            return None
        return info.context.policy.deadline(self.agent_id, self.waiting_since)

    @classmethod
    def from_entry(cls, call: storage.ToolCall, entry: storage.RunEntry) -> AgentRunToolCall:
        return cls(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            requires_approval=call.requires_approval,
            suspend_payload=call.suspend_payload,
            decision=ToolCallDecision.from_decision(call.decision) if call.decision else None,
            agent_id=entry.agent_id,
            waiting_since=entry.suspended_at
            if entry.status is storage.RunStatus.SUSPENDED
            else None,
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
    output: JSON | None = strawberry.field(description="What a COMPLETED run returned.")
    error: str | None = strawberry.field(description="Why a FAILED run failed.")
    outcome_unknown: bool = strawberry.field(
        description="A decision on this run may or may not have been applied (its answer was "
        "lost): no other decision is forwarded until its snapshot shows where it went."
    )
    decided_at: datetime | None = strawberry.field(description="When its last decision was made.")
    decided_by: str | None = strawberry.field(description="Who made its last decision.")
    problems: list[str] = strawberry.field(
        description="What of its snapshot could not be read, each read as null (empty: "
        "none); `runs(filter: {hasProblems: true})` lists such runs."
    )

    @classmethod
    def from_entry(cls, entry: storage.RunEntry) -> AgentRun:
        outcome = entry.outcome
        return cls(
            run_id=strawberry.ID(entry.run_id),
            agent_id=strawberry.ID(entry.agent_id),
            runtime=entry.runtime,
            status=entry.status_at(datetime.now(UTC)),
            thread_id=entry.thread_id,
            resource_id=entry.resource_id,
            created_at=entry.created_at,
            suspended_at=entry.suspended_at,
            tool_calls=[AgentRunToolCall.from_entry(call, entry) for call in entry.tool_calls],
            output=outcome.output if outcome else None,
            error=outcome.error if outcome else None,
            outcome_unknown=entry.outcome_unknown,
            decided_at=entry.decided_at,
            decided_by=entry.decided_by,
            problems=list(entry.problems),
        )
