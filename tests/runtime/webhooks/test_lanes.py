"""Lanes (runtime/webhooks/lanes.py): a run's deliveries to one webhook go one at a time, in
the order of its events; a later one is held back behind a retry and released when the
earlier one is done, in memory and, across a restart, from what the database holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from suspended_runs.runtime.webhooks.lanes import Lanes
from suspended_runs.server import Settings
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus, Waiting
from suspended_runs.storage.types import DELIVERIES_COLLECTION
from tests.helpers import APPROVE, act, eventually, make_gql, running_app, start_run
from tests.webhook_receiver import Answer, Received, Receiver

T0 = datetime(2026, 12, 1, tzinfo=UTC)
CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
EVENTS = ["RUN_SUSPENDED", "TOOL_CALL_DECIDED", "RUN_SETTLED"]


def delivery(n: int, run_id: str = "run-a", webhook_id: str = "wh_1") -> Delivery:
    return Delivery(
        f"dlv_{n:04d}", webhook_id, f"evt_{n}", "run.suspended", run_id,
        DeliveryStatus.PENDING, 0, T0, T0, {},
    )  # fmt: skip


def test_a_later_delivery_waits_behind_one_under_way_and_is_released_when_it_is_done() -> None:
    lanes, first, second, third = Lanes(), delivery(1), delivery(2), delivery(3)
    other_run, other_webhook = delivery(4, run_id="run-b"), delivery(5, webhook_id="wh_2")
    lanes.started(first)
    head = lanes.ahead_of(second)
    assert head is not None and head.delivery_id == first.delivery_id and head.retry_at is None
    head.behind |= {third.delivery_id, second.delivery_id}
    assert lanes.ahead_of(other_run) is None and lanes.ahead_of(other_webhook) is None
    assert lanes.ahead_of(first) is None  # the head waits for nothing
    assert lanes.ended(first, None) == [second.delivery_id, third.delivery_id]
    assert lanes.ahead_of(second) is None


def test_a_retry_holds_the_lane_until_the_delivery_is_done() -> None:
    lanes, first, second = Lanes(), delivery(1), delivery(2)
    retry = T0 + timedelta(seconds=30)
    lanes.started(first)
    assert lanes.ended(first, retry) == []  # to be made again: the lane still waits for it
    head = lanes.ahead_of(second)
    assert head is not None and head.retry_at == retry
    head.behind.add(second.delivery_id)
    lanes.started(first)  # its retry, under way
    assert lanes.ended(first, None) == [second.delivery_id]


def test_an_earlier_delivery_redelivered_heads_the_lane_and_the_head_waits_behind_it() -> None:
    lanes, first, second = Lanes(), delivery(1), delivery(2)
    lanes.started(second)
    lanes.started(first)  # redeliverWebhookEvent of the earlier one
    assert lanes.ahead_of(second) is not None
    assert lanes.ended(first, None) == [second.delivery_id]


def test_lanes_read_from_the_database_wait_as_they_did() -> None:
    """As an instance that starts delivering finds them: the first of each lane heads it."""
    retry = T0 + timedelta(seconds=30)
    waiting = [Waiting(f"dlv_{n:04d}", "wh_1", "run-a", retry) for n in (3, 1, 2)]
    lanes = Lanes()
    lanes.read([*waiting, Waiting("dlv_0009", "wh_1", "run-b", retry)])
    head = lanes.ahead_of(delivery(2))
    assert head is not None and head.delivery_id == "dlv_0001" and head.retry_at == retry
    assert head.behind == {"dlv_0002", "dlv_0003"}
    assert lanes.ahead_of(delivery(9, run_id="run-b")) is None
    lanes.keep_only({"wh_2"})  # wh_1 deleted: nothing waits for it
    assert lanes.ahead_of(delivery(2)) is None


async def test_a_runs_held_back_events_keep_their_order_across_a_restart(
    settings: Settings, db: Any
) -> None:
    """A run's suspension is answered 503 twice; its decision and settlement, held back
    behind the retry, are still held when the server stops. The next server reads its
    lanes from the deliveries and sends them after the suspension, in order."""

    def suspension_fails_twice(got: Received, attempt: int) -> Answer:
        busy = got.json["type"] == "run.suspended" and attempt <= 2
        return (503 if busy else 204, {}, 0.0)

    rules = {"webhook_retry_seconds": "3,3,3", "webhook_timeout_seconds": 1.0}
    deliveries = db[DELIVERIES_COLLECTION]

    async def held_back() -> bool:
        docs = await deliveries.find({"event": {"$ne": "run.suspended"}}).to_list()
        now = datetime.now(UTC)
        return len(docs) == 2 and all(d["nextAttemptAt"].replace(tzinfo=UTC) > now for d in docs)

    with Receiver(suspension_fails_twice) as receiver:
        async with running_app(settings.model_copy(update=rules)) as client:
            gql = make_gql(client)
            made = await gql(CREATE, {"input": {"url": receiver.url, "events": EVENTS}})
            run = await start_run(gql, "file-cleaner")
            await eventually(_count(receiver, 1), within=10)
            await act(
                gql, APPROVE, runId=run["runId"], toolCallId=run["toolCalls"][0]["toolCallId"]
            )
            await eventually(held_back, within=3)
        assert len(receiver.received) == 1  # stopped while the suspension waits its retry
        async with running_app(settings.model_copy(update=rules)):
            await eventually(_count(receiver, 5), within=30)
    secret = made["data"]["createWebhook"]["secret"]
    kinds = [event["type"] for event in receiver.events(secret)]
    assert kinds == ["run.suspended"] * 3 + ["toolcall.decided", "run.settled"]
    assert receiver.received[3].at - receiver.received[2].at < 1.0  # released at once


def _count(receiver: Receiver, count: int) -> Any:
    async def enough() -> bool:
        return len(receiver.received) >= count

    return enough
