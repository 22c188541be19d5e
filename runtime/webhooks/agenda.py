"""The agenda: the deliveries due now, read from the database as they come due and kept
until an attempt of each is begun.

The embedded server reads every match of a query, whatever its limit (docs/design.md,
"Lists on the embedded server"): a query for all that is due would cost the whole backlog
at every step. So the agenda reads only what came due since its last read (a range of
`nextAttemptAt`, which the deliverer's own writes always fall in: a delivery made, a
retry's time, one released), and reads everything due only when it starts delivering, when
an admin changed webhooks or redelivered, and now and then, for what it could not see
coming (another instance's clock).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from suspended_runs.storage.events.deliveries import Delivery

_READ_SLACK = timedelta(milliseconds=1)
"""BSON keeps milliseconds: a read from its last bound less this misses nothing written
in that last millisecond (what it reads again it already holds)."""


class Agenda:
    def __init__(self) -> None:
        self._due: dict[str, dict[str, Delivery]] = {}
        """By webhook, by delivery."""
        self._unsorted: set[str] = set()
        self.read_up_to: datetime | None = None
        """Everything due by then was read (None: read all that is due next)."""

    def __len__(self) -> int:
        return sum(len(due) for due in self._due.values())

    def read_from(self) -> datetime | None:
        """Where the next read starts (None: all that is due)."""
        return None if self.read_up_to is None else self.read_up_to - _READ_SLACK

    def add(self, deliveries: Iterable[Delivery]) -> None:
        for delivery in deliveries:
            self._due.setdefault(delivery.webhook_id, {})[delivery.delivery_id] = delivery
            self._unsorted.add(delivery.webhook_id)

    def replace(self, deliveries: Iterable[Delivery]) -> None:
        """All that is due, as read just now."""
        self._due = {}
        self.add(deliveries)

    def remove(self, delivery: Delivery) -> None:
        due = self._due.get(delivery.webhook_id, {})
        due.pop(delivery.delivery_id, None)
        if not due:
            self._due.pop(delivery.webhook_id, None)

    def keep_only(self, webhook_ids: set[str]) -> None:
        self._due = {w: due for w, due in self._due.items() if w in webhook_ids}

    def webhooks(self) -> list[str]:
        return list(self._due)

    def of(self, webhook_id: str) -> Iterator[Delivery]:
        """A webhook's due deliveries in the order of their events (their ids)."""
        due = self._due.get(webhook_id, {})
        if webhook_id in self._unsorted:
            due = self._due[webhook_id] = dict(sorted(due.items()))
            self._unsorted.discard(webhook_id)
        yield from list(due.values())
