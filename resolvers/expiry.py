"""Approvals that expire: a pending approval past its timeout (DECISION_TIMEOUT_SECONDS,
or DECISION_TIMEOUTS per agent) is declined with the reason "expired after N s", as the
system, through the same path as any decision: once, whichever instance gets there
first (the others replay its answer under the same idempotency key), and audited.

Only approvals expire: a suspend() call cannot be declined (it waits for data).
"""

from __future__ import annotations

import asyncio
import logging

from suspended_runs.resolvers.access import Principal, Role, Scope
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.decisions import DecisionRequest, decide
from suspended_runs.resolvers.outcomes import RunDecided
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.runtime import Runtimes
from suspended_runs.storage import Action, RunEntry, Storage
from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

SYSTEM = Principal(subject="system", role=Role.ADMIN, scope=Scope.ALL)
"""Who declines what expired, in the audit log."""
_BATCH = 100


async def expire_forever(
    storage: Storage, runtimes: Runtimes, policy: DecisionPolicy, every: float = 1.0
) -> None:
    """Decline what expired, every `every` seconds, until cancelled."""
    context = Context(storage, runtimes, SYSTEM, actor="system", policy=policy)
    while True:
        await asyncio.sleep(every)
        try:
            await expire_due(context)
        except Exception as exc:  # the database may be down: try again next beat
            if cancelled_meanwhile():
                raise asyncio.CancelledError from exc
            log.warning("expiring approvals failed", extra={"errorType": type(exc).__name__})


async def expire_due(context: Context) -> int:
    """Decline every pending approval past its deadline; how many were declined here."""
    policy, runs, now = context.policy, context.storage.runs, context.runtimes.claims.clock()
    due: list[RunEntry] = []
    for agent, timeout in policy.agent_timeouts.items():
        due += await runs.claims.suspended_before(now - timeout, agent_ids=[agent], limit=_BATCH)
    if policy.timeout is not None:
        others = sorted(policy.agent_timeouts)
        due += await runs.claims.suspended_before(
            now - policy.timeout, exclude_agent_ids=others, limit=_BATCH
        )
    declined = 0
    for entry in due:
        declined += await _decline_expired(context, entry)
    return declined


async def _decline_expired(context: Context, entry: RunEntry) -> int:
    timeout = context.policy.timeout_of(entry.agent_id)
    assert timeout is not None
    declined = 0
    for call in entry.pending_calls():
        if not call.requires_approval:
            continue
        request = DecisionRequest(
            Action.DECLINE,
            entry.run_id,
            call.tool_call_id,
            reason=f"expired after {timeout.total_seconds():g} s",
            idempotency_key=f"expiry:{entry.run_id}:{call.tool_call_id}",
            wait=False,
        )
        outcome = await decide(context, request)
        if isinstance(outcome, RunDecided):
            declined += 1
            now = context.runtimes.claims.clock()
            await context.storage.outbox.add([events.expired(outcome.run, call.tool_call_id, now)])
    return declined
