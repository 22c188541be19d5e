"""Begun ahead: deliveries whose attempts are recorded before a slot is free, posted as
slots free without waiting for the deliverer's next step.

A receiver that answers at once is bound not by its slots but by the writes that begin
each attempt, a few at a time, between the steps that turn new events into deliveries.
So a webhook whose receiver answered its last attempt with 2xx at once may have up to
`depth` more deliveries begun, in the same write as the others (or as their deliveries
are made); they wait here, in memory, and each is posted when one of its webhook's
attempts ends. The per-webhook, per-creator and total slots still bound what is posted.

What begins ahead is recorded like any attempt, held until a time past its timeout: a
crash loses nothing (the attempt is made again after the hold), and one that waited so
long that its hold would pass before its attempt could end is not posted here but left
for its attempt to be taken back: recorded as never made, due again at once. So is all
that waits for a webhook whose receiver stops answering at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime

from suspended_runs.storage.events.deliveries import Delivery
from suspended_runs.storage.events.webhooks import Webhook

FAST_SECONDS = 0.25
"""An answer within this is "at once": its webhook may have deliveries begun ahead."""


@dataclass(frozen=True, slots=True)
class Begun:
    """A delivery whose attempt is recorded, held until `until`, waiting for a slot."""

    delivery: Delivery
    webhook: Webhook
    until: datetime


class Ahead:
    def __init__(self, depth: int) -> None:
        self.depth = depth
        self._waiting: dict[str, deque[Begun]] = {}
        self._ids: set[str] = set()
        self._fast: set[str] = set()
        """Webhooks whose receiver answered their last attempt with 2xx at once."""

    def __len__(self) -> int:
        return len(self._ids)

    def room(self, webhook_id: str) -> int:
        """How many more deliveries of `webhook_id` may be begun ahead of its slots."""
        if webhook_id not in self._fast:
            return 0
        return max(0, self.depth - len(self._waiting.get(webhook_id, ())))

    def answered(self, webhook_id: str, at_once: bool) -> None:
        """An attempt of `webhook_id` ended: answered with 2xx at once, or not."""
        if at_once:
            self._fast.add(webhook_id)
        else:
            self._fast.discard(webhook_id)

    def add(self, begun: Begun) -> None:
        self._waiting.setdefault(begun.webhook.webhook_id, deque()).append(begun)
        self._ids.add(begun.delivery.delivery_id)

    def heads(self) -> list[Begun]:
        """The first waiting delivery of each webhook, in the order they were begun."""
        return [waiting[0] for waiting in self._waiting.values()]

    def pop(self, webhook_id: str) -> Begun:
        waiting = self._waiting[webhook_id]
        begun = waiting.popleft()
        self._ids.discard(begun.delivery.delivery_id)
        if not waiting:
            del self._waiting[webhook_id]
        return begun

    def drop(self, webhook_id: str) -> list[Begun]:
        """All that waits for `webhook_id`, taken out."""
        waiting = self._waiting.pop(webhook_id, deque())
        self._ids -= {b.delivery.delivery_id for b in waiting}
        return list(waiting)

    def holds(self, delivery_id: str) -> bool:
        return delivery_id in self._ids

    def keep_only(self, webhook_ids: set[str]) -> None:
        """Forget what waits for webhooks deleted or disabled (their deliveries are given up)."""
        self._waiting = {w: q for w, q in self._waiting.items() if w in webhook_ids}
        self._ids = {b.delivery.delivery_id for q in self._waiting.values() for b in q}
        self._fast &= webhook_ids
