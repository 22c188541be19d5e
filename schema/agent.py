"""`Agent` and `DecisionRecord`: who can be filtered by, and what was decided by whom."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from suspended_runs import resolvers, storage
from suspended_runs.schema.node import Node


@strawberry.type(description="An agent a dashboard can filter by.")
class Agent:
    id: strawberry.ID
    runtime: storage.Runtime
    suspended_runs: int = strawberry.field(description="Its runs in the SUSPENDED state.")

    @classmethod
    def from_summary(cls, summary: resolvers.AgentSummary) -> Agent:
        return cls(
            id=strawberry.ID(summary.agent_id),
            runtime=summary.runtime,
            suspended_runs=summary.suspended_runs,
        )


@strawberry.enum(
    description="What an audit record records: a decision, an operator action, or what a "
    "reviewer did (a review, a hand-over, a note: `reason` says until when, to whom, which "
    "note)."
)
class AuditAction(enum.Enum):
    APPROVE = "approve"
    DECLINE = "decline"
    RESUME = "resume"
    RELEASE = "release"
    CANCEL = "cancel"
    START_REVIEW = "start_review"
    END_REVIEW = "end_review"
    ASSIGN = "assign"
    ADD_NOTE = "add_note"
    DELETE_NOTE = "delete_note"


@strawberry.type(description="The audit record of one decision asked of this server.")
class DecisionRecord(Node):
    run_id: strawberry.ID
    tool_call_id: str | None
    action: AuditAction
    decided_by: str = strawberry.field(description="The credential (key:, jwt:) it came with.")
    person: str = strawberry.field(
        description="The person behind decidedBy (Viewer.person); in records written before "
        "people were recorded, read through today's mapping."
    )
    decided_at: datetime
    reason: str | None
    resume_data: JSON | None
    edited_args: JSON | None = strawberry.field(
        description="Arguments approved instead of the model's (its own stay in toolCalls)."
    )
    idempotency_key: str | None
    outcome: str = strawberry.field(
        description="The answer's type: RunDecided, AlreadyDecided, ...; `Applied` while the "
        "decision is applied and its continuation has not answered yet."
    )
    cursor: str = strawberry.field(description="This record's place, for `after`.")
    run_status: storage.RunStatus | None = strawberry.field(
        description="Where the run came to rest after this decision; null until known."
    )

    @classmethod
    def from_record(cls, record: storage.AuditRecord) -> DecisionRecord:
        return cls(
            id=strawberry.ID(resolvers.record_node_id(record.record_id)),
            run_id=strawberry.ID(record.run_id),
            tool_call_id=record.tool_call_id,
            action=AuditAction(record.action),
            edited_args=record.edited_args,
            decided_by=record.by,
            person=record.person or record.by,
            decided_at=record.at,
            reason=record.reason,
            resume_data=record.resume_data,
            idempotency_key=record.idempotency_key,
            outcome=record.outcome,
            cursor=resolvers.record_cursor(record),
            run_status=storage.RunStatus(record.run_status) if record.run_status else None,
        )
