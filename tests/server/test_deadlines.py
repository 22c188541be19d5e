"""A hung database (its process stopped, as a frozen disk or a network partition leaves it)
is answered within DATABASE_DEADLINE_SECONDS, typed, over HTTP and WebSocket; once it goes
on, everything answers again with no restart. Background work keeps its own limits."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import Any

import httpx
from pymongo import MongoClient
from websockets.asyncio.client import ClientConnection

from suspended_runs.server import EmbeddedMongoDB
from suspended_runs.storage import RUNS_COLLECTION, SNAPSHOTS_COLLECTION, Document
from tests.graphql_ws import next_for, open_session, subscribe
from tests.helpers import APPROVE, START, Server, stopped, suspended_doc

DEADLINE = 5.0
"""DATABASE_DEADLINE_SECONDS's default."""
SHORT = 1.0
"""A deadline shorter than a first start's work."""
UNAVAILABLE = {"code": "DATABASE_UNAVAILABLE", "retryAfterSeconds": 5}
LIST = "{ suspendedRuns { total runs { runId } } }"
RUN = "query($runId: ID!) { agentRun(runId: $runId) { status toolCalls { decision { action } } } }"
OTHER_LIST = 'subscription { suspendedRuns(filter: {agentId: "file-cleaner"}) { total } }'


async def _timed(answer: Awaitable[Any]) -> tuple[Any, float]:
    started = time.monotonic()
    return await answer, time.monotonic() - started


async def _asked(ws: ClientConnection, op_id: str, query: str, **variables: Any) -> Any:
    payload = {"query": query, "variables": variables}
    await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": payload}))
    return await next_for(ws, op_id)


def _post(client: httpx.AsyncClient, query: str, **variables: Any) -> Awaitable[httpx.Response]:
    return client.post("/graphql", json={"query": query, "variables": variables})


async def test_a_hung_database_answers_within_the_deadline_then_as_before(
    own_database: EmbeddedMongoDB, server: Server
) -> None:
    server.env["MONGODB_URI"] = own_database.uri
    server.start()
    assert server.process is not None
    pid = server.process.pid
    prompt = {"agentId": "file-cleaner", "prompt": "please delete /tmp/deadline.txt"}
    run_id = server.query(START, {"input": prompt})["data"]["startRun"]["run"]["runId"]
    watching, asking, subscribing = [await open_session(server.url) for _ in range(3)]
    assert (await subscribe(watching, "live"))["payload"]["data"]["suspendedRuns"]["total"] == 1
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        with stopped(own_database):
            answers = await asyncio.gather(
                _timed(_post(client, LIST)),
                _timed(_post(client, RUN, runId=run_id)),
                _timed(_post(client, APPROVE, input={"runId": run_id})),
                _timed(client.get("/readyz")),
                _timed(_asked(asking, "run", RUN, runId=run_id)),
                _timed(subscribe(subscribing, "other", OTHER_LIST)),
            )
        assert max(seconds for _, seconds in answers) <= DEADLINE + 1, answers
        listed, run, approved, ready, over_ws, subscribed = [answer for answer, _ in answers]
        for answer in (listed, run, approved):
            assert answer.json()["errors"][0]["extensions"] == UNAVAILABLE, answer.text
        assert approved.json()["data"] is None
        assert ready.status_code == 503
        assert ready.json() == {"status": "unavailable", "reason": "database"}
        for message in (over_ws, subscribed):
            assert message["payload"]["errors"][0]["extensions"] == UNAVAILABLE, message
        await _answers_again(client, run_id)
        # The subscriber from before still gets its pages: the watcher outlived its deadline.
        assert (await _page(watching, "live"))["total"] == 0
    again = await _asked(asking, "again", RUN, runId=run_id)
    assert again["payload"]["data"]["agentRun"]["status"] == "COMPLETED"
    assert server.process.pid == pid and server.process.poll() is None  # not restarted


async def _answers_again(client: httpx.AsyncClient, run_id: str) -> None:
    """Ready again by itself; the approval refused meanwhile forwarded nothing, and the
    same approval now continues the run."""
    async with asyncio.timeout(60):
        while (await client.get("/readyz")).status_code != 200:
            await asyncio.sleep(0.1)
    asked = {"query": RUN, "variables": {"runId": run_id}}
    run = (await client.post("/graphql", json=asked)).json()["data"]["agentRun"]
    assert run == {"status": "SUSPENDED", "toolCalls": [{"decision": None}]}
    body = {"query": APPROVE, "variables": {"input": {"runId": run_id}}}
    approved = (await client.post("/graphql", json=body)).json()["data"]["approveToolCall"]
    assert (approved["__typename"], approved["run"]["status"]) == ("RunDecided", "COMPLETED")


async def _page(ws: ClientConnection, op_id: str) -> Any:
    """The subscription's next page that lists no run (the approval's)."""
    async with asyncio.timeout(30):
        while True:
            page = (await next_for(ws, op_id))["payload"]["data"]["suspendedRuns"]
            if page["total"] == 0:
                return page


def test_a_first_start_builds_its_indexes_under_a_short_deadline(
    own_database: EmbeddedMongoDB, server: Server
) -> None:
    """A first start reads thousands of snapshots and builds the run index's indexes,
    longer in all than a short deadline: the follower's work runs under none, while a
    request's does."""
    with MongoClient[Document](own_database.uri) as mongo:
        runs = [suspended_doc(f"deadline-{i}", agent_id=f"agent-{i % 20}") for i in range(3000)]
        mongo["mastra"][SNAPSHOTS_COLLECTION].insert_many(runs)
        server.env.update(MONGODB_URI=own_database.uri, DATABASE_DEADLINE_SECONDS=str(SHORT))
        server.start()
        assert server.query(LIST)["data"]["suspendedRuns"]["total"] == 3000
        indexes = mongo["mastra"][RUNS_COLLECTION].index_information()
        assert len(indexes) > 2, indexes  # more than `_id` and `runId`: the read indexes
    with stopped(own_database):
        started = time.monotonic()
        listed = httpx.post(f"{server.url}/graphql", json={"query": LIST}, timeout=60)
        assert time.monotonic() - started <= SHORT + 1
    assert listed.json()["errors"][0]["extensions"] == UNAVAILABLE
