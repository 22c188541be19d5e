"""`scripts/bench --reviews`: what reviewing together costs (docs/reviews.md).

For each N of `--sizes`, the runs of the main bench, served with the keys and review
policies of `--assigned` (scripts/assigned.py: `key:bench` reviews agent-03's calls):

- `key:bench` starts a review of 30 of agent-03's runs; then a page of 20 of `all agents`
  (the `suspendedRuns` page the targets compare with), `inReview: false`,
  `inReviewByMe: true` and `inReview: true`, median and p95 in ms without `total` and with
  it, in one server, so the shapes compare as ratios;
- the insert cost of the two sparse indexes reviews add (`review.until`, `assignees`):
  entries as the server writes them, inserted one at a time into a collection with every
  index of the run index, and into one with all of them but those two;
- a review seen by another reviewer's subscription: `key:carol` subscribed to agent-03's
  first page with `inReviewBy`, the seconds from each `startReview` to the push that shows
  it (and from each `endReview` to the push without it).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from pymongo import MongoClient
from websockets.asyncio.client import ClientConnection, connect

from scripts.assigned import LIST, headers
from suspended_runs.storage import Document
from suspended_runs.storage.types import RUNS_COLLECTION

REVIEWED = 30
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("all agents (suspendedRuns)", {}),
    ("inReview: false", {"inReview": False}),
    ("inReviewByMe: true", {"inReviewByMe": True}),
    ("inReview: true", {"inReview": True}),
]
START = """mutation($id: ID!) { startReview(input: {runId: $id, minutes: 60}) { __typename } }"""
END = """mutation($id: ID!) { endReview(input: {runId: $id}) { __typename } }"""
AGENT_03 = """{ suspendedRuns(filter: {agentId: "agent-03"}, first: %d) { runs { runId } } }"""
WATCH = """subscription { suspendedRuns(filter: {agentId: "agent-03"}, first: 20) {
  runs { runId inReviewBy } } }"""
SPARSE = ("review.until_1", "assignees_1")


def agent_03_runs(client: httpx.Client, count: int) -> list[str]:
    body = client.post("/graphql", json={"query": AGENT_03 % count}).json()
    return [run["runId"] for run in body["data"]["suspendedRuns"]["runs"]]


def start_reviews(url: str) -> None:
    """`key:bench` reviews `REVIEWED` of agent-03's runs."""
    with httpx.Client(base_url=url, timeout=120, headers=headers()) as client:
        for run_id in agent_03_runs(client, REVIEWED):
            body = client.post("/graphql", json={"query": START, "variables": {"id": run_id}})
            assert body.json()["data"]["startReview"]["__typename"] == "ReviewStarted", body.text


def figures(url: str, repeats: int) -> dict[str, tuple[list[float], list[float]]]:
    """name -> (ms without total, ms with total), each shape warmed up first."""
    found = {}
    with httpx.Client(base_url=url, timeout=120, headers=headers()) as client:
        for name, shape in SHAPES:
            _timed(client, shape, True, 20)
            found[name] = (
                _timed(client, shape, False, repeats),
                _timed(client, shape, True, repeats),
            )
    return found


def _timed(client: httpx.Client, shape: dict[str, Any], total: bool, repeats: int) -> list[float]:
    took = []
    query = LIST % ("total" if total else "")
    for _ in range(repeats):
        started = time.perf_counter()
        answer = client.post("/graphql", json={"query": query, "variables": {"filter": shape}})
        took.append((time.perf_counter() - started) * 1000)
        assert "errors" not in answer.json(), answer.text
    return took


def index_cost(uri: str, db_name: str, count: int) -> tuple[float, float]:
    """Entries inserted a second, one at a time: without the two sparse indexes, with them."""
    rates = []
    with MongoClient[Document](uri) as client:
        served = client[db_name][RUNS_COLLECTION]
        entry = served.find_one({"review": {"$exists": False}}, {"_id": 0})
        assert entry is not None
        indexes = served.index_information()
        for with_sparse in (False, True):
            target = client[f"{db_name}_inserts"][f"entries_{with_sparse}"]
            for name, spec in indexes.items():
                if name == "_id_" or (name in SPARSE and not with_sparse):
                    continue
                options = {k: v for k, v in spec.items() if k in ("unique", "sparse")}
                target.create_index(spec["key"], name=name, **options)
            began = time.perf_counter()
            for i in range(count):
                target.insert_one({**entry, "runId": f"bench-{i}"})
            rates.append(count / (time.perf_counter() - began))
        client.drop_database(f"{db_name}_inserts")
    return rates[0], rates[1]


async def _watcher(url: str) -> ClientConnection:
    ws = await connect(
        url.replace("http", "ws", 1) + "/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        max_queue=None,
    )
    payload = {"apiKey": headers("carol")["X-API-Key"]}
    await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": WATCH}}))
    return ws


async def _shown(ws: ClientConnection, run_id: str, reviewer: str | None) -> float:
    """When `ws` got a page that shows `run_id` reviewed by `reviewer` (perf_counter)."""
    while True:
        message = json.loads(await ws.recv())
        runs = (message.get("payload") or {}).get("data", {}).get("suspendedRuns", {})
        for run in (runs or {}).get("runs", []):
            if run["runId"] == run_id and run["inReviewBy"] == reviewer:
                return time.perf_counter()


async def push_delays(url: str, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds from each startReview to carol's push showing it, and from each endReview."""
    ws = await _watcher(url)
    started_to_push: list[float] = []
    ended_to_push: list[float] = []
    try:
        async with httpx.AsyncClient(base_url=url, timeout=60, headers=headers()) as client:
            body = await client.post("/graphql", json={"query": AGENT_03 % 20})
            run_id = body.json()["data"]["suspendedRuns"]["runs"][-1]["runId"]
            await client.post("/graphql", json={"query": END, "variables": {"id": run_id}})
            await asyncio.wait_for(_shown(ws, run_id, None), 30)
            for _ in range(rounds):
                for query, seen, delays in (
                    (START, "key:bench", started_to_push),
                    (END, None, ended_to_push),
                ):
                    began = time.perf_counter()
                    await client.post(
                        "/graphql", json={"query": query, "variables": {"id": run_id}}
                    )
                    delays.append(await asyncio.wait_for(_shown(ws, run_id, seen), 30) - began)
                    await asyncio.sleep(0.2)
    finally:
        await ws.close()
    return started_to_push, ended_to_push
