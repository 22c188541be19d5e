"""Approvals that expire: a pending approval past its timeout (DECISION_TIMEOUT_SECONDS,
or DECISION_TIMEOUTS per agent) is declined with the reason "expired after N s", as the
system, through the same path as any decision: once, whichever instance gets there
first (the others replay its answer under the same idempotency key), and audited.

Only approvals expire: a suspend() call cannot be declined (it waits for data).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from suspended_runs.resolvers.access import Principal, Role, Scope
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.decisions import DecisionRequest, decide
from suspended_runs.resolvers.outcomes import RunDecided
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.runtime import Runtimes
from suspended_runs.storage import Action, RunEntry, Storage, ToolCall
from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

SYSTEM = Principal(subject="system", role=Role.ADMIN, scope=Scope.ALL)
"""Who declines what expired, in the audit log."""
EXPIRY_REASON = "expired after "
"""How an expiry's reason begins (then its timeout in seconds): decisionStats tells them apart."""
_BATCH = 100


async def expire_forever(
    storage: Storage, runtimes: Runtimes, policy: DecisionPolicy, every: float = 1.0
) -> None:
    """Decline what expired, every `every` seconds, until cancelled."""
    context = Context(storage, runtimes, SYSTEM, actor=SYSTEM.subject, policy=policy)
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
    now = context.runtimes.claims.clock()
    declined = 0
    for entry in await with_deadlines(context.storage, context.policy, before=now):
        declined += await _decline_expired(context, entry, now)
    return declined


async def with_deadlines(
    storage: Storage, policy: DecisionPolicy, before: datetime, after: datetime | None = None
) -> list[RunEntry]:
    """SUSPENDED runs that may have a pending approval whose deadline is at or before
    `before` (and after `after`): one ask per timeout a call may have, so that a batch
    is never crowded by runs of a longer one."""
    claims, found = storage.runs.claims, dict[str, RunEntry]()
    for ask in policy.timeouts_asked():
        entries = await claims.suspended_before(
            before - ask.timeout,
            agent_ids=ask.agent_ids,
            exclude_agent_ids=ask.excluded_agent_ids,
            since=after - ask.timeout if after is not None else None,
            limit=_BATCH,
        )
        found.update((entry.run_id, entry) for entry in entries)
    return list(found.values())


def deadline_of(policy: DecisionPolicy, entry: RunEntry, call: ToolCall) -> datetime | None:
    """When a pending approval expires; None: never, or not an approval."""
    if not call.requires_approval or call.decision is not None:
        return None
    return policy.deadline(entry.agent_id, entry.suspended_at, call.tool_name)


async def _decline_expired(context: Context, entry: RunEntry, now: datetime) -> int:
    declined = 0
    for call in entry.pending_calls():
        deadline = deadline_of(context.policy, entry, call)
        if deadline is None or deadline > now:
            continue
        timeout = context.policy.timeout_of(entry.agent_id, call.tool_name)
        assert timeout is not None
        request = DecisionRequest(
            Action.DECLINE,
            entry.run_id,
            call.tool_call_id,
            reason=f"{EXPIRY_REASON}{timeout.total_seconds():g} s",
            idempotency_key=f"expiry:{entry.run_id}:{call.tool_call_id}",
            wait=False,
            expiry=True,
        )
        outcome = await decide(context, request)
        if isinstance(outcome, RunDecided):
            declined += 1
            at = context.runtimes.claims.clock()
            await context.storage.outbox.add([events.expired(outcome.run, call.tool_call_id, at)])
    return declined
