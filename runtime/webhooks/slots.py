"""Slots: how many attempts may be under way at once, and which due deliveries take the free
ones.

At most `WEBHOOK_CONCURRENCY` attempts per webhook, at most half of `WEBHOOK_MAX_IN_FLIGHT`
for the webhooks of one creator, and `WEBHOOK_MAX_IN_FLIGHT` in all: an admin's many
webhooks to a receiver that never answers hold half of the slots at most, and the other
half keeps serving everyone else. Free slots go round: each creator in turn, each of a
creator's webhooks in turn, each webhook's deliveries in the order of their events.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

from suspended_runs.storage.events.deliveries import Delivery
from suspended_runs.storage.events.webhooks import Webhook

Candidate = tuple[Delivery, Webhook]


class Slots:
    def __init__(self, per_webhook: int, total: int) -> None:
        self.per_webhook = per_webhook
        self.total = total
        self.per_creator = max(1, total // 2)
        self._holders: dict[str, tuple[str, str]] = {}
        """Each delivery under way: its webhook and that webhook's creator."""
        self._webhooks: Counter[str] = Counter()
        self._creators: Counter[str] = Counter()

    def free(self) -> int:
        return self.total - len(self._holders)

    def room(self, webhook: Webhook) -> int:
        """How many more attempts of `webhook` could start now."""
        own = self.per_webhook - self._webhooks[webhook.webhook_id]
        return min(own, self.per_creator - self._creators[webhook.created_by], self.free())

    def under_way(self, delivery_id: str) -> bool:
        return delivery_id in self._holders

    def take(self, candidates: Iterable[Candidate]) -> list[Candidate]:
        """Of `candidates` (in the order of their events, at most one of a lane), those
        that get a free slot now."""
        queues: dict[str, dict[str, deque[Candidate]]] = {}
        for delivery, webhook in candidates:
            hooks = queues.setdefault(webhook.created_by, {})
            hooks.setdefault(webhook.webhook_id, deque()).append((delivery, webhook))
        webhooks, creators = Counter(self._webhooks), Counter(self._creators)
        taken: list[Candidate] = []
        free = self.free()
        while free > len(taken) and queues:
            for creator in list(queues):
                hooks = queues[creator]
                webhook_id = next(iter(hooks))
                waiting = hooks.pop(webhook_id)
                if creators[creator] < self.per_creator and webhooks[webhook_id] < self.per_webhook:
                    taken.append(waiting.popleft())
                    webhooks[webhook_id] += 1
                    creators[creator] += 1
                    if waiting:
                        hooks[webhook_id] = waiting  # to the back of its creator's line
                if not hooks:
                    del queues[creator]
                if free == len(taken):
                    break
        return taken

    def started(self, delivery_id: str, webhook: Webhook) -> None:
        self._holders[delivery_id] = (webhook.webhook_id, webhook.created_by)
        self._webhooks[webhook.webhook_id] += 1
        self._creators[webhook.created_by] += 1

    def ended(self, delivery_id: str) -> None:
        holder = self._holders.pop(delivery_id, None)
        if holder is not None:
            self._webhooks[holder[0]] -= 1
            self._creators[holder[1]] -= 1
            self._webhooks += Counter()  # drops the zeros
            self._creators += Counter()
