"""`scripts/bench --live`: what subscriptions and traces cost.

On a fresh embedded MongoDB, against `suspended-runs serve`:

- `--live-subscribers` WebSocket clients subscribed to one agent's first page; then
  `--live-writes` runs of that agent written as Mastra writes them, one at a time: the
  delay from each write to each subscriber's push (median, p99), the delay to the last of
  them, and the server's evaluations per write (its own counter);
- for comparison, the delay from a write until an HTTP poll lists it (the follower's part);
- the same page of 50 runs asked over HTTP of a server without tracing and of one that
  traces (exporting by OTLP/HTTP to a local receiver that accepts and drops), in turns.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from pymongo import AsyncMongoClient
from websockets.asyncio.client import ClientConnection, connect

from scripts.copies import suspended_templates
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document

AGENT = "live-agent"
WATCH = f"""subscription {{
  suspendedRuns(filter: {{agentId: "{AGENT}"}}, first: 20) {{ total runs {{ runId }} }} }}"""
EVALUATIONS = re.compile(r"^suspended_runs_subscription_evaluations_total (\S+)$", re.M)
PAGE_OF_50 = """{ suspendedRuns(first: 50) { total runs { runId agentId status threadId
  resourceId createdAt suspendedAt toolCalls { toolCallId toolName args requiresApproval
  suspendPayload expiresAt decision { action decidedBy } } } } }"""


def evaluations(url: str) -> float:
    found = EVALUATIONS.search(httpx.get(f"{url}/metrics", timeout=30).text)
    return float(found.group(1)) if found else 0.0


async def _subscriber(url: str) -> ClientConnection:
    ws = await connect(
        url.replace("http", "ws", 1) + "/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        max_queue=None,
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": WATCH}}))
    return ws


async def _pushed(ws: ClientConnection, total: int) -> float:
    """When `ws` got a page of `total` runs (perf_counter seconds)."""
    while True:
        message = json.loads(await ws.recv())
        page = (message.get("payload") or {}).get("data", {}).get("suspendedRuns")
        if message.get("type") == "next" and page["total"] == total:
            return time.perf_counter()


async def push_delays(
    url: str, uri: str, db_name: str, subscribers: int, writes: int
) -> dict[str, Any]:
    """Seconds from each write to each push, and to the last push of each write."""
    sessions = [await _subscriber(url) for _ in range(subscribers)]
    await asyncio.gather(*(_pushed(ws, 0) for ws in sessions))
    template = suspended_templates()[0]
    client: AsyncMongoClient[Document] = AsyncMongoClient(uri)
    snapshots = client[db_name][SNAPSHOTS_COLLECTION]
    each: list[float] = []
    last: list[float] = []
    before = evaluations(url)
    try:
        for k in range(1, writes + 1):
            docs = template.copy(str(uuid.uuid4()), AGENT, datetime.now(UTC))
            started = time.perf_counter()
            await snapshots.insert_many(docs)
            got = await asyncio.gather(*(_pushed(ws, k) for ws in sessions))
            delays = [moment - started for moment in got]
            each += delays
            last.append(max(delays))
            await asyncio.sleep(0.2)
    finally:
        for ws in sessions:
            await ws.close()
        await client.close()
    return {"each": each, "last": last, "evaluations": evaluations(url) - before}


async def listed_delays(url: str, uri: str, db_name: str, writes: int, start: int) -> list[float]:
    """Seconds from each write until an HTTP poll (every 5 ms) lists it: the follower's
    own part of a push's delay, with no subscription."""
    template = suspended_templates()[0]
    query = WATCH.replace("subscription", "query", 1)
    client: AsyncMongoClient[Document] = AsyncMongoClient(uri)
    snapshots = client[db_name][SNAPSHOTS_COLLECTION]
    delays = []
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for k in range(start + 1, start + writes + 1):
                docs = template.copy(str(uuid.uuid4()), AGENT, datetime.now(UTC))
                started = time.perf_counter()
                await snapshots.insert_many(docs)
                while True:
                    body = (await http.post("/graphql", json={"query": query})).json()
                    if body["data"]["suspendedRuns"]["total"] == k:
                        break
                    await asyncio.sleep(0.005)
                delays.append(time.perf_counter() - started)
                await asyncio.sleep(0.2)
    finally:
        await client.close()
    return delays


class Sink:
    """An OTLP/HTTP receiver that accepts every export and keeps nothing."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def page_costs(plain: str, traced: str, repeats: int) -> tuple[list[float], list[float]]:
    """ms of the page of 50 from each server, asked in turns (the machine's noise shared)."""
    times: dict[str, list[float]] = {plain: [], traced: []}
    with httpx.Client(timeout=60) as client:
        for url in (plain, traced):  # warm-up
            for _ in range(10):
                client.post(f"{url}/graphql", json={"query": PAGE_OF_50})
        for _ in range(repeats):
            for url in (plain, traced):
                started = time.perf_counter()
                body = client.post(f"{url}/graphql", json={"query": PAGE_OF_50}).json()
                times[url].append((time.perf_counter() - started) * 1000)
                assert "errors" not in body and len(body["data"]["suspendedRuns"]["runs"]) == 50
    return times[plain], times[traced]


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[-1]
