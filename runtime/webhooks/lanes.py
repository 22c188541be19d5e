"""Lanes: a run's deliveries to one webhook, attempted one at a time, in the order of the
run's events (docs/webhooks.md, "In order per run").

A lane's head is its delivery under way or waiting for a retry. A later delivery of the
lane waits behind it: held back to the head's retry (so no step reads it before), and
released, due at once, when the head is done. Nothing else waits for a lane.

Kept in memory by the instance that delivers: read from the deliveries that are not due
when it starts delivering (or after a write it cannot be sure of), then changed only by its
own attempts, since nothing else makes a delivery wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from suspended_runs.storage.events.deliveries import Delivery, Waiting

Lane = tuple[str, str]
"""A webhook's id and a run's id."""


@dataclass(slots=True)
class Head:
    delivery_id: str
    retry_at: datetime | None
    """When it is attempted again; None while an attempt of it is under way."""
    behind: set[str] = field(default_factory=set)
    """The lane's later deliveries, held back until it is done."""


class Lanes:
    def __init__(self) -> None:
        self._heads: dict[Lane, Head] = {}

    def read(self, waiting: list[Waiting]) -> None:
        """Start again from the deliveries that wait: the first of each lane is its head
        (under way or waiting for its retry), the others wait behind it."""
        heads: dict[Lane, Head] = {}
        for found in sorted(waiting, key=lambda w: w.delivery_id):
            lane = (found.webhook_id, found.run_id)
            if lane in heads:
                heads[lane].behind.add(found.delivery_id)
            else:
                heads[lane] = Head(found.delivery_id, found.until)
        self._heads = heads

    def ahead_of(self, delivery: Delivery) -> Head | None:
        """The head `delivery` waits behind, if its lane has an earlier one."""
        head = self._heads.get((delivery.webhook_id, delivery.run_id))
        if head is None or head.delivery_id >= delivery.delivery_id:
            return None
        return head

    def busy(self, lane: Lane) -> bool:
        """Whether a delivery heads `lane`: under way or waiting for its retry."""
        return lane in self._heads

    def started(self, delivery: Delivery) -> None:
        """An attempt of `delivery` is under way: it heads its lane (a redelivered earlier
        one takes the place of the head it finds, which then waits behind it)."""
        lane = (delivery.webhook_id, delivery.run_id)
        head = self._heads.get(lane)
        behind = set() if head is None else head.behind
        if head is not None and head.delivery_id != delivery.delivery_id:
            behind.add(head.delivery_id)
        self._heads[lane] = Head(delivery.delivery_id, None, behind)

    def ended(self, delivery: Delivery, retry_at: datetime | None) -> list[str]:
        """An attempt of `delivery` ended: to be made again at `retry_at` (the lane waits
        for it), or done (None: delivered or failed); the deliveries this releases."""
        lane = (delivery.webhook_id, delivery.run_id)
        head = self._heads.get(lane)
        if head is None or head.delivery_id != delivery.delivery_id:
            return []
        if retry_at is not None:
            head.retry_at = retry_at
            return []
        del self._heads[lane]
        return sorted(head.behind)

    def keep_only(self, webhook_ids: set[str]) -> None:
        """Forget the lanes of webhooks deleted or disabled (their deliveries are given up)."""
        self._heads = {lane: h for lane, h in self._heads.items() if lane[0] in webhook_ids}
