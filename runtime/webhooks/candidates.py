"""Candidates: which deliveries may start now, and which of them are posted at once or
begun ahead of a free slot.

Kept apart from the deliverer's loop, which writes what these choose: they read only
what the deliverer holds in memory (the agenda, the lanes, the slots, what waits ahead).
A candidate is the first delivery of its lane (a run's deliveries to one webhook) that
waits for nothing; a webhook gets as many as its slots and its room ahead allow, in the
order of their events.
"""

from __future__ import annotations

from datetime import datetime

from suspended_runs.runtime.webhooks.agenda import Agenda
from suspended_runs.runtime.webhooks.ahead import Ahead
from suspended_runs.runtime.webhooks.lanes import Lanes
from suspended_runs.runtime.webhooks.slots import Candidate, Slots
from suspended_runs.storage.events.deliveries import Delivery
from suspended_runs.storage.events.webhooks import Webhook


def of_new(new: list[Delivery], webhooks: dict[str, Webhook], lanes: Lanes) -> list[Candidate]:
    """Of deliveries just made, those that could start at once: the first of each lane
    that no earlier delivery heads, to a webhook still live."""
    candidates: list[Candidate] = []
    seen = set[tuple[str, str]]()
    for delivery in new:
        webhook = webhooks.get(delivery.webhook_id)
        lane = (delivery.webhook_id, delivery.run_id)
        if webhook is None or webhook.disabled or lane in seen:
            continue
        seen.add(lane)
        if not lanes.busy(lane):
            candidates.append((delivery, webhook))
    return candidates


def of_due(
    agenda: Agenda, webhooks: dict[str, Webhook], lanes: Lanes, room: dict[str, int]
) -> tuple[list[Candidate], dict[datetime, list[Delivery]]]:
    """Of the agenda, each webhook's first deliveries of lanes that wait for nothing, as
    many as `room` gives it; and those that wait behind their lane's retry (each added
    behind that head)."""
    candidates: list[Candidate] = []
    held: dict[datetime, list[Delivery]] = {}
    for webhook_id in agenda.webhooks():
        webhook = webhooks.get(webhook_id)
        if webhook is None or webhook.disabled:
            continue
        left, looked = room.get(webhook_id, 0), set[str]()
        for delivery in agenda.of(webhook_id):
            if left <= 0:
                break
            if delivery.run_id in looked:
                continue
            looked.add(delivery.run_id)
            head = lanes.ahead_of(delivery)
            if head is None:
                candidates.append((delivery, webhook))
                left -= 1
            elif head.retry_at is not None:
                held.setdefault(head.retry_at, []).append(delivery)
                head.behind.add(delivery.delivery_id)
    return candidates, held


def room(webhooks: dict[str, Webhook], slots: Slots, ahead: Ahead) -> dict[str, int]:
    """How many deliveries each live webhook may start: its free slots and room ahead."""
    return {
        webhook_id: slots.room(webhook) + ahead.room(webhook_id)
        for webhook_id, webhook in webhooks.items()
        if not webhook.disabled
    }


def take(
    candidates: list[Candidate], slots: Slots, ahead: Ahead
) -> tuple[list[Candidate], list[Candidate]]:
    """Of `candidates` (in the order of their events), those posted at once (they get a
    slot) and those begun ahead, as far as their webhooks have room for."""
    posted = slots.take(candidates)
    taken = {delivery.delivery_id for delivery, _ in posted}
    left: dict[str, int] = {}
    begun_ahead: list[Candidate] = []
    for delivery, webhook in candidates:
        hook = webhook.webhook_id
        left.setdefault(hook, ahead.room(hook))
        # First attempts only: one taken back is then simply a delivery not tried yet.
        first = delivery.attempts == 0
        if first and delivery.delivery_id not in taken and left[hook] > 0:
            begun_ahead.append((delivery, webhook))
            left[hook] -= 1
    return posted, begun_ahead
