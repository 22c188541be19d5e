"""`startReview`, `endReview`: a person looking at a waiting run, so that others see it.

A review is not a claim (docs/design.md, glossary): it holds nothing, and is kept in a
field of its own on the entry (storage/index/reviews.py). While it lasts, a decision by
another person answers `InReviewByOther` (who, until when) unless it says `force: true`,
and under a review policy with `strictReviews` even then; a cancellation by an approver
who is not an admin answers the same. The approval's expiry goes on as ever. A review
ends when its time is up, with `endReview` (its reviewer, or an admin), or when a decision
or a cancellation takes the run.

Who may review: an approver in scope who may decide one of the run's pending calls (its
review policy names them, or the run was handed to them): a review by someone who may
decide nothing would only hold others off.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput, DecisionContention
from suspended_runs.resolvers.outcomes import (
    EndReviewOutcome,
    InReviewByOther,
    NotAReviewer,
    ReviewEnded,
    ReviewOutcome,
    ReviewStarted,
    RunNotSuspended,
    kind,
)
from suspended_runs.resolvers.reviewing import ATTEMPTS, may_decide, record, run_for
from suspended_runs.storage import Review, RunEntry, RunStatus, ToolCall

DEFAULT_MINUTES = 15


async def start_review(context: Context, run_id: str, minutes: int) -> ReviewOutcome:
    """Review the run for `minutes` from now (again: the caller's review, extended)."""
    most = context.policy.review_max
    if not 1 <= minutes <= most.total_seconds() / 60:
        raise BadUserInput(
            f"minutes must be between 1 and {most.total_seconds() / 60:g} (REVIEW_MAX_MINUTES)",
            argument="input.minutes",
        )
    for _ in range(ATTEMPTS):
        entry = await run_for(context, run_id, "reviewing a run")
        if not isinstance(entry, RunEntry):
            return entry
        now = context.runtimes.claims.clock()
        refused = _not_to_review(context, entry, now)
        if refused is not None:
            return refused
        current = entry.reviewed_at(now)
        start = current.at if current is not None else now
        review = Review(context.actor, context.person, start, now + timedelta(minutes=minutes))
        if await context.storage.runs.reviews.start(entry, review, announced=current is None):
            outcome = ReviewStarted(replace(entry, review=review, version=entry.version + 1))
            await record(context, "start_review", run_id, kind(outcome), f"until {_iso(review)}")
            return outcome
    raise DecisionContention(f"could not start a review of run {run_id}")


async def end_review(context: Context, run_id: str) -> EndReviewOutcome:
    """End the caller's review of the run (an admin: anyone's); a run nobody reviews is
    answered as it is."""
    for _ in range(ATTEMPTS):
        entry = await run_for(context, run_id, "ending a review")
        if not isinstance(entry, RunEntry):
            return entry
        now = context.runtimes.claims.clock()
        current = entry.reviewed_at(now)
        if current is None:
            return ReviewEnded(entry)
        if current.person != context.person and not context.principal.may(Role.ADMIN):
            return in_review_by_other(entry, current, "only its reviewer or an admin ends it")
        if await context.storage.runs.reviews.end(entry):
            outcome = ReviewEnded(replace(entry, review=None, version=entry.version + 1))
            await record(context, "end_review", run_id, kind(outcome), None)
            return outcome
    raise DecisionContention(f"could not end the review of run {run_id}")


def _not_to_review(
    context: Context, entry: RunEntry, now: datetime
) -> RunNotSuspended | NotAReviewer | InReviewByOther | None:
    status = entry.status_at(now)
    if status is not RunStatus.SUSPENDED:
        message = f"run {entry.run_id} is {status.value}: only a waiting run is reviewed"
        return RunNotSuspended(entry.run_id, status, message, entry)
    pending = entry.pending_calls()
    if not any(may_decide(context, entry, call, now) for call in pending):
        call_id = (pending[0].tool_call_id or "") if pending else ""
        message = f"a review policy names other reviewers of run {entry.run_id}'s calls"
        return NotAReviewer(entry.run_id, call_id, message, entry)
    current = entry.reviewed_at(now)
    if current is not None and current.person != context.person:
        return in_review_by_other(entry, current, "its review ends first")
    return None


def held_off(
    context: Context, entry: RunEntry, call: ToolCall | None, now: datetime, *, force: bool
) -> InReviewByOther | None:
    """Why a decision on `call` (None: a cancellation) waits for another person's review;
    None when it does not: no review by another lasts, or `force` under a policy that is
    not strict."""
    current = entry.reviewed_at(now)
    if current is None or current.person == context.person:
        return None
    policy = context.policy.reviews.match(entry.agent_id, call.tool_name) if call else None
    strict = policy is not None and policy.strict_reviews
    if force and not strict:
        return None
    how = "a review policy allows no force here" if strict else "decide with force: true"
    return in_review_by_other(entry, current, f"wait for it to end, or {how}")


def in_review_by_other(entry: RunEntry, review: Review, then: str) -> InReviewByOther:
    message = f"{review.person} reviews run {entry.run_id} until {_iso(review)}: {then}"
    return InReviewByOther(entry.run_id, review.person, review.until, message, entry)


def _iso(review: Review) -> str:
    return review.until.isoformat().replace("+00:00", "Z")
