"""approveToolCall, declineToolCall, resumeRun: a decision, recorded once, continued once.

The decision is written with one conditional update on the run's index entry (its
version as read): of any number of concurrent requests, one wins and the others look
again and answer AlreadyDecided or RunNotSuspended. The decision that leaves no call
pending also claims the run, and only the claim holder continues it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from suspended_runs.resolvers.access import Role
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput, DecisionContention
from suspended_runs.resolvers.idempotency import answered_once
from suspended_runs.resolvers.outcomes import (
    AlreadyDecided,
    ArgsNotEditable,
    DecisionOutcome,
    ExecutorUnavailable,
    Forbidden,
    InvalidArgs,
    InvalidResumeData,
    OutcomeUnknown,
    RunDecided,
    RunNotFound,
    RunNotSuspended,
    ToolCallNotFound,
    WrongSuspensionKind,
    kind,
)
from suspended_runs.resolvers.reviews import Proceed, review
from suspended_runs.resolvers.run_reviews import held_off
from suspended_runs.runtime import (
    AgentRuntime,
    ArgsRejected,
    Continuation,
    NotApplied,
    OutcomeUncertain,
    ResumeDataRejected,
)
from suspended_runs.runtime.metrics import DECISIONS, TIME_TO_DECISION
from suspended_runs.storage import (
    Action,
    AuditRecord,
    Decision,
    RunEntry,
    RunFacts,
    RunStatus,
    ToolCall,
    database_fault,
    deadlines,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

_ATTEMPTS = 50
"""Lost races before giving up: each loss means another decision on this run was recorded."""
_APPLIED = "Applied"
"""An audit record's outcome from when its decision is applied until its answer is known."""


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    action: Action
    run_id: str
    tool_call_id: str | None = None
    reason: str | None = None
    resume_data: Any = None
    idempotency_key: str | None = None
    wait: bool = True
    edited_args: Any = None
    expected_args_hash: str | None = None
    """The call's argsHash as the decider saw it: when it is not the call's now, nothing
    is applied (StaleDecision)."""
    by_expiry: bool = False
    """Made by the approval's expiry: `approval.expired` is written with the claim, and no
    review puts it off."""
    force: bool = False
    """Decide although another person reviews the run (resolvers/run_reviews.py)."""

    def fingerprint(self) -> str:
        """What makes two requests the same request (the key and `wait` aside)."""
        body = [
            self.action.value,
            self.run_id,
            self.tool_call_id,
            self.reason,
            self.resume_data,
            self.edited_args,
            self.expected_args_hash,
        ]
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


async def decide(context: Context, request: DecisionRequest) -> DecisionOutcome:
    limits = context.budget.limits
    limits.check_text(request.reason, "reason")
    limits.check_json(request.resume_data, "resumeData")
    limits.check_json(request.edited_args, "editedArgs")
    if not context.principal.may(Role.APPROVER):
        return Forbidden(Role.APPROVER.value, "deciding needs the approver role")
    outcome: DecisionOutcome = await answered_once(
        context,
        request.idempotency_key,
        request.fingerprint(),
        request.run_id,
        lambda: _decide(context, request),
    )
    DECISIONS.labels(outcome=kind(outcome)).inc()
    return outcome


async def _decide(context: Context, request: DecisionRequest) -> DecisionOutcome:
    """Look at the run, and record the decision with one conditional update; a lost race
    means another decision on this run was recorded first, so look again."""
    for _ in range(_ATTEMPTS):
        entry = await context.storage.runs.get(request.run_id)
        if entry is None or not context.principal.scope.allows(entry):
            # Not audited: a refusal about a run the caller cannot see is not written under it.
            return RunNotFound(request.run_id, f"no run {request.run_id}")
        runtime = context.runtimes.for_run(entry)
        now = context.runtimes.claims.clock()
        looked = _look(entry, runtime, request, now)
        if isinstance(looked, ToolCall) and not request.by_expiry:
            looked = held_off(context, entry, looked, now, force=request.force) or looked
        if not isinstance(looked, ToolCall):
            await _audit(context, request, now, _call_id_of(looked), kind(looked))
            return looked
        reviewed = await review(
            context,
            entry,
            looked,
            request.action,
            request.expected_args_hash,
            request.edited_args,
            now,
        )
        if reviewed is None:
            continue  # another approval or edit of this call came first: look again
        if not isinstance(reviewed, Proceed):
            await _audit(context, request, now, _call_id_of(reviewed), kind(reviewed))
            return reviewed
        if reviewed.edited_args is not None:  # a quorum's: what its approvers approved
            request = replace(request, edited_args=reviewed.edited_args)
        applied = await _apply(context, request, entry, runtime, looked, now)
        if applied is not None:
            return applied
    raise DecisionContention(f"could not record a decision on run {request.run_id}")


