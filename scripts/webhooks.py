"""`scripts/bench --webhooks`: how fast suspensions reach a webhook.

On a fresh embedded MongoDB, against `suspended-runs serve`, with one webhook of
`run.suspended` posting to a receiver on loopback that answers 204 at once:

- a burst: `--webhook-burst` runs written as Mastra writes them, as fast as one writer
  can: events delivered per second (from the first write to the last delivery);
- one at a time: `--webhook-singles` runs written a tenth of a second apart: the delay
  from each write to its delivery (median, p99), the follower's part included.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from pymongo import MongoClient

from scripts.copies import suspended_templates
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document

CREATE = """mutation($url: String!) { createWebhook(input: {url: $url, events: [RUN_SUSPENDED]})
  { __typename } }"""


class Receiver:
    """Records when each run's `run.suspended` arrived (the first arrival)."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        lock = threading.Lock()
        arrived = self.arrived

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with lock:
                    arrived.setdefault(body["data"]["run"]["runId"], time.perf_counter())
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def delivery_figures(url: str, mongo_uri: str, db: str, burst: int, singles: int) -> Document:
    receiver = Receiver()
    snapshots = MongoClient[Document](mongo_uri, tz_aware=True)[db][SNAPSHOTS_COLLECTION]
    try:
        made = httpx.post(
            f"{url}/graphql", json={"query": CREATE, "variables": {"url": receiver.url}}
        )
        assert made.json()["data"]["createWebhook"]["__typename"] == "WebhookCreated", made.text
        template = suspended_templates()[0]
        written: dict[str, float] = {}
        for _ in range(burst):
            run_id = str(uuid.uuid4())
            snapshots.insert_many(template.copy(run_id, "webhook-agent", datetime.now(UTC)))
            written[run_id] = time.perf_counter()
        _wait_for(receiver, written)
        first = min(written.values())
        rate = burst / (max(receiver.arrived[r] for r in written) - first)
        delays = []
        for _ in range(singles):
            run_id = str(uuid.uuid4())
            snapshots.insert_many(template.copy(run_id, "webhook-agent", datetime.now(UTC)))
            wrote = time.perf_counter()
            _wait_for(receiver, {run_id: wrote})
            delays.append(receiver.arrived[run_id] - wrote)
            time.sleep(0.1)
    finally:
        receiver.close()
        snapshots.database.client.close()
    return {"rate": rate, "delays": delays}


def _wait_for(receiver: Receiver, runs: dict[str, float], limit_s: float = 600) -> None:
    deadline = time.perf_counter() + limit_s
    while any(run_id not in receiver.arrived for run_id in runs):
        if time.perf_counter() > deadline:
            missing = sum(run_id not in receiver.arrived for run_id in runs)
            raise SystemExit(f"{missing} of {len(runs)} suspensions never reached the webhook")
        time.sleep(0.01)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(delays: list[float]) -> str:
    ms = [d * 1000 for d in delays]
    return f"{statistics.median(ms):.0f} / {p99(ms):.0f} ms"
