"""`scripts/bench --webhooks`: how fast suspensions reach webhooks, and what a flood of
webhooks costs everyone else.

Against `suspended-runs serve` on an embedded MongoDB, with webhooks of `run.suspended`
(STANDARD format) posting to a receiver in a process of its own (scripts/receiver.py,
answering 204 at once unless told otherwise), one event per run, runs written as Mastra
writes them (two documents each) by another process, `--webhook-batch` runs a write:

- burst: `--webhook-burst` runs: the seconds until the API lists them all and until the
  last is delivered, from the first write, as rates;
- singles: `--webhook-singles` runs written a tenth of a second apart: write -> delivered;
- kill: the burst again, the server killed (SIGKILL) once a third is delivered and started
  again: every event delivered at least once, the duplicates, and the rate after the start;
- flood: `--webhook-flood` webhooks of one admin to a receiver that never answers, then 5
  runs: another caller's page, asked every quarter second for `--webhook-flood-seconds`
  (p50, p99, max), and /readyz after each (p99, max, answers not 200); again with a
  receiver that answers;
- failing: the burst to two webhooks answering 204, then to two of which one answers 500
  for `--webhook-fail-seconds` first: each one's rate, and nothing lost.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pymongo import MongoClient

from scripts.copies import suspended_templates
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document

CREATE = """mutation($url: String!) { createWebhook(input: {url: $url, events: [RUN_SUSPENDED]})
  { __typename } }"""
PAGE = "{ suspendedRuns(perPage: 20) { runs { runId agentId toolCalls { toolName args } } } }"
FLOOD_SETTINGS = {
    "WEBHOOK_MAX_PER_CREATOR": "1000",
    "WEBHOOK_MAX_PER_SCOPE": "1000",
    "WEBHOOK_MAX_TOTAL": "1000",
}
"""A flood's webhooks are more than the caps allow: as if made before the caps were set."""


@dataclass(frozen=True)
class Request:
    at: float
    path: str
    status: int
    webhook_id: str
    run_id: str


class Receiver:
    """scripts/receiver.py in a process of its own."""

    def __init__(self, folder: Path, fail_for: float = 10.0) -> None:
        self.log = folder / f"receiver-{uuid.uuid4().hex[:8]}.log"
        self.log.touch()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scripts.receiver", str(self.log), "--fail-for", str(fail_for)],
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def requests(self) -> list[Request]:
        found = []
        text = self.log.read_text()
        for line in text[: text.rfind("\n") + 1].splitlines():  # not a line being written
            at, path, status, webhook_id, run_id = line.split(" ")
            found.append(Request(float(at), path, int(status), webhook_id, run_id))
        return found

    def delivered(self, path: str) -> dict[str, float]:
        """When each run's event was first answered 2xx at `path`."""
        first: dict[str, float] = {}
        for r in self.requests():
            if r.path == f"/{path}" and r.status < 300:
                first.setdefault(r.run_id, r.at)
        return first

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def duplicates(receiver: Receiver) -> int:
    """Events answered 2xx more than once (at least once allows them)."""
    ok = Counter((r.path, r.webhook_id) for r in receiver.requests() if r.status < 300)
    return sum(n - 1 for n in ok.values())


def make_webhooks(url: str, target: str, count: int, actor: str = "bench-admin") -> None:
    with httpx.Client(base_url=url, timeout=60, headers={"x-actor": actor}) as client:
        for _ in range(count):
            made = client.post("/graphql", json={"query": CREATE, "variables": {"url": target}})
            assert made.json()["data"]["createWebhook"]["__typename"] == "WebhookCreated", made.text


def _write(uri: str, db: str, count: int, batch: int, agent: str, out: str) -> None:
    """In another process: `count` runs, `batch` a write; when each was written."""
    snapshots = MongoClient[Document](uri, tz_aware=True)[db][SNAPSHOTS_COLLECTION]
    template, written = suspended_templates()[0], dict[str, float]()
    for _ in range(0, count, batch):
        runs = [str(uuid.uuid4()) for _ in range(min(batch, count - len(written)))]
        docs = [doc for r in runs for doc in template.copy(r, agent, datetime.now(UTC))]
        snapshots.insert_many(docs)
        written |= dict.fromkeys(runs, time.time())
    Path(out).write_text(json.dumps(written))


def write_burst(uri: str, db: str, count: int, batch: int, agent: str, folder: Path) -> Any:
    """A process writing the burst; `.join()` it, then `written(...)` says when."""
    out = folder / f"written-{agent}.json"
    spawn = multiprocessing.get_context("spawn")
    process = spawn.Process(target=_write, args=(uri, db, count, batch, agent, str(out)))
    process.start()
    process.out = out  # type: ignore[attr-defined]
    return process


def written(process: Any) -> dict[str, float]:
    process.join()
    found: dict[str, float] = json.loads(Path(process.out).read_text())
    return found


def listed(url: str, agent: str) -> int:
    query = f'{{ suspendedRuns(filter: {{agentId: "{agent}"}}, first: 1) {{ total }} }}'
    body = httpx.post(f"{url}/graphql", json={"query": query}, timeout=60).json()
    return int(body["data"]["suspendedRuns"]["total"])


def wait_until(check: Any, limit_s: float = 900, every: float = 0.1) -> float:
    """Polls `check()` until true; the time.time() it was."""
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("the bench waited too long: see the server's log")
        time.sleep(every)
    return time.time()


