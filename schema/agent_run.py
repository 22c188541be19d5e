"""`AgentRun` and `AgentRunToolCall`: a run waiting for a person, and what it waits on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader
from strawberry.scalars import JSON

from suspended_runs import resolvers, storage
from suspended_runs.resolvers.hand_over import with_hand_over
from suspended_runs.resolvers.review_policies import ReviewPolicy
from suspended_runs.schema.conversation import RunMessage
from suspended_runs.schema.node import Node
from suspended_runs.schema.run_notes import RunNote, notes_of

RunStatus = strawberry.enum(
    storage.RunStatus,
    description=(
        "Where a run stands: SUSPENDED (waiting for decisions), RUNNING (being continued), "
        "COMPLETED, FAILED, ENDED (left the suspended state elsewhere), STALLED (RUNNING, "
        "but the process continuing it stopped renewing its lease; not re-run by itself)."
    ),
)
Runtime = strawberry.enum(
    storage.Runtime,
    description="What continues a run: a Python agent here, a Mastra server, or a LangGraph graph.",
)
DecisionAction = strawberry.enum(
    storage.Action, name="DecisionAction", description="What was decided on a tool call."
)


@strawberry.type(description="An approval recorded before a review policy's quorum.")
class Approval:
    by: str = strawberry.field(description="The credential it was made with.")
    at: datetime
    person: str = strawberry.field(
        description="The person it counts for (Viewer.person), read through today's mapping."
    )


async def _recorded(
    info: strawberry.Info[resolvers.Context, Any], call: AgentRunToolCall
) -> storage.CallApprovals | None:
    """The approvals recorded of a pending call under a quorum (read once a request for all
    the runs that ask); None without a quorum."""
    policy = call._policy(info)
    if policy is None or policy.approvals < 2 or call.decision is not None:
        return None
    loaders, approvals = info.context.loaders, info.context.storage.approvals
    loader = loaders.get("approvals")
    if loader is None:

        async def load(run_ids: list[str]) -> list[dict[tuple[str, str], Any]]:
            found = await approvals.of_runs(run_ids)
            return [found for _ in run_ids]

        loader = loaders["approvals"] = DataLoader(load_fn=load)
    found = await loader.load(call.run.run_id)
    recorded: storage.CallApprovals | None = found.get((call.run.run_id, call.tool_call_id))
    return recorded


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
class AgentRunToolCall(Node):
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
    run: strawberry.Private[storage.RunEntry]

    @property
    def agent_id(self) -> str:
        return self.run.agent_id

    @property
    def waiting_since(self) -> datetime | None:
        """When its run suspended, while the run waits."""
        return self.run.suspended_at if self.run.status is storage.RunStatus.SUSPENDED else None

    def _policy(self, info: strawberry.Info[resolvers.Context, Any]) -> ReviewPolicy | None:
        """The review policy that governs this call, if any."""
        return info.context.policy.reviews.match(self.agent_id, self.tool_name)

    @strawberry.field(
        description="When this pending approval is declined unless decided (a review "
        "policy's decisionTimeoutSeconds, else the agent's DECISION_TIMEOUTS, else "
        "DECISION_TIMEOUT_SECONDS); null: never, or not pending."
    )
    def expires_at(self, info: strawberry.Info[resolvers.Context, Any]) -> datetime | None:
        if self.decision is not None or not self.requires_approval:
            return None
        return info.context.policy.deadline(self.agent_id, self.waiting_since, self.tool_name)

    @strawberry.field(
        description="Lower-case hex SHA-256 of the arguments to approve (`editedArgs` when "
        "set, else `args`) in RFC 8785 canonical JSON: send it as expectedArgsHash."
    )
    async def args_hash(self, info: strawberry.Info[resolvers.Context, Any]) -> str:
        recorded = await _recorded(info, self)
        return recorded.args_hash if recorded else storage.args_hash(self.args)

    @strawberry.field(
        description="Arguments an approver edited under a review policy's quorum: what the "
        "next approvals approve and the tool runs with; null: the model's `args`."
    )
    async def edited_args(self, info: strawberry.Info[resolvers.Context, Any]) -> JSON | None:
        recorded = await _recorded(info, self)
        return recorded.args if recorded and recorded.edited else None

    @strawberry.field(description="The approvals recorded so far of the arguments as they are.")
    async def approvals(self, info: strawberry.Info[resolvers.Context, Any]) -> list[Approval]:
        recorded = await _recorded(info, self)
        people = info.context.people
        counted = recorded.counted(people.person_of) if recorded else ()
        return [Approval(by=a.by, at=a.at, person=people.person_of(a.by)) for a in counted]

    @strawberry.field(description="Distinct approvals a review policy asks (1 without one).")
    def approvals_required(self, info: strawberry.Info[resolvers.Context, Any]) -> int:
        policy = self._policy(info)
        return policy.approvals if policy and self.requires_approval else 1

    @strawberry.field(description="How many more approvals continue the run (0: decided).")
    async def approvals_needed(self, info: strawberry.Info[resolvers.Context, Any]) -> int:
        if self.decision is not None:
            return 0
        recorded = await _recorded(info, self)
        counted = len(recorded.counted(info.context.people.person_of)) if recorded else 0
        return max(self.approvals_required(info) - counted, 0)

    @strawberry.field(
        description="Whether a client asks the person to confirm before approving this "
        "pending approval: a review policy marks its tool `destructive`, or "
        "CONFIRM_EVERY_APPROVAL is set. Advice to clients: the API itself asks nothing more."
    )
    def confirm_approval(self, info: strawberry.Info[resolvers.Context, Any]) -> bool:
        if self.decision is not None or not self.requires_approval:
            return False
        return info.context.policy.confirms(self.agent_id, self.tool_name)

    @strawberry.field(
        description="Who a review policy asks to decide this call, as written (subjects and "
        "group:<name>), escalation included, then whom the run was handed to (assignRun); "
        "empty: any approver in scope."
    )
    def assigned_to(self, info: strawberry.Info[resolvers.Context, Any]) -> list[str]:
        if self.decision is not None:
            return []
        policy = self._policy(info)
        names = policy.assigned_to(self.waiting_since, datetime.now(UTC)) if policy else []
        return with_hand_over(names, self.run)

    @classmethod
    def from_entry(
        cls, call: storage.ToolCall, entry: storage.RunEntry, position: int
    ) -> AgentRunToolCall:
        return cls(
            id=strawberry.ID(resolvers.call_node_id(entry, call, position)),
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            requires_approval=call.requires_approval,
            suspend_payload=call.suspend_payload,
            decision=ToolCallDecision.from_decision(call.decision) if call.decision else None,
            run=entry,
        )


@strawberry.type(description="An agent run, as the run index holds it.")
class AgentRun(Node):
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
    error: str | None = strawberry.field(
        description="Why a FAILED run failed, or why a CANCELLED run was cancelled."
    )
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
    entry: strawberry.Private[storage.RunEntry]

    @strawberry.field(
        description="The run's last messages, oldest first (at most 100), as its snapshot "
        "keeps them: why the agent asks. Empty once the snapshot is gone (a finished run). "
        "Each run that selects it costs one snapshot read, a row of MAX_ROWS_PER_REQUEST."
    )
    async def messages(
        self, info: strawberry.Info[resolvers.Context, Any], last: int = 20
    ) -> list[RunMessage]:
        found = await resolvers.run_messages(info.context, self.entry, last)
        return [RunMessage.from_stored(message) for message in found]

    @strawberry.field(
        description="Whether a runtime here can continue the run: false, and a client "
        "offers no decision (notContinuableReason says why)."
    )
    def continuable(self, info: strawberry.Info[resolvers.Context, Any]) -> bool:
        return resolvers.not_continuable_reason(info.context, self.entry) is None

    @strawberry.field(description="Why no runtime here can continue the run; null: one can.")
    def not_continuable_reason(self, info: strawberry.Info[resolvers.Context, Any]) -> str | None:
        return resolvers.not_continuable_reason(info.context, self.entry)

    started_by: str | None = strawberry.field(
        description="Who started the run (startRun's caller; a Mastra run's request context "
        "at REVIEW_STARTER_CONTEXT_KEY); null: not known, and forbidSelfApproval cannot "
        "apply to it."
    )

    @strawberry.field(description="The person reviewing the run now (startReview); null: nobody.")
    def in_review_by(self) -> str | None:
        review = self.entry.reviewed_at(datetime.now(UTC))
        return review.person if review else None

    @strawberry.field(description="When the review of the run ends; null: nobody reviews it.")
    def in_review_until(self) -> datetime | None:
        review = self.entry.reviewed_at(datetime.now(UTC))
        return review.until if review else None

    @strawberry.field(
        description="The run's last notes (addRunNote), oldest first (at most 100): plain "
        "text, to be shown as text."
    )
    async def notes(
        self, info: strawberry.Info[resolvers.Context, Any], last: int = 20
    ) -> list[RunNote]:
        return await notes_of(info, self.entry, last)

    @classmethod
    def from_entry(cls, entry: storage.RunEntry) -> AgentRun:
        outcome = entry.outcome
        return cls(
            id=strawberry.ID(resolvers.run_node_id(entry.run_id)),
            run_id=strawberry.ID(entry.run_id),
            agent_id=strawberry.ID(entry.agent_id),
            runtime=entry.runtime,
            status=entry.status_at(datetime.now(UTC)),
            thread_id=entry.thread_id,
            resource_id=entry.resource_id,
            created_at=entry.created_at,
            suspended_at=entry.suspended_at,
            tool_calls=[
                AgentRunToolCall.from_entry(c, entry, i) for i, c in enumerate(entry.tool_calls)
            ],
            output=outcome.output if outcome else None,
            error=outcome.error if outcome else None,
            outcome_unknown=entry.outcome_unknown,
            decided_at=entry.decided_at,
            decided_by=entry.decided_by,
            problems=list(entry.problems),
            started_by=entry.started_by,
            entry=entry,
        )
