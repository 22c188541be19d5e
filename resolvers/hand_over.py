"""`assignRun`: a run handed to a colleague ("you know this customer").

A hand-over adds people (`person:<name>`, `key:<name>`, `jwt:<sub>`) or groups
(`group:<name>`) to the run's assignees, beside what its review policy names, for all its
pending calls: they see the run in `assignedTo` and `assignedToMe`, and may decide its
calls as a policy's reviewers may. Any well-formed name is accepted: tokens have no
directory to check names against. An admin hands any run over; an approver only the run
they review, and only if they may decide every one of its pending calls (a hand-over
passes on no more than its giver holds), which ends their review: the colleague takes it
from there.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput, DecisionContention
from suspended_runs.resolvers.outcomes import (
    AssignOutcome,
    Forbidden,
    NotAReviewer,
    RunAssigned,
    RunNotSuspended,
    kind,
)
from suspended_runs.resolvers.people import canonical
from suspended_runs.resolvers.review_policies import check_reviewer
from suspended_runs.resolvers.reviewing import ATTEMPTS, may_decide, record, run_for
from suspended_runs.storage import RunEntry, RunStatus

MOST_ASSIGNEES = 20
"""Names a run may be handed to, in all."""


async def assign_run(context: Context, run_id: str, to: list[str]) -> AssignOutcome:
    """Hand the run to `to` as well (those it was handed to before stay)."""
    named = _checked(to)
    for _ in range(ATTEMPTS):
        entry = await run_for(context, run_id, "handing a run over")
        if not isinstance(entry, RunEntry):
            return entry
        now = context.runtimes.claims.clock()
        refused = _not_to_hand_over(context, entry, now)
        if refused is not None:
            return refused
        assignees = (*entry.assignees, *(n for n in named if n not in entry.assignees))
        if len(assignees) > MOST_ASSIGNEES:
            raise BadUserInput(
                f"a run is handed to at most {MOST_ASSIGNEES} names", argument="input.to"
            )
        review = entry.reviewed_at(now)
        ends = review is not None and review.person == context.person
        if assignees == entry.assignees and not ends:
            return RunAssigned(entry)
        if await context.storage.runs.reviews.hand_over(entry, assignees, now, end_review=ends):
            kept = entry.review if not ends else None
            handed = replace(entry, assignees=assignees, review=kept, version=entry.version + 1)
            outcome = RunAssigned(handed)
            await record(context, "assign", run_id, kind(outcome), ", ".join(named))
            return outcome
    raise DecisionContention(f"could not hand run {run_id} over")


def _checked(to: list[str]) -> tuple[str, ...]:
    """The names as compared, each once; BAD_USER_INPUT naming the first that is not one."""
    if not 1 <= len(to) <= MOST_ASSIGNEES:
        raise BadUserInput(f"name 1 to {MOST_ASSIGNEES} people or groups", argument="input.to")
    named: list[str] = []
    for name in to:
        try:
            check_reviewer(name)
        except ValueError as exc:
            raise BadUserInput(str(exc), argument="input.to") from None
        if canonical(name) not in named:
            named.append(canonical(name))
    return tuple(named)


def _not_to_hand_over(
    context: Context, entry: RunEntry, now: datetime
) -> RunNotSuspended | Forbidden | NotAReviewer | None:
    status = entry.status_at(now)
    if status is not RunStatus.SUSPENDED:
        message = f"run {entry.run_id} is {status.value}: only a waiting run is handed over"
        return RunNotSuspended(entry.run_id, status, message, entry)
    if context.principal.may(Role.ADMIN):
        return None
    review = entry.reviewed_at(now)
    if review is None or review.person != context.person:
        message = "handing a run over needs the admin role, or its review (startReview)"
        return Forbidden(Role.ADMIN.value, message)
    for call in entry.pending_calls():
        if not may_decide(context, entry, call, now):
            message = f"a review policy names other reviewers of {call.tool_call_id}"
            return NotAReviewer(entry.run_id, call.tool_call_id or "", message, entry)
    return None


def with_hand_over(names: list[str], entry: RunEntry) -> list[str]:
    """Who a pending call is assigned to: its policy's `names`, then whom its run was
    handed to."""
    return names + [name for name in entry.assignees if name not in names]
