"""Slots (runtime/webhooks/slots.py): free slots go to each creator in turn, each of its
webhooks in turn, within each webhook's concurrency and half of all for one creator."""

from __future__ import annotations

from datetime import UTC, datetime

from suspended_runs.runtime.webhooks.slots import Slots
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from suspended_runs.storage.events.webhooks import Webhook, WebhookFilter, WebhookFormat

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def webhook(webhook_id: str, creator: str) -> Webhook:
    return Webhook(
        webhook_id, "https://example.com/h", ("run.suspended",), WebhookFilter(),
        WebhookFormat.STANDARD, "whsec_x", creator, T0,
    )  # fmt: skip


def due(webhook_id: str, n: int) -> list[Delivery]:
    return [
        Delivery(
            f"dlv_{webhook_id}_{i}",
            webhook_id,
            f"evt_{i}",
            "run.suspended",
            f"run-{i}",
            DeliveryStatus.PENDING,
            0,
            T0,
            T0,
            {},
        )
        for i in range(n)
    ]


def test_free_slots_go_round_the_creators_then_their_webhooks() -> None:
    slots = Slots(per_webhook=4, total=8)
    flood = [webhook(f"flood-{k}", "flooder") for k in range(3)]
    other = webhook("other", "someone")
    candidates = [(d, w) for w in flood for d in due(w.webhook_id, 3)]
    candidates += [(d, other) for d in due("other", 3)]
    taken = slots.take(candidates)
    by_creator = [w.created_by for _, w in taken]
    assert by_creator.count("flooder") == 4  # half of all
    assert by_creator.count("someone") == 3
    assert {w.webhook_id for _, w in taken if w.created_by == "flooder"} == {
        "flood-0", "flood-1", "flood-2",
    }  # fmt: skip


def test_a_webhook_keeps_to_its_concurrency_and_a_slot_frees_when_its_attempt_ends() -> None:
    slots = Slots(per_webhook=2, total=10)
    hook = webhook("w", "admin")
    taken = slots.take([(d, hook) for d in due("w", 5)])
    assert [d.delivery_id for d, _ in taken] == ["dlv_w_0", "dlv_w_1"]
    for delivery, _ in taken:
        slots.started(delivery.delivery_id, hook)
    assert slots.room(hook) == 0 and slots.take([(due("w", 3)[2], hook)]) == []
    slots.ended("dlv_w_0")
    assert slots.room(hook) == 1 and slots.free() == 9
