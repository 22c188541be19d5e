"""The agenda (runtime/webhooks/agenda.py): the deliveries due now, read as they come due;
and a burst of suspensions written by the hundred, read and delivered once each, about as
soon as the lists have them."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from suspended_runs.runtime.webhooks.agenda import Agenda
from suspended_runs.server import Settings
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from tests.helpers import eventually, make_gql, running_app, suspended_doc
from tests.webhook_receiver import Receiver

T0 = datetime(2026, 12, 1, tzinfo=UTC)
CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
TOTAL = '{ suspendedRuns(filter: {agentId: "burst-agent"}, first: 1) { total } }'
BURST, BATCH = 300, 100


def delivery(n: int, webhook_id: str = "wh_1") -> Delivery:
    return Delivery(
        f"dlv_{n:04d}", webhook_id, f"evt_{n}", "run.suspended", f"run-{n}",
        DeliveryStatus.PENDING, 0, T0, T0, {},
    )  # fmt: skip


def test_the_agenda_gives_each_webhooks_due_deliveries_in_the_order_of_their_events() -> None:
    agenda = Agenda()
    agenda.add([delivery(3), delivery(1), delivery(2, "wh_2")])
    agenda.add([delivery(2), delivery(1)])  # read again: kept once
    assert [d.delivery_id for d in agenda.of("wh_1")] == ["dlv_0001", "dlv_0002", "dlv_0003"]
    assert len(agenda) == 4 and sorted(agenda.webhooks()) == ["wh_1", "wh_2"]
    agenda.remove(delivery(2, "wh_2"))  # begun
    agenda.keep_only({"wh_1", "wh_3"})
    assert agenda.webhooks() == ["wh_1"]
    agenda.replace([delivery(9)])  # all that is due, read again
    assert [d.delivery_id for d in agenda.of("wh_1")] == ["dlv_0009"]


def test_the_next_read_starts_a_millisecond_before_the_last_or_reads_all() -> None:
    agenda = Agenda()
    assert agenda.read_from() is None  # nothing read yet: all that is due
    agenda.read_up_to = T0
    assert agenda.read_from() == T0 - timedelta(milliseconds=1)


async def test_a_burst_written_by_the_hundred_is_delivered_once_each_soon_after_it_is_listed(
    settings: Settings, snapshots: Any
) -> None:
    """300 Mastra runs suspended, 100 a write: every one is delivered once, and the last
    within a loose bound of when the lists had them all (docs/benchmarks.md has the
    figures at 2,000 runs)."""
    with Receiver() as receiver:
        async with running_app(settings) as client:
            gql = make_gql(client)
            made = await gql(CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}})
            started = time.monotonic()
            for first in range(0, BURST, BATCH):
                docs = [
                    suspended_doc(f"burst-{n}", "burst-agent") for n in range(first, first + BATCH)
                ]
                await snapshots.insert_many(docs)

            async def all_listed() -> bool:
                return int((await gql(TOTAL))["data"]["suspendedRuns"]["total"]) == BURST

            async def all_delivered() -> bool:
                return len(receiver.received) >= BURST

            listed = time.monotonic() - started + await eventually(all_listed, within=60)
            delivered = listed + await eventually(all_delivered, within=90)
    events = receiver.events(made["data"]["createWebhook"]["secret"])
    runs = sorted(event["data"]["run"]["runId"] for event in events)
    assert runs == sorted(f"burst-{n}" for n in range(BURST))  # each once, all signed
    assert len({r.message_id for r in receiver.received}) == BURST
    assert delivered <= 3 * listed + 5, (listed, delivered)
