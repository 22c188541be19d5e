"""Webhook deliveries (runtime/webhooks/deliverer.py) to a real receiver on loopback:
every event type, signed as Standard Webhooks says, verified with its `standardwebhooks`
package; retries under one `webhook-id`; 429, 410, a hanging receiver; `kill -9` of the
server with an event pending; two instances delivering each event once."""

from __future__ import annotations

import asyncio
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from suspended_runs.server import Settings
from suspended_runs.storage import RUNS_COLLECTION
from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.index.entry import read_entry
from tests.helpers import (
    APPROVE,
    Server,
    act,
    eventually,
    has_status,
    make_gql,
    running_app,
    start_run,
    suspended_doc,
)
from tests.mastra_peer import MastraPeer, delete, settings_for
from tests.webhook_receiver import Answer, Received, Receiver

ALL_EVENTS = [
    "RUN_SUSPENDED",
    "TOOL_CALL_DECIDED",
    "RUN_SETTLED",
    "RUN_STALLED",
    "APPROVAL_EXPIRING",
    "APPROVAL_EXPIRED",
]
CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret webhook { id } } } }"""
DELETE_HOOK = "mutation($input: WebhookInput!) { deleteWebhook(input: $input) { __typename } }"
FAST = {"webhook_retry_seconds": "1,1,1", "webhook_timeout_seconds": 1.0}


async def hook(gql: Any, url: str, events: list[str] = ALL_EVENTS, **extra: Any) -> str:
    body = await gql(CREATE, {"input": {"url": url, "events": events, **extra}})
    secret: str = body["data"]["createWebhook"]["secret"]
    return secret


async def hook_resource(gql: Any, url: str, resource: str) -> dict[str, Any]:
    """A webhook of every event, filtered to one resource (the peer's database is shared)."""
    body = await gql(
        CREATE,
        {"input": {"url": url, "events": ALL_EVENTS, "filter": {"resourceId": resource}}},
    )
    made: dict[str, Any] = body["data"]["createWebhook"]
    return made


async def counted_attempts(client: httpx.AsyncClient) -> dict[str, float]:
    """The deliverer's attempts by outcome, as /metrics counts them (in this process)."""
    text = (await client.get("/metrics")).text
    found = re.findall(
        r'^suspended_runs_webhook_attempts_total\{outcome="(\w+)"\} (\S+)$', text, re.M
    )
    counted = {outcome: float(value) for outcome, value in found}
    return {outcome: counted.get(outcome, 0.0) for outcome in ("delivered", "retried")}


async def received(receiver: Receiver, count: int, within: float = 20) -> None:
    async def enough() -> bool:
        return len(receiver.received) >= count

    await eventually(enough, within=within)


async def test_every_event_of_a_python_run_is_delivered_signed(settings: Settings) -> None:
    timed = settings.model_copy(
        update={**FAST, "decision_timeout_seconds": 4.0, "webhook_expiring_seconds": 2.0}
    )
    with Receiver() as receiver:
        async with running_app(timed) as client:
            gql = make_gql(client)
            secret = await hook(gql, receiver.url)
            approved = await start_run(gql, "file-cleaner")
            call = approved["toolCalls"][0]["toolCallId"]
            await act(gql, APPROVE, runId=approved["runId"], toolCallId=call)
            expiring = await start_run(gql, "file-cleaner")
            await received(receiver, 8)  # each run suspended, decided, settled; 2 of expiry
            kinds = Counter(e["type"] for e in receiver.events(secret))
    assert kinds == {
        "run.suspended": 2,
        "toolcall.decided": 2,
        "run.settled": 2,
        "approval.expiring": 1,
        "approval.expired": 1,
    }
    suspended = receiver.of_type(secret, "run.suspended")
    first = next(e["data"] for e in suspended if e["data"]["run"]["runId"] == approved["runId"])
    assert first["run"]["status"] == "SUSPENDED"
    assert first["run"]["toolCalls"][0]["args"] == {"path": "/tmp/a.txt"}
    assert first["inboxUrl"] is None  # PUBLIC_URL unset
    expired = receiver.of_type(secret, "approval.expired")[0]["data"]
    assert expired["run"]["runId"] == expiring["runId"]


async def test_a_mastra_run_suspended_and_ended_and_a_stalled_run_are_delivered(
    settings: Settings, snapshots: Any, db: Any
) -> None:
    with Receiver() as receiver:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            secret = await hook(gql, receiver.url)
            await snapshots.insert_one(suspended_doc("mastra-1"))
            await received(receiver, 1)
            await snapshots.delete_many({"run_id": "mastra-1"})
            await received(receiver, 2)
            python = await start_run(gql, "file-cleaner")
            await received(receiver, 3)
            await snapshots.insert_one(suspended_doc("mastra-2"))
            await received(receiver, 4)
            # As a process that died mid-continuation leaves it: RUNNING, its lease run out.
            past = datetime.now(UTC) - timedelta(minutes=1)
            claim = {"by": "gone", "at": past, "expiresAt": past, "outcomeUnknown": False}
            for run_id in (python["runId"], "mastra-2"):
                await db[RUNS_COLLECTION].update_one(
                    {"runId": run_id}, {"$set": {"status": "RUNNING", "claim": claim}}
                )
            await received(receiver, 6)
    events = receiver.events(secret)
    assert [(e["type"], e["data"]["run"]["runId"]) for e in events[:4]] == [
        ("run.suspended", "mastra-1"),
        ("run.settled", "mastra-1"),
        ("run.suspended", python["runId"]),
        ("run.suspended", "mastra-2"),
    ]
    stalled = {(e["type"], e["data"]["run"]["runId"]) for e in events[4:]}
    assert stalled == {("run.stalled", python["runId"]), ("run.stalled", "mastra-2")}
    assert events[1]["data"]["run"]["status"] == "ENDED"
    assert events[0]["data"]["run"]["toolCalls"][0]["requiresApproval"] is True


async def test_a_mastra_run_approved_here_is_suspended_decided_and_settled(
    mongo_uri: str, peer: MastraPeer, start_app: Any
) -> None:
    """Through the real Mastra peer, on its shared database: the webhook is filtered to a
    resource of this test's own, and deleted at the end."""
    resource = f"hooked-{uuid.uuid4().hex[:8]}"
    with Receiver() as receiver:
        gql = make_gql(await start_app(settings_for(mongo_uri, peer, **FAST)))
        made = await hook_resource(gql, receiver.url, resource)
        try:
            run_id = await peer.start_run("approver", [delete("/tmp/hooked")], resource=resource)
            await eventually(lambda: has_status(gql, run_id), within=5)
            await act(gql, APPROVE, runId=run_id)
            await received(receiver, 3)
        finally:
            await gql(DELETE_HOOK, {"input": {"id": made["webhook"]["id"]}})
    events = receiver.events(made["secret"])
    assert [e["type"] for e in events] == ["run.suspended", "toolcall.decided", "run.settled"]
    assert {e["data"]["run"]["runId"] for e in events} == {run_id}
    assert events[0]["data"]["run"]["runtime"] == "MASTRA"
    assert events[1]["data"]["run"]["toolCalls"][0]["decision"]["action"] == "APPROVE"
    assert events[2]["data"]["run"]["status"] == "COMPLETED"


async def test_a_mastra_approval_nobody_decides_is_announced_expiring_then_expired(
    mongo_uri: str, peer: MastraPeer, start_app: Any
) -> None:
    """Through the real Mastra peer: the expiry declines the call on Mastra, as the system."""
    resource = f"expiring-{uuid.uuid4().hex[:8]}"
    timeouts = {"decision_timeouts": {"asker": 600, "approver": 4}, "webhook_expiring_seconds": 3}
    with Receiver() as receiver:
        gql = make_gql(await start_app(settings_for(mongo_uri, peer, **FAST, **timeouts)))
        made = await hook_resource(gql, receiver.url, resource)
        try:
            run_id = await peer.start_run("approver", [delete("/tmp/expiring")], resource=resource)
            await received(receiver, 5, within=20)
        finally:
            await gql(DELETE_HOOK, {"input": {"id": made["webhook"]["id"]}})
    events = receiver.events(made["secret"])
    assert [e["type"] for e in events[:2]] == ["run.suspended", "approval.expiring"]
    assert {e["type"] for e in events[2:]} == {
        "toolcall.decided",
        "approval.expired",
        "run.settled",
    }
    assert {e["data"]["run"]["runId"] for e in events} == {run_id}
    assert all(e["data"]["run"]["runtime"] == "MASTRA" for e in events)
    decided = next(e for e in events if e["type"] == "toolcall.decided")["data"]["run"]
    assert decided["toolCalls"][0]["decision"]["action"] == "DECLINE"
    assert decided["decidedBy"] == "system"
    assert peer.executions("/tmp/expiring") == []


async def test_an_event_a_dead_process_left_in_its_entry_is_delivered(
    settings: Settings, db: Any
) -> None:
    """A change and its events are one write; a process that died before moving them to
    the outbox leaves them in the entry, and the sweep delivers them."""
    with Receiver() as receiver:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            secret = await hook(gql, receiver.url)
            run = await start_run(gql, "file-cleaner")
            await received(receiver, 1)
            stored = await db[RUNS_COLLECTION].find_one({"runId": run["runId"]}, {"_id": 0})
            entry = read_entry(stored)
            assert entry is not None and stored["unannounced"] == []
            left = events.stalled(entry, datetime.now(UTC)).to_document(timedelta(days=1))
            await db[RUNS_COLLECTION].update_one(
                {"runId": run["runId"]}, {"$push": {"unannounced": left}}
            )
            await received(receiver, 2, within=5)
    assert [e["type"] for e in receiver.events(secret)] == ["run.suspended", "run.stalled"]


async def test_a_receiver_failing_twice_gets_the_event_on_the_third_attempt(
    settings: Settings,
) -> None:
    def twice_503(got: Received, attempt: int) -> Answer:
        return (503 if attempt <= 2 else 200, {}, 0.0)

    with Receiver(twice_503) as receiver:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            before = await counted_attempts(client)
            secret = await hook(gql, receiver.url, ["RUN_SUSPENDED"])
            await start_run(gql, "file-cleaner")
            await received(receiver, 3)
            await asyncio.sleep(1.5)  # no fourth: the third was answered 200
            after = await counted_attempts(client)
            metrics = (await client.get("/metrics")).text
    assert after["retried"] - before["retried"] == 2
    assert after["delivered"] - before["delivered"] == 1
    assert 'suspended_runs_webhook_deliveries{status="DELIVERED"} 1.0' in metrics
    assert "suspended_runs_webhook_outbox_depth 0.0" in metrics
    attempts = receiver.received
    assert len(attempts) == 3
    assert len({a.message_id for a in attempts}) == 1
    assert len({a.headers["webhook-timestamp"] for a in attempts}) == 3
    assert len(receiver.events(secret)) == 3  # each attempt signed with its own timestamp


async def test_a_runs_later_events_wait_behind_its_earlier_ones_retries(
    settings: Settings,
) -> None:
    """Its suspension is answered 503 twice: the run's decision and settlement are held
    back meanwhile, and sent, in order, once the suspension is delivered."""

    def suspension_fails_twice(got: Received, attempt: int) -> Answer:
        busy = got.json["type"] == "run.suspended" and attempt <= 2
        return (503 if busy else 200, {}, 0.0)

    with Receiver(suspension_fails_twice) as receiver:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            secret = await hook(
                gql, receiver.url, ["RUN_SUSPENDED", "TOOL_CALL_DECIDED", "RUN_SETTLED"]
            )
            run = await start_run(gql, "file-cleaner")
            await received(receiver, 1)
            call = run["toolCalls"][0]["toolCallId"]
            await act(gql, APPROVE, runId=run["runId"], toolCallId=call)
            await received(receiver, 5)
    kinds = [e["type"] for e in receiver.events(secret)]
    assert kinds == ["run.suspended"] * 3 + ["toolcall.decided", "run.settled"]
    delivered = receiver.received[2].at
    assert receiver.received[3].at - delivered < 1.0  # released at once, not at a retry's time


async def test_attempts_in_flight_are_capped_in_all_and_one_admin_holds_half(
    settings: Settings,
) -> None:
    """WEBHOOK_MAX_IN_FLIGHT 8: an admin's 10 webhooks to a receiver that never answers
    hold 4 attempts at most; another admin's webhook gets its events all the same."""

    def hang(got: Received, attempt: int) -> Answer:
        return (200, {}, 20.0)

    rules = {**FAST, "webhook_timeout_seconds": 15.0, "webhook_max_in_flight": 8}
    with Receiver(hang) as hanging, Receiver() as answering:
        async with running_app(settings.model_copy(update=rules)) as client:
            flooding = make_gql(client, {"x-actor": "flooding-admin"})
            for _ in range(10):
                await hook(flooding, hanging.url, ["RUN_SUSPENDED"])
            await hook(
                make_gql(client, {"x-actor": "other-admin"}), answering.url, ["RUN_SUSPENDED"]
            )
            for _ in range(3):
                await start_run(flooding, "file-cleaner")
            await received(answering, 3, within=10)
            await asyncio.sleep(1.0)
            held = len(hanging.received)
    assert held == 4  # half of 8; 30 are due
    assert len(answering.received) == 3


async def test_runs_held_back_by_retries_never_hide_a_later_run(settings: Settings) -> None:
    """Runs whose deliveries wait for a retry: a later run's event is still delivered at
    once (what waits is due at its retry's time, and read only then)."""
    failing: set[str] = set()

    def fail_the_first(got: Received, attempt: int) -> Answer:
        return (503 if got.json["data"]["run"]["runId"] in failing else 200, {}, 0.0)

    rules = settings.model_copy(update={**FAST, "webhook_retry_seconds": "60,60"})
    with Receiver(fail_the_first) as receiver:
        async with running_app(rules) as client:
            gql = make_gql(client)
            await hook(gql, receiver.url, ["RUN_SUSPENDED"])
            for _ in range(4):
                failing.add((await start_run(gql, "file-cleaner"))["runId"])
            await received(receiver, 4)
            later = await start_run(gql, "file-cleaner")
            await received(receiver, 5, within=5)
    assert receiver.received[-1].json["data"]["run"]["runId"] == later["runId"]


async def test_429_waits_as_told_and_410_disables_the_webhook(settings: Settings) -> None:
    def busy_then_gone(got: Received, attempt: int) -> Answer:
        return (429, {"retry-after": "3"}, 0.0) if attempt == 1 else (410, {}, 0.0)

    rules = settings.model_copy(update={**FAST, "webhook_retry_seconds": "1,5,5"})
    with Receiver(busy_then_gone) as receiver:
        async with running_app(rules) as client:
            gql = make_gql(client)
            await hook(gql, receiver.url, ["RUN_SUSPENDED"])
            await start_run(gql, "file-cleaner")
            await received(receiver, 2)

            async def disabled() -> bool:
                listed = await gql("{ webhooks { disabled } }")
                return bool(listed["data"]["webhooks"][0]["disabled"])

            await eventually(disabled, within=5)
            await start_run(gql, "file-cleaner")
            await asyncio.sleep(1.5)
    first, second = receiver.received
    assert second.at - first.at >= 2.5  # Retry-After: 3, within the schedule's 1 to 5
    assert len(receiver.received) == 2  # disabled: the next run's event is not sent


async def test_a_hanging_receiver_is_timed_out_while_another_gets_its_events(
    settings: Settings,
) -> None:
    def hang(got: Received, attempt: int) -> Answer:
        return (200, {}, 5.0)

    with Receiver(hang) as slow, Receiver() as quick:
        async with running_app(settings.model_copy(update=FAST)) as client:
            gql = make_gql(client)
            await hook(gql, slow.url, ["RUN_SUSPENDED"])
            await hook(gql, quick.url, ["RUN_SUSPENDED"])
            for _ in range(3):
                await start_run(gql, "file-cleaner")
            await received(quick, 3, within=5)
            slow_meanwhile = len(slow.received)
            await received(slow, 4, within=10)  # timed out, and tried again
    assert slow_meanwhile <= 3  # the quick one had all three before any retry of the slow
    assert len({r.message_id for r in slow.received}) == 3


def test_an_event_pending_when_the_server_is_killed_is_delivered_after_a_restart(
    tmp_path: Path,
) -> None:
    def hang_once(got: Received, attempt: int) -> Answer:
        return (200, {}, 10.0) if attempt == 1 else (200, {}, 0.0)

    env = {"WEBHOOK_RETRY_SECONDS": "1,1,1", "WEBHOOK_TIMEOUT_SECONDS": "1"}
    server = Server(tmp_path / "data", env)
    with Receiver(hang_once) as receiver:
        server.start()
        try:
            made = server.query(
                CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}}
            )
            secret = made["data"]["createWebhook"]["secret"]
            started = server.query(
                'mutation { startRun(input: {agentId: "file-cleaner", prompt: "go /tmp/a"}) '
                "{ ... on RunStarted { run { runId } } } }"
            )
            assert started["data"]["startRun"]["run"]["runId"]
            _wait(lambda: len(receiver.received) >= 1, 20)
            assert server.signal(signal.SIGKILL) == -9  # the first attempt still hangs
            server.start()
            _wait(lambda: len(receiver.received) >= 2, 30)
        finally:
            if server.process is not None:
                server.stop()
    first, again = receiver.received[:2]
    assert first.message_id == again.message_id
    assert receiver.events(secret)[1]["type"] == "run.suspended"


def test_two_instances_deliver_each_event_once(tmp_path: Path, mongo_uri: str) -> None:
    env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": f"two_{tmp_path.name[-8:]}"}
    one, two = Server(tmp_path / "one", env), Server(tmp_path / "two", env)
    with Receiver() as receiver:
        one.start()
        two.start()
        try:
            one.query(CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}})
            time.sleep(1.5)  # the other instance asks whether a webhook exists every second
            for i in range(10):
                (one if i % 2 else two).query(
                    'mutation { startRun(input: {agentId: "file-cleaner", prompt: "go /tmp/b"}) '
                    "{ __typename } }"
                )
            _wait(lambda: len(receiver.received) >= 10, 30)
            time.sleep(1)  # nothing more comes
        finally:
            for server in (one, two):
                if server.process is not None:
                    server.stop()
    ids = Counter(r.message_id for r in receiver.received)
    assert len(ids) == 10 and set(ids.values()) == {1}


def _wait(check: Callable[[], bool], within: float) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)
