"""`releaseRun` and `cancelRun`: what an operator does with a run that is stuck.

A STALLED run (its process died while continuing it) or one whose outcome is unknown (a
decision's answer was lost) is never re-run by itself: re-running a tool twice is worse
than asking a person. An admin may release it, back to SUSPENDED with its pending calls
read again from its snapshot (accepting that a tool may run again); an approver may
cancel a SUSPENDED or STALLED run, so that its pending tools never run, unless another
person reviews it (an admin's cancellation goes ahead). Both are audited.
"""

from __future__ import annotations

from dataclasses import replace

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.outcomes import (
    CancelOutcome,
    ExecutorUnavailable,
    Forbidden,
    OutcomeUnknown,
    ReleaseOutcome,
    RunCancelled,
    RunNotFound,
    RunReleased,
    WrongRunStatus,
    kind,
)
from suspended_runs.resolvers.reviewing import record, run_for
from suspended_runs.resolvers.run_reviews import held_off
from suspended_runs.runtime import NotApplied, OutcomeUncertain
from suspended_runs.storage import Outcome, RunEntry, RunStatus, deadlines

_CANCEL_ATTEMPTS = 3


async def release_run(context: Context, run_id: str, reason: str | None) -> ReleaseOutcome:
    entry = await _run_for(context, run_id, reason, Role.ADMIN, "releasing a run")
    if not isinstance(entry, RunEntry):
        return entry
    status = entry.status_at(context.runtimes.claims.clock())
    if status is not RunStatus.STALLED and not entry.outcome_unknown:
        return WrongRunStatus(
            run_id,
            status,
            f"run {run_id} is {status.value}: only a STALLED run, or one "
            "whose outcome is unknown, can be released",
            entry,
        )
    after = await context.runtimes.for_run(entry).release(entry)
    if not await context.storage.runs.claims.settle_seen(entry, after):
        return await _moved_on(context, run_id, status, "changed meanwhile")
    outcome = RunReleased(replace(after, version=entry.version + 1))
    await _audit(context, "release", run_id, reason, kind(outcome))
    return outcome


async def cancel_run(context: Context, run_id: str, reason: str | None) -> CancelOutcome:
    taken = await _take_to_cancel(context, run_id, reason)
    if not isinstance(taken, tuple):
        return taken
    entry, claimed = taken
    outcome = await _cancel(context, entry, claimed, reason or "cancelled by an operator")
    await _audit(context, "cancel", run_id, reason, kind(outcome))
    return outcome


async def _take_to_cancel(
    context: Context, run_id: str, reason: str | None
) -> tuple[RunEntry, RunEntry] | CancelOutcome:
    """The run as seen and as claimed for its cancellation. A cancellation means the run as
    it is now, whatever its pending calls: an entry that moved on meanwhile while still
    cancellable (Mastra writes a snapshot twice as it suspends) is read and taken again."""
    claims = context.runtimes.claims
    for _ in range(_CANCEL_ATTEMPTS):
        entry = await _run_for(context, run_id, reason, Role.APPROVER, "cancelling a run")
        if not isinstance(entry, RunEntry):
            return entry
        status = entry.status_at(claims.clock())
        if status not in (RunStatus.SUSPENDED, RunStatus.STALLED):
            return WrongRunStatus(
                run_id,
                status,
                f"run {run_id} is {status.value}: only a SUSPENDED or STALLED run can be cancelled",
                entry,
            )
        if not context.principal.may(Role.ADMIN):  # an admin's cancellation ignores reviews
            held = held_off(context, entry, None, claims.clock(), force=False)
            if held is not None:
                return held
        claim = claims.new_claim(claims.clock())
        if await context.storage.runs.claims.take_over(entry, claim):
            version = entry.version + 1
            return entry, replace(entry, status=RunStatus.RUNNING, claim=claim, version=version)
    return await _moved_on(context, run_id, status, "keeps changing")


async def _cancel(
    context: Context, seen: RunEntry, claimed: RunEntry, reason: str
) -> CancelOutcome:
    claims = context.runtimes.claims
    try:
        async with claims.kept(claimed.run_id):
            runtime = context.runtimes.for_run(claimed)
            after = await deadlines.handed_on(runtime.cancel(claimed, reason))
    except NotApplied as exc:
        await claims.settle(seen)  # nothing reached the runtime: as it was
        return ExecutorUnavailable(seen.run_id, seen.agent_id, str(exc))
    except OutcomeUncertain as exc:
        current = await context.storage.runs.get(seen.run_id)
        return OutcomeUnknown(current or claimed, f"{exc}: the cancellation may be under way")
    if after.status is RunStatus.CANCELLED:  # who and why, on the run itself
        at = claims.clock()
        after = replace(
            after, decided_by=context.actor, decided_at=at, outcome=Outcome(error=reason)
        )
    await claims.settle(after)
    return RunCancelled(replace(after, version=claimed.version + 1))


async def _moved_on(
    context: Context, run_id: str, status: RunStatus, how: str
) -> WrongRunStatus | RunNotFound:
    """The answer when a run moved on under an operator's action, with the run as it is."""
    current = await context.storage.runs.get(run_id)
    if current is None:
        return RunNotFound(run_id, f"no run {run_id}")
    return WrongRunStatus(run_id, status, f"run {run_id} {how}: look again", current)


async def _run_for(
    context: Context, run_id: str, reason: str | None, role: Role, doing: str
) -> RunEntry | Forbidden | RunNotFound:
    """The run an operator acts on, or why they cannot (a run out of scope is not found)."""
    context.budget.limits.check_text(reason, "reason")
    return await run_for(context, run_id, doing, role)


async def _audit(
    context: Context, action: str, run_id: str, reason: str | None, outcome: str
) -> None:
    await record(context, action, run_id, outcome, reason)