async def _apply(
    context: Context,
    request: DecisionRequest,
    entry: RunEntry,
    runtime: AgentRuntime,
    call: ToolCall,
    now: datetime,
) -> DecisionOutcome | None:
    """Record the decision on the entry as it was seen, and carry it on; None when another
    decision on the run was recorded first."""
    call_id = call.tool_call_id or ""
    decided = entry.with_decision(call_id, _decision(context, request, now))
    last = runtime.continues_now(decided, call_id)
    claim = context.runtimes.claims.new_claim(now) if last else None
    # A database failure here (a deadline passed, the reply was lost) raises: nothing was
    # forwarded, so the caller is told the database is unavailable, not an outcome.
    claims = context.storage.runs.claims
    if not await claims.apply_decision(entry, decided, claim, expired=request.by_expiry):
        return None
    decided = replace(decided, version=entry.version + 1)
    try:
        record_id = await _audit_applied(context, request, entry, call, now)
        await runtime.record_decision(decided)
    except Exception as exc:
        if not database_fault(exc):
            raise
        # Recorded, maybe claimed, and not continued: not continued without its record.
        return _in_doubt(entry, "the decision was recorded but not continued", exc)
    if claim is None:
        await _read_or_none(
            context.storage.decisions.add_outcome(record_id, "RunDecided", decided.status)
        )
        return RunDecided(decided, call_id)
    claimed = replace(decided, status=RunStatus.RUNNING, claim=claim)
    continuation = Continuation(claimed, entry, call_id)
    if not request.wait:
        context.runtimes.background.spawn(_carry_on(context, continuation, record_id))
        return RunDecided(claimed, call_id)
    # Shielded: a client that hangs up does not stop a continuation half-way.
    return await deadlines.handed_on(_carry_on(context, continuation, record_id), shielded=True)


async def _audit_applied(
    context: Context, request: DecisionRequest, entry: RunEntry, call: ToolCall, now: datetime
) -> Any:
    """The applied decision's audit record, with what decisionStats times it by."""
    facts = RunFacts(
        entry.agent_id,
        call.tool_name,
        entry.thread_id,
        entry.resource_id,
        entry.created_at,
        entry.suspended_at,
    )
    if entry.suspended_at is not None:
        TIME_TO_DECISION.observe(max((now - entry.suspended_at).total_seconds(), 0.0))
    return await _audit(context, request, now, call.tool_call_id, _APPLIED, facts)


def _decision(context: Context, request: DecisionRequest, now: datetime) -> Decision:
    return Decision(
        request.action,
        context.actor,
        now,
        request.reason,
        request.resume_data,
        request.edited_args,
    )


async def _carry_on(
    context: Context, continuation: Continuation, record_id: Any
) -> DecisionOutcome:
    """Continue the claimed run; the answer, which the audit record also gets. What the
    database failed to tell shows the run as it was read before the claim."""
    claimed, call_id = continuation.claimed, continuation.tool_call_id
    seen = continuation.seen
    outcome: DecisionOutcome
    try:
        after = await context.runtimes.for_run(claimed).continue_run(continuation)
        outcome = RunDecided(after, call_id)
    except NotApplied as exc:
        outcome = ExecutorUnavailable(claimed.run_id, claimed.agent_id, str(exc))
    except OutcomeUncertain as exc:
        current = await _read_or_none(context.storage.runs.get(claimed.run_id))
        outcome = OutcomeUnknown(
            current or seen,
            f"{exc}: the decision may or may not have been applied; the run stays claimed "
            "until its snapshot shows where it went, and is STALLED if it never moves",
        )
    except Exception as exc:
        if not database_fault(exc):
            raise
        outcome = _in_doubt(seen, "the database failed while the run was continued", exc)
    run = getattr(outcome, "run", None)
    status = run.status_at(context.runtimes.claims.clock()) if run else None
    await _read_or_none(context.storage.decisions.add_outcome(record_id, kind(outcome), status))
    return outcome


