"""approveToolCall, declineToolCall, resumeRun: a decision, recorded once, continued once.

The decision is written with one conditional update on the run's index entry (its
version as read): of any number of concurrent requests, one wins and the others look
again and answer AlreadyDecided or RunNotSuspended. The decision that leaves no call
pending also claims the run, and only the claim holder continues it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from resolvers.access import Role
from resolvers.context import Context
from resolvers.errors import BadUserInput
from resolvers.outcomes import (
    AlreadyDecided,
    DecisionOutcome,
    ExecutorUnavailable,
    Forbidden,
    InvalidResumeData,
    RunDecided,
    RunNotFound,
    RunNotSuspended,
    ToolCallNotFound,
    WrongSuspensionKind,
    decode,
    encode,
    kind,
)
from runtime import InvalidResumeData as ResumeDataRejected
from runtime import MastraUnavailable
from storage import Action, AuditRecord, Claim, Decision, RunEntry, RunStatus, Runtime, ToolCall

_ATTEMPTS = 50
"""Lost races before giving up: each loss means another decision on this run was recorded."""
_IDEMPOTENT_WAIT = 120.0


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    action: Action
    run_id: str
    tool_call_id: str | None = None
    reason: str | None = None
    resume_data: Any = None
    idempotency_key: str | None = None
    wait: bool = True

    def fingerprint(self) -> str:
        """What makes two requests the same request (the key and `wait` aside)."""
        body = [self.action.value, self.run_id, self.tool_call_id, self.reason, self.resume_data]
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


async def decide(context: Context, request: DecisionRequest) -> DecisionOutcome:
    if not context.principal.may(Role.APPROVER):
        return Forbidden(Role.APPROVER.value, "deciding needs the approver role")
    log = context.storage.decisions
    key = request.idempotency_key
    if key is not None:
        key = f"{context.principal.subject}\x00{key}"  # each caller's keys are their own
        earlier = await _earlier_answer(context, request, key)
        if earlier is not None:
            return earlier
    try:
        outcome = await _decide(context, request)
    except BaseException:
        if key is not None:
            await log.release_key(key)
        raise
    if key is not None:
        await log.store_answer(key, encode(outcome))
    await log.record(
        AuditRecord(
            run_id=request.run_id,
            tool_call_id=_call_id_of(outcome) or request.tool_call_id,
            action=request.action.value,
            by=context.actor,
            at=context.runtime.clock(),
            outcome=kind(outcome),
            reason=request.reason,
            resume_data=request.resume_data,
            idempotency_key=request.idempotency_key,
        )
    )
    return outcome


async def _earlier_answer(
    context: Context, request: DecisionRequest, key: str
) -> DecisionOutcome | None:
    log = context.storage.decisions
    for _ in range(3):  # a first caller that failed lets the key go; then take it over
        use = await log.take_key(key, request.fingerprint(), context.runtime.clock())
        if use is None:
            return None
        if use.request_hash != request.fingerprint():
            raise BadUserInput(
                "this idempotencyKey was used for a different request",
                argument="input.idempotencyKey",
            )
        answer = use.answer or await log.wait_for_answer(key, _IDEMPOTENT_WAIT)
        if answer is not None:
            outcome: DecisionOutcome = decode(answer)
            return outcome
    raise RuntimeError("an idempotency key kept changing hands")


async def _decide(context: Context, request: DecisionRequest) -> DecisionOutcome:
    runs, runtime = context.storage.runs, context.runtime
    for _ in range(_ATTEMPTS):
        now = runtime.clock()
        entry = await runs.get(request.run_id)
        if entry is None or not context.principal.scope.allows(entry):
            return RunNotFound(request.run_id, f"no run {request.run_id}")
        status = entry.status_at(now)
        if status is not RunStatus.SUSPENDED:
            return RunNotSuspended(
                entry.run_id, status, f"run {entry.run_id} is {status.value}, not SUSPENDED"
            )
        mastra = entry.runtime is Runtime.MASTRA
        if not (context.mastra.serves if mastra else runtime.has_agent)(entry.agent_id):
            return ExecutorUnavailable(
                entry.run_id,
                entry.agent_id,
                f"no runtime here can continue runs of {entry.runtime.value} agent "
                f"{entry.agent_id!r}",
            )
        call = _pick_call(entry, request.tool_call_id)
        if call is None:
            return ToolCallNotFound(
                entry.run_id,
                request.tool_call_id or "",
                f"run {entry.run_id} has no tool call {request.tool_call_id}",
            )
        call_id = call.tool_call_id or ""
        wrong = _kind_mismatch(request.action, call)
        if wrong is not None:
            return WrongSuspensionKind(entry.run_id, call_id, call.requires_approval, wrong)
        if call.decision is not None:
            return AlreadyDecided(
                entry.run_id,
                call_id,
                call.decision,
                f"tool call {call_id} was already decided: {call.decision.action.value}",
            )
        if request.action is Action.RESUME and not mastra:  # Mastra checks its own schemas
            try:
                runtime.resume_value(entry, call, request.resume_data)
            except ResumeDataRejected as exc:
                return InvalidResumeData(entry.run_id, call_id, str(exc))
        decision = Decision(
            action=request.action,
            by=context.actor,
            at=now,
            reason=request.reason,
            resume_data=request.resume_data,
        )
        decided = entry.with_decision(call_id, decision)
        # Mastra takes each decision at once (it asks parallel approvals one at a time);
        # a Python run is continued when its last pending call is decided.
        last = mastra or not decided.pending_calls()
        claim = Claim(runtime.instance_id, now, now + runtime.lease) if last else None
        if not await runs.apply_decision(entry, decided, claim):
            continue  # another decision on this run got there first: look again
        decided = replace(decided, version=entry.version + 1)
        if mastra:
            assert claim is not None
            return await _continue_mastra(context, request, entry, decided, claim, call_id)
        await context.storage.python_snapshots.record_decisions(decided)
        if claim is None:
            return RunDecided(decided, call_id)
        claimed = replace(decided, status=RunStatus.RUNNING, claim=claim)
        if not request.wait:
            runtime.continue_in_background(claimed)
            return RunDecided(claimed, call_id)
        # Shielded: a client that hangs up does not stop a continuation half-way.
        return RunDecided(await asyncio.shield(runtime.continue_run(claimed)), call_id)
    raise RuntimeError(f"could not record a decision on run {request.run_id}: too much contention")


async def _continue_mastra(
    context: Context,
    request: DecisionRequest,
    seen: RunEntry,
    decided: RunEntry,
    claim: Claim,
    call_id: str,
) -> DecisionOutcome:
    claimed = replace(decided, status=RunStatus.RUNNING, claim=claim)
    if not request.wait:
        context.mastra.continue_in_background(claimed, seen, call_id)
        return RunDecided(claimed, call_id)
    try:
        after = await asyncio.shield(context.mastra.continue_run(claimed, seen, call_id))
    except MastraUnavailable as exc:
        return ExecutorUnavailable(seen.run_id, seen.agent_id, str(exc))
    return RunDecided(after, call_id)


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


def _kind_mismatch(action: Action, call: ToolCall) -> str | None:
    if action is Action.RESUME and call.requires_approval:
        return f"tool call {call.tool_call_id} waits for approval: approve or decline it"
    if action is not Action.RESUME and not call.requires_approval:
        return f"tool call {call.tool_call_id} waits for resume data (suspend()): resume it"
    return None


def _call_id_of(outcome: Any) -> str | None:
    value = getattr(outcome, "tool_call_id", None)
    return value if isinstance(value, str) and value else None