def burst(url: str, uri: str, db: str, count: int, batch: int, folder: Path) -> Document:
    """Seconds from the first write until all are listed, and until all are delivered."""
    receiver = Receiver(folder)
    try:
        make_webhooks(url, receiver.url("ok"), 1)
        agent = f"burst-{uuid.uuid4().hex[:6]}"
        writer = write_burst(uri, db, count, batch, agent, folder)
        listed_at = wait_until(lambda: listed(url, agent) >= count)
        wait_until(lambda: len(receiver.delivered("ok")) >= count)
        first = min(written(writer).values())
        last = max(receiver.delivered("ok").values())
    finally:
        receiver.close()
    return {"listed_s": listed_at - first, "delivered_s": last - first, "count": count}


def singles(url: str, uri: str, db: str, count: int, folder: Path) -> list[float]:
    """Write -> delivered, one run at a time, a tenth of a second apart."""
    receiver = Receiver(folder)
    snapshots = MongoClient[Document](uri, tz_aware=True)[db][SNAPSHOTS_COLLECTION]
    template, delays = suspended_templates()[0], []
    try:
        make_webhooks(url, receiver.url("single"), 1)
        for _ in range(count):
            run_id = str(uuid.uuid4())
            wrote = time.time()
            snapshots.insert_many(template.copy(run_id, "single-agent", datetime.now(UTC)))
            wait_until(lambda: run_id in receiver.delivered("single"), every=0.005)  # noqa: B023
            delays.append(receiver.delivered("single")[run_id] - wrote)
            time.sleep(0.1)
    finally:
        receiver.close()
        snapshots.database.client.close()
    return delays


def polled(
    url: str,
    seconds: float,
    took: list[float],
    stop: threading.Event,
    ready: list[tuple[float, int]] | None = None,
) -> None:
    """Another caller: a page every quarter second, each one's seconds in `took`; with
    `ready`, /readyz after each page, its seconds and status there."""
    end = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=120) as client:
        while time.monotonic() < end and not stop.is_set():
            started = time.monotonic()
            assert client.post("/graphql", json={"query": PAGE}).status_code == 200
            took.append(time.monotonic() - started)
            if ready is not None:
                asked = time.monotonic()
                status = client.get("/readyz").status_code
                ready.append((time.monotonic() - asked, status))
            time.sleep(max(0.25 - (time.monotonic() - started), 0.0))


def flood(
    url: str, uri: str, db: str, webhooks: int, seconds: float, path: str, folder: Path
) -> Any:
    """`webhooks` webhooks of one admin to `path`, then 5 runs: another caller's pages
    and /readyz (seconds, status), and the attempts the receiver saw."""
    receiver = Receiver(folder)
    took: list[float] = []
    ready: list[tuple[float, int]] = []
    try:
        make_webhooks(url, receiver.url(path), webhooks, actor="flooding-admin")
        poll = (url, seconds, took, threading.Event(), ready)
        poller = threading.Thread(target=polled, args=poll)
        poller.start()
        time.sleep(0.5)
        written(write_burst(uri, db, 5, 5, f"flood-{uuid.uuid4().hex[:6]}", folder))
        poller.join()
        attempts = len(receiver.requests())
    finally:
        receiver.close()
    return took, attempts, ready


def readiness(ready: list[tuple[float, int]]) -> str:
    """/readyz: p99 and max, and how many answers were not 200."""
    ms = [seconds * 1000 for seconds, _ in ready]
    not_ready = sum(status != 200 for _, status in ready)
    return f"{p99(ms):.0f} / {max(ms):.0f} ms, {not_ready} of {len(ready)} not 200"


def failing(
    url: str, uri: str, db: str, count: int, batch: int, folder: Path, fail_for: float
) -> Document:
    """The burst to two webhooks (paths `ok` and `fail`) of one receiver, the second
    answering 500 for `fail_for` seconds first (0: never): the seconds from the first write
    until each has every event, and how many attempts were answered 500."""
    receiver = Receiver(folder, fail_for)
    try:
        make_webhooks(url, receiver.url("fail"), 1)
        make_webhooks(url, receiver.url("ok"), 1)
        agent = f"failing-{uuid.uuid4().hex[:6]}"
        first = min(written(write_burst(uri, db, count, batch, agent, folder)).values())
        wait_until(lambda: len(receiver.delivered("ok")) >= count)
        ok_last = max(receiver.delivered("ok").values())
        wait_until(lambda: len(receiver.delivered("fail")) >= count, every=0.5)
        fail_last = max(receiver.delivered("fail").values())
        failed_answers = sum(r.status >= 500 for r in receiver.requests())
        duplicated = duplicates(receiver)
    finally:
        receiver.close()
    return {
        "ok_s": ok_last - first,
        "fail_s": fail_last - first,
        "500s": failed_answers,
        "twice": duplicated,
    }


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(delays: list[float]) -> str:
    ms = [d * 1000 for d in delays]
    return f"{statistics.median(ms):.0f} / {p99(ms):.0f} ms"


def pages(took: list[float]) -> str:
    ms = [t * 1000 for t in took]
    return f"{statistics.median(ms):.0f} / {p99(ms):.0f} / {max(ms):.0f} ms"
