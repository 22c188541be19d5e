"""What reviews, hand-overs and notes share (resolvers/run_reviews.py, hand_over.py,
notes.py): the run a reviewer acts on, who may decide its calls, and the audit log's
record of what they did (an operator's too, resolvers/operators.py)."""

from __future__ import annotations

from datetime import datetime

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.outcomes import Forbidden, RunNotFound
from suspended_runs.resolvers.review_policies import compared
from suspended_runs.storage import AuditRecord, RunEntry, ToolCall

ATTEMPTS = 20
"""Lost races before a review, hand-over or note gives up: each loss means the run's entry
changed meanwhile."""


async def run_for(
    context: Context, run_id: str, doing: str, role: Role = Role.APPROVER
) -> RunEntry | RunNotFound | Forbidden:
    """The run a caller of `role` acts on, or why they cannot (a run out of scope is not
    found)."""
    if not context.principal.may(role):
        return Forbidden(role.value, f"{doing} needs the {role.value} role")
    entry = await context.storage.runs.get(run_id)
    if entry is None or not context.principal.scope.allows(entry):
        return RunNotFound(run_id, f"no run {run_id}")
    return entry


async def record(
    context: Context, action: str, run_id: str, outcome: str, reason: str | None
) -> None:
    """The audit log's record of what a reviewer did (a review, a hand-over, a note) or an
    operator (a release, a cancellation)."""
    await context.storage.decisions.record(
        AuditRecord(
            run_id=run_id,
            tool_call_id=None,
            action=action,
            by=context.actor,
            at=context.runtimes.claims.clock(),
            outcome=outcome,
            reason=reason,
            person=context.person,
        )
    )


def handed_to_caller(context: Context, entry: RunEntry) -> bool:
    """Whether the run was handed to the caller (its credential, person or a group)."""
    return bool(entry.assignees) and bool(context.principal.names & compared(entry.assignees))


def may_decide(context: Context, entry: RunEntry, call: ToolCall, now: datetime) -> bool:
    """Whether the caller may decide `call`: its review policy names them (or anyone), or
    the run was handed to them."""
    policy = context.policy.reviews.match(entry.agent_id, call.tool_name)
    if policy is None or policy.allows(context.principal.names, entry.suspended_at, now):
        return True
    return handed_to_caller(context, entry)
