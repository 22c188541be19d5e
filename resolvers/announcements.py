"""Events no step writes as it happens: runs that stalled, approvals about to expire or
escalated by their review policy; and the events a step wrote with its change but had no
time to move to the outbox.

A sweep every second finds them, on the instance that delivers webhooks (so only while
one exists); an event's key makes the outbox hold it once, should two instances both
believe they lead for a moment.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from suspended_runs.resolvers.expiry import deadline_of, with_deadlines
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.storage import RunEntry, RunStatus, Storage
from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

_KEYS_KEPT = 10_000
_RELAY_SLACK = timedelta(minutes=1)
"""Between this clock and the database's, which stamps `changedAt`."""
_ESCALATION_BATCH = 1000
_ESCALATION_LOOKBACK = timedelta(hours=1)
"""How far back a first beat (a start, a new leader) looks for escalations it missed."""


class Announcer:
    def __init__(
        self,
        storage: Storage,
        policy: DecisionPolicy,
        expiring: timedelta,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        self.storage = storage
        self.leading = leading
        """Whether this instance sweeps now."""
        self.policy = policy
        self.expiring = expiring
        self._relayed_since: datetime | None = None
        """Entries changed since then are looked at for events left in them (None: all)."""
        self._escalated_until: dict[str, datetime] = {}
        """Per policy, the suspensions looked at for escalation: each beat looks at those
        that crossed its escalateAfterSeconds since."""
        self._written: OrderedDict[str, None] = OrderedDict()
        """Keys this instance wrote lately: not written again every second."""

    async def forever(self, every: float = 1.0) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.announce_due(datetime.now(UTC))
            except Exception as exc:  # the database may be down: try again next beat
                if cancelled_meanwhile():
                    raise asyncio.CancelledError from exc
                log.warning("announcing failed", extra={"errorType": type(exc).__name__})

    async def announce_due(self, now: datetime) -> int:
        """Write the events due now; how many were new here."""
        if not self.leading() or not await self.storage.outbox.active():
            self._relayed_since = None  # a leader again looks at every entry once
            return 0
        relayed, whole = await self.storage.runs.claims.relay_unannounced(self._relayed_since)
        if whole:
            self._relayed_since = now - _RELAY_SLACK
        due = [
            events.stalled(entry, now)
            for entry in await self.storage.runs.claims.claimed()
            if entry.status_at(now) is RunStatus.STALLED
        ]
        due += [events.expiring(entry, now) for entry in await self._expiring(now)]
        due += await self._escalated(now)
        fresh = [event for event in due if event.key not in self._written]
        written = await self.storage.outbox.add(fresh)
        for event in fresh:
            self._written[event.key] = None
        while len(self._written) > _KEYS_KEPT:
            self._written.popitem(last=False)
        return relayed + written

    async def _expiring(self, now: datetime) -> list[RunEntry]:
        """SUSPENDED runs with a pending approval whose deadline is within `expiring` (those
        past it are the expiry's: left out, they never crowd a batch)."""
        found = await with_deadlines(self.storage, self.policy, now + self.expiring, after=now)
        return [
            entry
            for entry in found
            if any(
                (deadline := deadline_of(self.policy, entry, call)) is not None
                and now < deadline <= now + self.expiring
                for call in entry.pending_calls()
            )
        ]

    async def _escalated(self, now: datetime) -> list[events.RunEvent]:
        """approval.escalated of the pending approvals that waited past a policy's
        escalateAfterSeconds since the last beat (an hour back at the first)."""
        due: list[events.RunEvent] = []
        for policy in self.policy.reviews.policies:
            if policy.escalate_after is None:
                continue
            cutoff = now - policy.escalate_after
            since = self._escalated_until.get(policy.place, cutoff - _ESCALATION_LOOKBACK)
            entries = await self.storage.runs.claims.suspended_before(
                cutoff,
                agent_ids=None if policy.agent_id == "*" else [policy.agent_id],
                since=since,
                limit=_ESCALATION_BATCH,
            )
            if len(entries) < _ESCALATION_BATCH:
                self._escalated_until[policy.place] = cutoff
            elif entries[-1].suspended_at is not None:  # the rest at the next beat
                self._escalated_until[policy.place] = entries[-1].suspended_at
            for entry in entries:
                due += [
                    events.escalated(entry, call.tool_call_id, now)
                    for call in entry.pending_calls()
                    if call.requires_approval
                    and self.policy.reviews.match(entry.agent_id, call.tool_name) is policy
                ]
        return due
