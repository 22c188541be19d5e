"""`scripts/bench --churn`: how fast Mastra's writes show in the lists.

On a fresh embedded MongoDB holding `--churn-base` runs, indexed by a first start and
restarted (the data at rest, as a deployment's follower finds it):

- the rate the database itself takes Mastra-shaped snapshot inserts, one at a time (as
  @mastra/mongodb writes them), with no server running;
- a burst: the same number written while `suspended-runs serve` follows by change stream,
  and how many changes a second it applies (first write to the last one listed);
- steady churn at each rate of `--churn-rates` for `--churn-seconds`: new runs (some with
  old or equal `createdAt`), runs that complete (snapshot deleted) and runs resumed
  elsewhere (snapshot settled), while `--clients` clients poll every list shape with
  `total`; per write, the time until the API shows it (p50, p99, max), and the highest
  rate whose p99 stays under a second;
- `--churn-down` writes while the server is stopped, then the time until a restart says
  ready, and whether every list was right at that moment;
- a restart with nothing changed, and the time until it says ready.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from pymongo import MongoClient

from scripts.copies import copies
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document

AGENT = "churn"
SHAPES = [
    "{}",
    '{agentId: "agent-00"}',
    '{resourceId: "user-1"}',
    '{agentId: "churn"}',
    '{agentId: "agent-01", resourceId: "user-1"}',
]
STATUS = 'a%d: agentRun(runId: "%s") { status }'


@dataclass
class Write:
    run_id: str
    expected: str
    """The status that shows the write: SUSPENDED for a new run, ENDED (or no run at all)
    for the others."""
    at: float
    seen: float | None = None


@dataclass
class Churn:
    rate: int
    delays: list[float] = field(default_factory=list)
    unseen: int = 0

    def figures(self) -> tuple[float, float, float]:
        ordered = sorted(self.delays) or [float("nan")]
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return statistics.median(ordered), p99, ordered[-1]


def _snapshots(uri: str, db_name: str) -> Any:
    return MongoClient[Document](uri, tz_aware=True)[db_name][SNAPSHOTS_COLLECTION]


def _new_runs(count: int, start: datetime, agent: str | None = None) -> list[Document]:
    """The documents of `count` new runs (each run's every document, as Mastra writes them)."""
    docs = [doc for run in copies(count, 20, start) for doc in run]
    for doc in docs:
        doc["updatedAt"] = datetime.now(UTC)
        if agent is not None:
            steps = doc["snapshot"]["context"]
            for step in steps.values():
                payload = step.get("suspendPayload") if isinstance(step, dict) else None
                if isinstance(payload, dict) and "__agentId" in payload:
                    payload["__agentId"] = agent
    return docs


def insert_rate(uri: str, db_name: str, count: int) -> float:
    """Inserts a second the database takes, one document at a time, nothing following."""
    collection = _snapshots(uri, db_name)
    docs = _new_runs(count, datetime(2025, 1, 1, tzinfo=UTC))
    started = time.perf_counter()
    for doc in docs:
        collection.insert_one(doc)
    return len(docs) / (time.perf_counter() - started)


def changes_per_run() -> int:
    """How many documents Mastra writes for one suspended run (its workflows' snapshots)."""
    return len(_new_runs(1, datetime(2025, 1, 1, tzinfo=UTC)))


def caught_up(client: httpx.Client) -> None:
    """Waits until the follower has applied every change it has read (twice in a row)."""
    seen = 0
    while seen < 2:
        body = client.post("/graphql", json={"query": "{ sync { caughtUp } }"}).json()
        seen = seen + 1 if body["data"]["sync"]["caughtUp"] else 0
        time.sleep(0.2)


def total(client: httpx.Client, shape: str = "{}") -> int:
    query = f"{{ suspendedRuns(filter: {shape}, first: 1) {{ total }} }}"
    body = client.post("/graphql", json={"query": query}).json()
    return int(body["data"]["suspendedRuns"]["total"])


def burst_rate(uri: str, db_name: str, url: str, runs: int) -> tuple[float, float, float]:
    """The documents of `runs` new runs inserted one at a time: changes a second the
    follower applies (from the first write to the last run listed), inserts a second the
    writer got meanwhile, and seconds from the last insert to the last run listed."""
    collection = _snapshots(uri, db_name)
    with httpx.Client(base_url=url, timeout=60) as client:
        before = total(client)
        docs = _new_runs(runs, datetime(2025, 6, 1, tzinfo=UTC))
        started = time.perf_counter()
        for doc in docs:
            collection.insert_one(doc)
        written = time.perf_counter()
        while total(client) < before + runs:
            time.sleep(0.02)
        listed = time.perf_counter()
        return len(docs) / (listed - started), len(docs) / (written - started), listed - written


def _poll(url: str, stop: threading.Event, every: float) -> None:
    """A dashboard: every list shape with `total`, all of them every `every` seconds (0:
    as fast as the server answers)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            for shape in SHAPES:
                query = (
                    f"{{ suspendedRuns(filter: {shape}, first: 20) {{ total runs {{ runId }} }} }}"
                )
                client.post("/graphql", json={"query": query})
            stop.wait(max(0.0, started + every - time.perf_counter()))


def _write(collection: Any, rng: random.Random, live: list[str]) -> Write:
    """One write as Mastra makes them: mostly new runs (a fifth with an old or an equal
    `createdAt`), some completed (deleted), some resumed elsewhere (settled). `live`: the
    runs already seen listed (only those end: one ended before it was seen would never
    be seen SUSPENDED)."""
    now = datetime.now(UTC)
    kind = rng.random()
    if kind < 0.6 or len(live) < 20:
        created = now - timedelta(days=rng.randrange(30)) if rng.random() < 0.2 else now
        docs = _new_runs(1, created.replace(microsecond=0), AGENT)  # whole seconds: ties
        collection.insert_many(docs)
        return Write(docs[0]["run_id"], "SUSPENDED", time.perf_counter())
    run_id = live.pop(rng.randrange(len(live)))
    if kind < 0.8:
        collection.delete_many({"run_id": run_id})
    else:
        update = {"snapshot.status": "success", "updatedAt": now}
        collection.update_many({"run_id": run_id}, {"$set": update})
    return Write(run_id, "ENDED", time.perf_counter())


def _check(
    url: str, pending: list[Write], live: list[str], lock: threading.Lock, stop: threading.Event
) -> None:
    """Marks each write seen once the API shows it: every pending write is asked each
    round (`_ASKED` at a time), so a write's delay is not the checker's own backlog."""
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set() or pending:
            with lock:
                round_ = list(pending)
            if not round_:
                time.sleep(0.01)
                continue
            for at in range(0, len(round_), _ASKED):
                _ask(client, round_[at : at + _ASKED], pending, live, lock)
            if stop.is_set() and time.perf_counter() > _deadline(round_):
                return


_ASKED = 25
"""Writes asked in one request (`MAX_QUERY_ALIASES` allows 30)."""


def _ask(
    client: httpx.Client,
    asked: list[Write],
    pending: list[Write],
    live: list[str],
    lock: threading.Lock,
) -> None:
    query = "{ " + " ".join(STATUS % (i, w.run_id) for i, w in enumerate(asked)) + " }"
    body = client.post("/graphql", json={"query": query}).json()
    if body.get("data") is None:
        raise SystemExit(f"the check was refused: {body.get('errors')}")
    data = body["data"]
    now = time.perf_counter()
    with lock:
        for i, write in enumerate(asked):
            status = (data.get(f"a{i}") or {}).get("status")
            # A run removed before the follower saw it was never listed: shown right.
            if status == write.expected or (status is None and write.expected == "ENDED"):
                write.seen = now
                pending.remove(write)
                if write.expected == "SUSPENDED":
                    live.append(write.run_id)


def _deadline(asked: list[Write]) -> float:
    return max(w.at for w in asked) + 30


def churn(
    uri: str, db_name: str, url: str, rate: int, seconds: float, clients: int, every: float
) -> Churn:
    """Writes at `rate` a second for `seconds`, `clients` polling meanwhile (`_poll`)."""
    collection, rng = _snapshots(uri, db_name), random.Random(rate)
    live: list[str] = []
    writes: list[Write] = []
    pending: list[Write] = []
    lock, stop = threading.Lock(), threading.Event()
    pollers = [threading.Thread(target=_poll, args=(url, stop, every)) for _ in range(clients)]
    checker = threading.Thread(target=_check, args=(url, pending, live, lock, stop))
    for thread in [*pollers, checker]:
        thread.start()
    started = time.perf_counter()
    for k in range(int(rate * seconds)):
        time.sleep(max(0.0, started + k / rate - time.perf_counter()))
        with lock:
            write = _write(collection, rng, live)
            pending.append(write)
        writes.append(write)
    stop.set()
    for thread in [*pollers, checker]:
        thread.join()
    result = Churn(rate)
    result.delays = [w.seen - w.at for w in writes if w.seen is not None]
    result.unseen = sum(w.seen is None for w in writes)
    return result
