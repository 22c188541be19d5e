"""A decision's claim carries its events (storage/index/claims.py): a server killed at any
point after the claim is written (tests/crash_points.py: the claim written, its events in
the outbox, the continuation handed to a runtime) loses none of them. Each run's events are
counted as a receiver gets them after a restart."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter

import httpx
import pytest

from tests.crash_points import POINTS
from tests.helpers import APPROVE, ROOT, START, Server
from tests.mastra_peer import PEER_DB, MastraPeer, delete
from tests.webhook_receiver import Receiver

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
STATUS = "query($id: ID!) { agentRun(runId: $id) { status } }"
DECISIONS = "query($id: ID!) { agentRun(runId: $id) { toolCalls { decision { action } } } }"
EVERY_EVENT = ["RUN_SUSPENDED", "TOOL_CALL_DECIDED", "RUN_SETTLED", "RUN_STALLED"]
FAST = {
    "WEBHOOK_RETRY_SECONDS": "1,1,1",
    "WEBHOOK_TIMEOUT_SECONDS": "2",
    "CLAIM_LEASE_SECONDS": "1",  # the dead process's claim runs out: the run is STALLED
}


def crashing(server: Server, point: str, **env: str) -> Server:
    server.module = "tests.crash_points"
    server.env.update({**FAST, **env, "CRASH_AT": point})
    return server


def restarted(server: Server) -> None:
    """The server killed itself at its point; started again as it is (no point armed)."""
    assert server.exited(30) == -9
    server.module = "suspended_runs.server.cli"
    server.env["CRASH_AT"] = ""
    server.start()


def events_of(receiver: Receiver, secret: str, run_id: str, count: int) -> Counter[str]:
    """The run's events, by type, once `count` distinct ones came (a repeat of one, which at
    least once allows, is counted once)."""
    deadline = time.monotonic() + 30
    while True:
        got = {(e["type"], e["data"]["run"]["runId"]) for e in receiver.events(secret)}
        ids = {r.message_id for r in receiver.received}
        mine = Counter(kind for kind, run in got if run == run_id)
        if sum(mine.values()) >= count or time.monotonic() > deadline:
            assert len(ids) == len(got), "one webhook-id carried two events"
            return mine
        time.sleep(0.1)


@pytest.mark.parametrize("point", POINTS)
def test_an_expired_approval_killed_at_each_point_loses_none_of_its_events(
    server: Server, mongo_uri: str, point: str
) -> None:
    """The expiry declines the call as the system (approval.expired with toolcall.decided,
    in its claim); the server dies at `point` and the run stays claimed, then STALLED."""
    db = f"crash_{uuid.uuid4().hex[:8]}"
    env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": db, "DECISION_TIMEOUT_SECONDS": "1"}
    env["WEBHOOK_EXPIRING_SECONDS"] = "0.001"  # no approval.expiring: not this test's
    crashing(server, point, **env).start()
    with Receiver() as receiver:
        hook = {"url": receiver.url, "events": [*EVERY_EVENT, "APPROVAL_EXPIRED"]}
        made = server.query(CREATE, {"input": hook})
        secret = made["data"]["createWebhook"]["secret"]
        started = {"input": {"agentId": "file-cleaner", "prompt": "delete /tmp/crash"}}
        run_id = server.query(START, started)["data"]["startRun"]["run"]["runId"]
        restarted(server)
        found = events_of(receiver, secret, run_id, 4)
    assert found == {
        "run.suspended": 1,
        "toolcall.decided": 1,
        "approval.expired": 1,
        "run.stalled": 1,
    }


def test_a_mastra_approval_killed_as_its_continuation_starts_loses_none_of_its_events(
    server: Server, mongo_uri: str, peer: MastraPeer
) -> None:
    """Through the real Mastra peer, on its shared database (the webhook is filtered to a
    resource of this test's own): the decision never reaches Mastra, its run is STALLED.
    (The points before it are the same code for every runtime: the test above.)"""
    resource = f"crash-{uuid.uuid4().hex[:8]}"
    env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": PEER_DB, "MASTRA_URL": peer.url}
    crashing(server, "continuation-started", **env).start()
    with Receiver() as receiver:
        hook = {"url": receiver.url, "events": EVERY_EVENT, "filter": {"resourceId": resource}}
        secret = server.query(CREATE, {"input": hook})["data"]["createWebhook"]["secret"]
        try:
            run_id = _mastra_run(server, peer, resource)
            with pytest.raises(httpx.HTTPError):  # the server dies under the request
                server.query(APPROVE, {"input": {"runId": run_id}})
            restarted(server)
            found = events_of(receiver, secret, run_id, 3)
        finally:
            _delete_hooks(server)
    assert found == {"run.suspended": 1, "toolcall.decided": 1, "run.stalled": 1}
    assert peer.executions(resource) == []


@pytest.mark.parametrize("point", POINTS)
def test_a_langgraph_decision_killed_at_each_point_loses_none_of_its_events(
    server: Server, mongo_uri: str, langgraph_db: str, point: str
) -> None:
    """A real LangGraph refund agent (`create_agent` with HITL middleware, MongoDBSaver):
    its two calls approved, the server dies at `point` of the decision that writes a
    claim; after a restart, every decision made is announced once, and the run STALLED."""
    env = {
        "MONGODB_URI": mongo_uri,
        "MONGODB_DB": f"crash_{uuid.uuid4().hex[:8]}",
        "LANGGRAPH_DB": langgraph_db,
        "LANGGRAPH_GRAPHS": json.dumps({"refunds": "tests.langgraph_graphs:refund_agent"}),
        "PYTHONPATH": str(ROOT),
    }
    crashing(server, point, **env).start()
    with Receiver() as receiver:
        hook = {"url": receiver.url, "events": EVERY_EVENT}
        secret = server.query(CREATE, {"input": hook})["data"]["createWebhook"]["secret"]
        started = {"input": {"agentId": "refunds", "prompt": "Refund order A-1"}}
        run = server.query(START, started)["data"]["startRun"]["run"]
        decided = 0
        for call in run["toolCalls"]:
            decided += 1
            try:  # the server dies under the request that reaches the point
                server.query(
                    APPROVE, {"input": {"runId": run["runId"], "toolCallId": call["toolCallId"]}}
                )
            except httpx.HTTPError:
                break
        restarted(server)
        # The batch's first decision stands, announced; the one that handed the run over
        # to LangGraph leaves it claimed by the dead process, then STALLED.
        expected = {"run.suspended": 1, "toolcall.decided": decided}
        if point == "continuation-started":
            expected["run.stalled"] = 1
        found = _distinct_events(receiver, secret, sum(expected.values()))
        calls = server.query(DECISIONS, {"id": run["runId"]})["data"]["agentRun"]["toolCalls"]
    assert found == expected
    assert calls[0]["decision"]["action"] == "APPROVE"


def _distinct_events(receiver: Receiver, secret: str, count: int) -> Counter[str]:
    """Events by type, one per webhook-id (a repeat, which at least once allows, counted
    once), once `count` came; then a moment more, for any that should not come."""
    deadline, found = time.monotonic() + 30, Counter[str]()
    while time.monotonic() < deadline:
        receiver.events(secret)  # every one signed
        found = Counter(
            r.json["type"] for r in {r.message_id: r for r in receiver.received}.values()
        )
        if sum(found.values()) >= count:
            time.sleep(1)
            return Counter(
                r.json["type"] for r in {r.message_id: r for r in receiver.received}.values()
            )
        time.sleep(0.1)
    return found


def _mastra_run(server: Server, peer: MastraPeer, resource: str) -> str:
    calls = [delete(f"/tmp/{resource}")]
    run_id = asyncio.run(peer.start_run("approver", calls, resource=resource))
    deadline = time.monotonic() + 10
    while (server.query(STATUS, {"id": run_id})["data"]["agentRun"] or {}).get(
        "status"
    ) != "SUSPENDED":
        assert time.monotonic() < deadline, "the peer's run was never listed"
        time.sleep(0.1)
    return run_id


def _delete_hooks(server: Server) -> None:
    if server.process is None:
        return
    for hook in server.query("{ webhooks { id } }")["data"]["webhooks"]:
        server.query(
            "mutation($input: WebhookInput!) { deleteWebhook(input: $input) { __typename } }",
            {"input": {"id": hook["id"]}},
        )
