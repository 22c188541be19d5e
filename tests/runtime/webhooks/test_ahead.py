"""Deliveries begun ahead of a free slot (runtime/webhooks/ahead.py): only for a webhook
whose receiver answers at once, bounded, and taken back, never counted as attempts made,
when the receiver slows down."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from suspended_runs.runtime.webhooks.ahead import Ahead, Begun
from suspended_runs.server import Settings
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from suspended_runs.storage.events.webhooks import Webhook, WebhookFilter, WebhookFormat
from suspended_runs.storage.types import DELIVERIES_COLLECTION
from tests.helpers import eventually, make_gql, running_app, suspended_doc
from tests.webhook_receiver import Answer, Received, Receiver

T0 = datetime(2026, 12, 1, tzinfo=UTC)
CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
FAST = {"webhook_retry_seconds": "1,1,1,1,1", "webhook_timeout_seconds": 1.0}
BURST = 200


def begun(n: int, webhook_id: str = "wh_1") -> Begun:
    delivery = Delivery(
        f"dlv_{n:04d}", webhook_id, f"evt_{n}", "run.suspended", f"run-{n}",
        DeliveryStatus.PENDING, 0, T0, T0, {},
    )  # fmt: skip
    webhook = Webhook(
        webhook_id, "https://example.com/h", ("run.suspended",), WebhookFilter(),
        WebhookFormat.STANDARD, "whsec_x", "key:admin", T0,
    )  # fmt: skip
    return Begun(delivery, webhook, T0)


def test_only_a_webhook_answering_at_once_may_have_deliveries_begun_ahead() -> None:
    ahead = Ahead(depth=3)
    assert ahead.room("wh_1") == 0  # never answered yet
    ahead.answered("wh_1", at_once=True)
    assert ahead.room("wh_1") == 3
    ahead.answered("wh_1", at_once=False)
    assert ahead.room("wh_1") == 0


def test_what_waits_ahead_is_bounded_kept_in_order_and_dropped_whole() -> None:
    ahead = Ahead(depth=2)
    ahead.answered("wh_1", at_once=True)
    first, second = begun(1), begun(2)
    ahead.add(first)
    ahead.add(second)
    assert ahead.room("wh_1") == 0 and len(ahead) == 2 and ahead.holds("dlv_0001")
    assert ahead.heads() == [first]
    assert ahead.pop("wh_1") == first and not ahead.holds("dlv_0001")
    assert ahead.drop("wh_1") == [second] and len(ahead) == 0 and ahead.heads() == []


async def test_a_receiver_that_slows_down_gets_what_was_begun_ahead_taken_back(
    settings: Settings, snapshots: Any, db: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A burst to a receiver answering at once is begun ahead of its slots; when the
    receiver stops answering in time, what waited is taken back. Every run is delivered,
    and each delivery's count of attempts is the count of posts its receiver saw."""
    slow = threading.Event()

    def at_once_then_slow_for_a_while(got: Received, attempt: int) -> Answer:
        return (200, {}, 1.5 if slow.is_set() else 0.0)

    with Receiver(at_once_then_slow_for_a_while) as receiver:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            made = await gql(CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}})
            await snapshots.insert_many(
                [suspended_doc(f"ahead-{n}", "ahead-agent") for n in range(4)]
            )
            await eventually(_received(receiver, 4), within=30)  # answered at once
            with caplog.at_level(logging.INFO, logger="suspended_runs.runtime.webhooks"):
                docs = [suspended_doc(f"ahead-{n}", "ahead-agent") for n in range(4, BURST)]
                await snapshots.insert_many(docs)
                await eventually(_received(receiver, 20), within=30)
                slow.set()  # the next answers come late: their attempts time out
                await eventually(_received(receiver, 30), within=30)
                slow.clear()
                await eventually(_all_delivered(db), within=90)
    runs = {
        e["data"]["run"]["runId"] for e in receiver.events(made["data"]["createWebhook"]["secret"])
    }
    assert runs == {f"ahead-{n}" for n in range(BURST)}
    posts = Counter(r.message_id for r in receiver.received)
    stored = {d["eventId"]: d["attempts"] async for d in db[DELIVERIES_COLLECTION].find()}
    assert {event: stored[event] for event in posts} == dict(posts)
    taken_back = [r for r in caplog.records if r.getMessage() == "webhook attempt taken back"]
    assert taken_back, "the slow answers took back what was begun ahead"


def _received(receiver: Receiver, count: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return len(receiver.received) >= count

    return check


def _all_delivered(db: Any) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        found = await db[DELIVERIES_COLLECTION].count_documents({"status": "DELIVERED"})
        return int(found) >= BURST

    return check
