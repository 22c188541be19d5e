"""One attempt (runtime/webhooks/attempt.py): it posts to the address its check saw; any
failure is a recorded failed attempt, retried by the schedule; `Retry-After` counts only
as a finite wait within the schedule's bounds."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from suspended_runs.runtime.webhooks import addresses
from suspended_runs.runtime.webhooks.attempt import _retry_after
from suspended_runs.server import Settings
from tests.helpers import eventually, make_gql, running_app, start_run
from tests.webhook_receiver import Answer, Received, Receiver

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret webhook { id } } } }"""
DELIVERIES = """query($id: ID!) { webhookDeliveries(webhookId: $id) {
  deliveries { status attempts lastStatusCode lastError nextAttemptAt } } }"""


async def test_the_post_connects_to_the_address_checked_not_to_a_new_answer(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name the check resolved to loopback (allowed in development) is posted to there,
    under its own name: the connection never asks the resolver again, so an answer
    changed in between (DNS rebinding) is never used. The system's resolver knows no
    `rebind.test`: a post that resolved the name itself would fail."""
    real_resolve = addresses._resolve

    async def resolve(host: str, port: int) -> Any:
        return await real_resolve("127.0.0.1" if host == "rebind.test" else host, port)

    monkeypatch.setattr(addresses, "_resolve", resolve)
    with Receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        async with running_app(settings) as client:
            gql = make_gql(client)
            url = f"http://rebind.test:{port}/hook"
            made = await gql(CREATE, {"input": {"url": url, "events": ["RUN_SUSPENDED"]}})
            secret = made["data"]["createWebhook"]["secret"]
            await start_run(gql, "file-cleaner")
            for _ in range(100):
                if receiver.received:
                    break
                await asyncio.sleep(0.1)
    assert receiver.received, "nothing was delivered"
    assert receiver.received[0].headers["host"] == f"rebind.test:{port}"
    assert [e["type"] for e in receiver.events(secret)] == ["run.suspended"]


@pytest.mark.parametrize("retry_after", ["nan", "inf"])
async def test_a_429_whose_retry_after_is_no_finite_wait_is_retried_by_the_schedule(
    settings: Settings, retry_after: str
) -> None:
    """The attempt is recorded (429, its error) and the next one comes after the
    schedule's wait, not after the attempt's hold runs out as for one cut short."""

    def busy_then_ok(got: Received, attempt: int) -> Answer:
        return (429, {"retry-after": retry_after}, 0.0) if attempt == 1 else (204, {}, 0.0)

    rules = {"webhook_retry_seconds": "2,60", "webhook_timeout_seconds": 1.0}
    with Receiver(busy_then_ok) as receiver:
        async with running_app(settings.model_copy(update=rules)) as client:
            gql = make_gql(client)
            made = await gql(CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}})
            webhook_id = made["data"]["createWebhook"]["webhook"]["id"]
            await start_run(gql, "file-cleaner")

            async def delivery() -> dict[str, Any]:
                page = await gql(DELIVERIES, {"id": webhook_id})
                found: dict[str, Any] = page["data"]["webhookDeliveries"]["deliveries"][0]
                return found

            async def recorded() -> bool:
                return bool(receiver.received) and (await delivery())["lastStatusCode"] == 429

            async def delivered() -> bool:
                found = await delivery()
                return bool(found["status"] == "DELIVERED" and found["attempts"] == 2)

            await eventually(recorded, within=5)
            waiting = await delivery()
            await eventually(delivered, within=8)
    assert waiting["status"] == "PENDING" and waiting["lastError"] == "answered 429"
    first, second = receiver.received[:2]
    assert 1.5 <= second.at - first.at <= 4.5  # the schedule's 2 s
    assert first.message_id == second.message_id


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), ("-3", 0.0), ("nan", None), ("NaN", None), ("inf", None), ("1e999", None),
     ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0), ("Fri, 31 Dec 99999 23:59:59", None), ("x", None)],
)  # fmt: skip
def test_retry_after_is_a_finite_number_of_seconds_or_nothing(
    value: str, seconds: float | None
) -> None:
    assert _retry_after(value, datetime.now(UTC)) == seconds
