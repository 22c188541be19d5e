"""Events no step writes as it happens: runs that stalled, and approvals about to expire;
and the events a step wrote with its change but had no time to move to the outbox.

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

from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.storage import RunEntry, RunStatus, Storage
from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

_BATCH = 100
_KEYS_KEPT = 10_000


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
            return 0
        relayed = await self.storage.runs.claims.relay_unannounced()
        due = [
            events.stalled(entry, now)
            for entry in await self.storage.runs.claims.claimed()
            if entry.status_at(now) is RunStatus.STALLED
        ]
        due += [events.expiring(entry, now) for entry in await self._expiring(now)]
        fresh = [event for event in due if event.key not in self._written]
        written = await self.storage.outbox.add(fresh)
        for event in fresh:
            self._written[event.key] = None
        while len(self._written) > _KEYS_KEPT:
            self._written.popitem(last=False)
        return relayed + written

    async def _expiring(self, now: datetime) -> list[RunEntry]:
        """SUSPENDED runs with a pending approval whose deadline is within `expiring`."""
        claims, policy, soon = self.storage.runs.claims, self.policy, now + self.expiring
        found: list[RunEntry] = []
        # Those past their deadline are the expiry's: left out, they never crowd a batch.
        for agent, timeout in policy.agent_timeouts.items():
            found += await claims.suspended_before(
                soon - timeout, agent_ids=[agent], since=now - timeout, limit=_BATCH
            )
        if policy.timeout is not None:
            others = sorted(policy.agent_timeouts)
            found += await claims.suspended_before(
                soon - policy.timeout,
                exclude_agent_ids=others,
                since=now - policy.timeout,
                limit=_BATCH,
            )
        return [
            entry
            for entry in found
            if any(call.requires_approval for call in entry.pending_calls())
            and (deadline := policy.deadline(entry.agent_id, entry.suspended_at)) is not None
            and deadline > now
        ]