def _in_doubt(run: RunEntry, what: str, exc: BaseException) -> OutcomeUnknown:
    """The answer when a database failure hides how far a decision got, with `run` as
    last read (it may not be current)."""
    log.warning("a decision's outcome is unknown", exc_info=exc, extra={"runId": run.run_id})
    return OutcomeUnknown(
        run,
        f"{what}: whether it was applied is not known here. A claimed run is settled from "
        "its snapshot once the database is back, and is STALLED if it never moves; "
        "look at the run before deciding again",
    )


async def _read_or_none(work: Awaitable[T]) -> T | None:
    """`work`, or None when the database fails it: for what only adds to an answer."""
    try:
        return await work
    except Exception as exc:
        if not database_fault(exc):
            raise
        log.warning("the database failed a step after a decision", exc_info=exc)
        return None


async def _audit(
    context: Context,
    request: DecisionRequest,
    at: datetime,
    call_id: str | None,
    outcome: str,
    run: RunFacts | None = None,
) -> Any:
    return await context.storage.decisions.record(
        AuditRecord(
            run_id=request.run_id,
            tool_call_id=call_id or request.tool_call_id,
            action=request.action.value,
            by=context.actor,
            at=at,
            outcome=outcome,
            reason=request.reason,
            resume_data=request.resume_data,
            idempotency_key=request.idempotency_key,
            edited_args=request.edited_args,
            run=run,
            person=context.person,
        )
    )


def _look(
    entry: RunEntry, runtime: AgentRuntime, request: DecisionRequest, now: datetime
) -> ToolCall | DecisionOutcome:
    """The pending call that `request` decides, or why it cannot be decided."""
    status = entry.status_at(now)
    if status is not RunStatus.SUSPENDED:
        return RunNotSuspended(
            entry.run_id, status, f"run {entry.run_id} is {status.value}, not SUSPENDED", entry
        )
    if not runtime.serves(entry.agent_id):
        return ExecutorUnavailable(
            entry.run_id,
            entry.agent_id,
            f"no runtime here can continue runs of {entry.runtime.value} agent {entry.agent_id!r}",
        )
    call = _pick_call(entry, request.tool_call_id)
    if call is None:
        return ToolCallNotFound(
            entry.run_id,
            request.tool_call_id or "",
            f"run {entry.run_id} has no tool call {request.tool_call_id}",
            entry,
        )
    return _refusal(entry, runtime, call, request) or call


def _refusal(
    entry: RunEntry, runtime: AgentRuntime, call: ToolCall, request: DecisionRequest
) -> DecisionOutcome | None:
    """Why this call cannot take this decision, if it cannot."""
    call_id = call.tool_call_id or ""
    wrong = runtime.suspension_mismatch(call, request.action)
    if wrong is not None:
        return WrongSuspensionKind(entry.run_id, call_id, call.requires_approval, wrong, entry)
    if call.decision is not None:
        return AlreadyDecided(
            entry.run_id,
            call_id,
            call.decision,
            f"tool call {call_id} was already decided: {call.decision.action.value}",
            entry,
        )
    if request.action is Action.RESUME:
        try:
            runtime.check_resume_data(entry, call, request.resume_data)
        except ResumeDataRejected as exc:
            return InvalidResumeData(entry.run_id, call_id, str(exc), entry)
    if request.edited_args is not None:
        return _args_refusal(entry, runtime, call, request.edited_args)
    return None


def _args_refusal(
    entry: RunEntry, runtime: AgentRuntime, call: ToolCall, args: Any
) -> DecisionOutcome | None:
    call_id = call.tool_call_id or ""
    if not runtime.edits(call):
        message = f"{entry.runtime.value} runs take no edited arguments: approve or decline"
        if runtime.capabilities.edits_args:
            message = f"tool call {call_id} allows no edit of its arguments: approve or decline"
        return ArgsNotEditable(entry.run_id, call_id, message, entry)
    try:
        runtime.check_edited_args(entry, call, args)
    except ArgsRejected as exc:
        return InvalidArgs(entry.run_id, call_id, str(exc), entry)
    return None


def _pick_call(entry: RunEntry, tool_call_id: str | None) -> ToolCall | None:
    if tool_call_id is not None:
        return next((c for c in entry.tool_calls if c.tool_call_id == tool_call_id), None)
    pending = entry.pending_calls()
    if len(pending) != 1:
        raise BadUserInput(
            f"run {entry.run_id} has {len(pending)} pending tool calls: name one with toolCallId",
            argument="input.toolCallId",
        )
    return pending[0]


def _call_id_of(outcome: Any) -> str | None:
    value = getattr(outcome, "tool_call_id", None)
    return value if isinstance(value, str) and value else None
