"""One attempt (runtime/webhooks/attempt.py): it posts to the address its check saw."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from suspended_runs.runtime.webhooks import addresses
from suspended_runs.server import Settings
from tests.helpers import make_gql, running_app, start_run
from tests.webhook_receiver import Receiver

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""


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
