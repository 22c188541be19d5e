"""`scripts/bench`: the dashboard at scale, on a fresh embedded MongoDB.

For each N (`--sizes`): N Mastra-shaped suspended runs (copies of the fixture documents,
new ids, over 20 agents, 200 resources and 2,000 threads, one a second) go into a fresh
database; the embedded server is restarted (the data at rest, as a deployment's), then
`suspended-runs serve` starts on it (the first start is timed, and its peak RSS read);
then, over HTTP:

- every list shape's median and p95 (a page of 20: all agents, by agent, resource,
  thread, agent+thread, agent+resource, a date range, an offset page, a keyset page,
  `runs` over two states), without and with `total`; and with `total` on the first poll
  after a write (a run started just before);
- requests per second with `--clients` clients: conditional polls answered 304, and full
  pages (GET, each client its own agent);
- `--restarts` restarts, one after the other (the resume token resumes: nothing is read
  again); their median, and the fastest and slowest, as a restart's time varies with
  what this machine is doing at that moment (a second either way).

Then `--large` runs of `--large-kb` kB each (long conversations): first start, restarts.
Then the write path (`--starts`; 0 skips it): startRun until suspended, approveToolCall,
and decideToolCalls of 100 approvals, through completion. Optionally (`--scans`) the same
agent page the way Mastra's `listSuspendedRuns()` computes it (every suspended snapshot
read in pages of 100, parsed and filtered in the process).

`--churn`, `--hostile`, `--live`, `--webhooks`, `--assigned`, `--reviews`, `--hung`,
`--langgraph`, `--slow-bodies` and `--relay` print only the follower's figures, hostile
requests', subscriptions' and traces', webhooks' (scripts/webhooks.py), `assignedToMe`
lists' beside other shapes (scripts/assigned.py), reviews' lists, index and pushes
(scripts/reviews.py), the seconds to a typed answer while the database hangs
(scripts/hung.py), LangGraph threads' beside Mastra runs (scripts/threads.py), other
clients' polls beside slow request bodies (scripts/slow_bodies.py), and `node`, `nodes` and
connections beside `agentRun` and the pages (scripts/relay.py).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pymongo import MongoClient

from scripts import (
    assigned,
    churn,
    hostile,
    hung,
    live,
    relay,
    reviews,
    slow_bodies,
    threads,
    webhooks,
)
from scripts.copies import copies, insert_runs
from suspended_runs.server import EmbeddedMongoDB
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document, extract_entry

AGENTS, RESOURCES, THREADS = 20, 200, 2000
PAGE = 20
START = datetime(2026, 1, 1, tzinfo=UTC)
RUN_FIELDS = """runId agentId threadId resourceId createdAt suspendedAt
  toolCalls { toolCallId toolName args requiresApproval suspendPayload }"""
SUSPENDED = """query List($filter: SuspendedRunsFilter%s) {
  suspendedRuns(filter: $filter, %s) { %s hasMore nextCursor runs { %s } } }"""
RUNS = """query History($filter: RunsFilter) {
  runs(filter: $filter, perPage: 20, page: 0) { %s hasMore runs { %s status } } }"""


# -- data -------------------------------------------------------------------------------


def varied(docs: list[Document], i: int, kilobytes: int = 0) -> list[Document]:
    """A copy's documents with run `i`'s resource and thread (and, with `kilobytes`, a
    conversation that long in each step's stream state and outputs, as Mastra keeps it)."""
    info = {"threadId": f"thread-{i % THREADS}", "resourceId": f"user-{i % RESOURCES}"}
    message = {"role": "assistant", "content": [{"type": "text", "text": "x" * 900}]}
    for doc in docs:
        doc["resourceId"] = info["resourceId"]
        steps = (doc.get("snapshot") or {}).get("context") or {}
        for step in steps.values():
            payload = step.get("suspendPayload") if isinstance(step, dict) else None
            messages = ((payload or {}).get("__streamState") or {}).get("messageList")
            if isinstance(messages, dict):
                messages["memoryInfo"] = dict(info)
                if kilobytes:
                    messages["messages"] = [dict(message, id=f"m{k}") for k in range(kilobytes)]
            if kilobytes and isinstance(step, dict) and "output" in step:
                step["output"] = {"steps": [dict(message, id=f"o{k}") for k in range(8)]}
    return docs


def load(uri: str, db_name: str, count: int, kilobytes: int = 0) -> float:
    """Insert `count` runs; seconds it took."""
    started = time.perf_counter()
    with MongoClient[Document](uri) as client:
        runs = (varied(docs, i, kilobytes) for i, docs in enumerate(copies(count, AGENTS, START)))
        insert_runs(client[db_name][SNAPSHOTS_COLLECTION], runs)
    return time.perf_counter() - started


# -- the server ---------------------------------------------------------------------------


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    ready_s: float

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def memory_mb(self) -> tuple[float, float]:
        """(RSS now, peak RSS) of the server process, in MB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        kb = {
            line.split(":")[0]: int(line.split()[1])
            for line in status.splitlines()
            if line.startswith(("VmRSS", "VmHWM"))
        }
        return kb["VmRSS"] / 1024, kb["VmHWM"] / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def serve(uri: str, db_name: str, log: Path, **settings: str) -> Served:
    """`suspended-runs serve` on `db_name`, with `settings` (environment variables) added."""
    port = free_port()
    env = {**os.environ, "MONGODB_URI": uri, "MONGODB_DB": db_name, "PORT": str(port)}
    env["LOG_LEVEL"] = "WARNING"
    env.update(settings)
    started = time.perf_counter()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "suspended_runs.server.cli", "serve"],
            env=env,
            stdout=out,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server exited; see {log}")
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                return Served(process, url, time.perf_counter() - started)
        except httpx.TransportError:
            pass
        time.sleep(0.05)


def counts_in_memory(
    url: str, limit_s: float = 600, headers: dict[str, str] | None = None
) -> float:
    """Seconds until the server keeps its counts of suspended runs in memory: its first
    count starts their read (here, a scrape of /metrics), which lists are timed after, as
    a server that has run a while serves them."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        scraped = httpx.get(f"{url}/metrics", timeout=120, headers=headers).text
        if "suspended_runs_counts_in_memory 1.0" in scraped:
            return time.perf_counter() - started
        time.sleep(0.2)
    raise SystemExit(f"the counts were not in memory within {limit_s:.0f} s")


# -- list shapes ---------------------------------------------------------------------------

Shape = Callable[[int], tuple[str, dict[str, Any]]]


def shapes(n: int) -> dict[str, Shape]:
    """Each list shape: i -> (query template, variables), spread over agents, resources,
    threads and times."""
    middle = START + timedelta(seconds=n // 2)
    window = {"fromDate": _iso(middle - timedelta(seconds=n // 8)), "toDate": _iso(middle)}

    def suspended(paging: str, run_filter: Callable[[int], dict[str, Any]], **more: Any) -> Any:
        return lambda i: (
            SUSPENDED % ("", paging, "%s", RUN_FIELDS),
            {"filter": run_filter(i)} | more,
        )

    first_page = "perPage: 20, page: 0"
    return {
        "all agents": suspended(first_page, lambda i: {}),
        "by agent": suspended(first_page, lambda i: {"agentId": _agent(i)}),
        "by resource": suspended(first_page, lambda i: {"resourceId": f"user-{i % RESOURCES}"}),
        "by thread": suspended(first_page, lambda i: {"threadId": f"thread-{i % THREADS}"}),
        "agent+thread": suspended(
            first_page, lambda i: {"agentId": _agent(i), "threadId": f"thread-{i % AGENTS}"}
        ),
        "agent+resource": suspended(
            first_page, lambda i: {"agentId": _agent(i), "resourceId": f"user-{i % AGENTS}"}
        ),
        "date range": suspended(first_page, lambda i: window),
        "offset page 6": suspended("perPage: 20, page: 5", lambda i: {"agentId": _agent(i)}),
        "runs, 2 states": lambda i: (
            RUNS % ("%s", RUN_FIELDS),
            {"filter": {"agentId": _agent(i), "status": ["SUSPENDED", "COMPLETED"]}},
        ),
    }


def _agent(i: int) -> str:
    return f"agent-{i % AGENTS:02d}"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def timed(call: Callable[[int], object], repeats: int) -> list[float]:
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - started) * 1000)
    return times


def asker(client: httpx.Client, shape: Shape, total: bool) -> Callable[[int], object]:
    def ask(i: int) -> object:
        template, variables = shape(i)
        query = template % ("total" if total else "")
        body = client.post("/graphql", json={"query": query, "variables": variables}).json()
        assert "errors" not in body, body
        return body

    return ask


def keyset(client: httpx.Client, total: bool) -> Callable[[int], object]:
    """The second page of 20 of an agent, by cursor."""
    template = SUSPENDED % (", $after: String", "first: 20, after: $after", "%s", RUN_FIELDS)
    cursors = {}
    for i in range(AGENTS):
        variables = {"filter": {"agentId": _agent(i)}}
        body = client.post("/graphql", json={"query": template % "", "variables": variables})
        cursors[_agent(i)] = body.json()["data"]["suspendedRuns"]["nextCursor"]

    def ask(i: int) -> object:
        variables = {"filter": {"agentId": _agent(i)}, "after": cursors[_agent(i)]}
        query = template % ("total" if total else "")
        body = client.post("/graphql", json={"query": query, "variables": variables}).json()
        assert "errors" not in body and len(body["data"]["suspendedRuns"]["runs"]) == PAGE, body
        return body

    return ask


def list_figures(url: str, n: int, repeats: int) -> dict[str, tuple[list[float], list[float]]]:
    """shape -> (ms without total, ms with total)."""
    figures = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        for name, shape in shapes(n).items():
            timed(asker(client, shape, True), AGENTS)  # warm-up: each agent's total once
            figures[name] = (
                timed(asker(client, shape, False), repeats),
                timed(asker(client, shape, True), repeats),
            )
        timed(keyset(client, True), AGENTS)
        figures["keyset page 2"] = (
            timed(keyset(client, False), repeats),
            timed(keyset(client, True), repeats),
        )
    return figures


def after_writes(url: str, n: int, repeats: int) -> dict[str, list[float]]:
    """shape -> ms of the first page with `total` after a write: each time, a run is
    started (not timed; a new SUSPENDED entry, as a dashboard's next poll meets one)."""
    figures: dict[str, list[float]] = {name: [] for name in ("all agents", "by agent")}
    with httpx.Client(base_url=url, timeout=120) as client:
        askers = {name: asker(client, shapes(n)[name], True) for name in figures}
        for i in range(repeats):
            for name, ask in askers.items():
                started = client.post(
                    "/graphql", json={"query": START_RUN, "variables": {"prompt": f"rm /tmp/{i}"}}
                )
                assert "errors" not in started.json(), started.text
                figures[name] += timed(ask, 1)
    return figures


# -- throughput ------------------------------------------------------------------------------


def throughput(port: int, clients: int, seconds: float, conditional: bool) -> float:
    """Requests per second of GET pages by `clients` keep-alive clients (each its agent):
    repeated with the ETag of its first answer (`conditional`: all 304), or without."""
    template = SUSPENDED % ("", "perPage: 20, page: 0", "total", RUN_FIELDS)
    done = [0] * clients
    stop = time.perf_counter() + seconds
    errors: list[str] = []

    def client(k: int) -> None:
        variables = json.dumps({"filter": {"agentId": _agent(k)}})
        path = "/graphql?" + urllib.parse.urlencode({"query": template, "variables": variables})
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Accept": "application/json"}
        connection.request("GET", path, headers=headers)
        first = connection.getresponse()
        first.read()
        if conditional:
            headers["If-None-Match"] = first.getheader("ETag") or ""
        want = 304 if conditional else 200
        while time.perf_counter() < stop:
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status != want:
                errors.append(f"{answer.status}")
                return
            done[k] += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"throughput: unexpected answers {errors[:3]}")
    return sum(done) / (time.perf_counter() - started)


# -- Mastra's way, and the write path (optional) --------------------------------------------


class ScanTooSlow(Exception):
    """The scan passed its time limit (Mastra did not answer within 5 minutes at 10,000)."""


def mastra_scan(uri: str, db_name: str, limit_s: float) -> Callable[[int], object]:
    """listSuspendedRuns() as @mastra/core 1.71 does it: every suspended run, 100 at a time."""
    client = MongoClient[Document](uri, tz_aware=True)
    collection = client[db_name][SNAPSHOTS_COLLECTION]
    query = {"workflow_name": "agentic-loop", "snapshot.status": "suspended"}

    def scan(i: int) -> object:
        matches = []
        offset = 0
        deadline = time.perf_counter() + limit_s
        while True:
            if time.perf_counter() > deadline:
                raise ScanTooSlow
            docs = list(collection.find(query).sort("createdAt", -1).skip(offset).limit(100))
            for doc in docs:
                entry = extract_entry(doc)
                if entry is not None and entry.agent_id == _agent(i):
                    matches.append(entry)
            if len(docs) < 100:
                break
            offset += 100
        return matches[:PAGE], len(matches)

    return scan


START_RUN = """mutation($prompt: String!) {
  startRun(input: {agentId: "file-cleaner", prompt: $prompt}) {
    ... on RunStarted { run { runId status } } } }"""
APPROVE = """mutation($run: ID!) { approveToolCall(input: {runId: $run}) {
  __typename ... on RunDecided { run { status output } } } }"""


def write_path(url: str, runs: int, approvals: int) -> tuple[list[float], ...]:
    """Start `runs` runs of the demo approval agent (each suspends), then approve some, one
    by one; then five rounds of 100 approved by one decideToolCalls."""
    run_ids: list[str] = []
    with httpx.Client(base_url=url, timeout=60) as client:

        def start(i: int) -> object:
            variables = {"prompt": f"delete /tmp/{i}"}
            body = client.post("/graphql", json={"query": START_RUN, "variables": variables})
            run = body.json()["data"]["startRun"]["run"]
            run_ids.append(run["runId"])
            return run

        def approve(i: int) -> object:
            variables = {"run": run_ids[i]}
            return client.post("/graphql", json={"query": APPROVE, "variables": variables})

        starts, approves = timed(start, runs), timed(approve, min(approvals, runs))
        return starts, approves, bulk_decisions(client, rounds=5)


BULK = """mutation($d: [ToolCallDecisionInput!]!) { decideToolCalls(decisions: $d) {
  __typename ... on RunDecided { run { status } } } }"""


def bulk_decisions(client: httpx.Client, rounds: int, size: int = 100) -> list[float]:
    """`rounds` times: start `size` runs (not timed), then approve them all in one
    decideToolCalls, through completion; the milliseconds of each decideToolCalls."""
    took: list[float] = []
    for r in range(rounds):
        run_ids = []
        for i in range(size):
            variables = {"prompt": f"delete /b/{r}/{i}"}
            body = client.post("/graphql", json={"query": START_RUN, "variables": variables})
            run_ids.append(body.json()["data"]["startRun"]["run"]["runId"])
        decisions = [{"runId": run_id, "action": "APPROVE"} for run_id in run_ids]
        started = time.perf_counter()
        body = client.post("/graphql", json={"query": BULK, "variables": {"d": decisions}})
        took.append((time.perf_counter() - started) * 1000)
        statuses = {a["run"]["status"] for a in body.json()["data"]["decideToolCalls"]}
        assert statuses == {"COMPLETED"}, body.text
    return took


# -- the run --------------------------------------------------------------------------------


@dataclass
class Row:
    n: int
    load_s: float = 0.0
    first_s: float = 0.0
    restarts_s: list[float] = field(default_factory=list)
    rss_mb: tuple[float, float] = (0.0, 0.0)
    lists: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    after_write: dict[str, list[float]] = field(default_factory=dict)
    polls_304: float = 0.0
    pages: float = 0.0
    counts_s: float = 0.0
    scan: list[float] | None = None


def settled(mongo: EmbeddedMongoDB) -> str:
    """The embedded server restarted (its clean stop checkpoints what was loaded), so a
    first start is timed against data at rest, as a deployment's is, with a cold cache,
    not against the loader's pending writes (which added a fifth at 100,000 runs)."""
    mongo.stop()
    return mongo.start()


def bench_size(mongo: EmbeddedMongoDB, n: int, args: argparse.Namespace, log: Path) -> Row:
    row = Row(n)
    db_name = f"bench_{n}"
    row.load_s = load(mongo.uri, db_name, n)
    _say(f"N={n}: loaded in {row.load_s:.0f} s")
    uri = settled(mongo)
    served = serve(uri, db_name, log)
    row.first_s = served.ready_s
    row.rss_mb = served.memory_mb()
    _say(f"N={n}: first start {row.first_s:.1f} s, RSS {row.rss_mb[0]:.0f} MB")
    try:
        row.counts_s = counts_in_memory(served.url)
        _say(f"N={n}: counts of suspended runs in memory after {row.counts_s:.1f} s more")
        row.lists = list_figures(served.url, n, args.requests)
        row.after_write = after_writes(served.url, n, args.requests)
        row.polls_304 = throughput(served.port, args.clients, args.seconds, conditional=True)
        row.pages = throughput(served.port, args.clients, args.seconds, conditional=False)
        row.rss_mb = (served.memory_mb()[0], max(row.rss_mb[1], served.memory_mb()[1]))
    finally:
        served.stop()
    row.restarts_s = restarts(uri, db_name, log, args.restarts)
    if args.scans:
        try:
            row.scan = timed(mastra_scan(uri, db_name, args.scan_limit), args.scans)
        except ScanTooSlow:
            row.scan = None
    _say(f"N={n} done")
    return row


def restarts(uri: str, db_name: str, log: Path, count: int) -> list[float]:
    """Seconds to ready of `count` restarts, the first straight after the server before."""
    times = []
    for _ in range(count):
        restarted = serve(uri, db_name, log)
        times.append(restarted.ready_s)
        restarted.stop()
    return times


def bench_large(
    mongo: EmbeddedMongoDB, count: int, kilobytes: int, log: Path, restart_count: int
) -> Row:
    row = Row(count)
    db_name = f"bench_large_{count}"
    row.load_s = load(mongo.uri, db_name, count, kilobytes)
    uri = settled(mongo)
    served = serve(uri, db_name, log)
    row.first_s, row.rss_mb = served.ready_s, served.memory_mb()
    served.stop()
    row.restarts_s = restarts(uri, db_name, log, restart_count)
    _say(f"large: {count} runs of {kilobytes} kB done")
    return row


def main() -> int:
    args = _arguments()
    if args.churn:
        return churn_main(args)
    if args.hostile:
        return hostile_main(args)
    if args.live:
        return live_main(args)
    if args.webhooks:
        return webhooks_main(args)
    if args.assigned:
        return assigned_main(args)
    if args.reviews:
        return reviews_main(args)
    if args.langgraph:
        return langgraph_main(args)
    if args.hung:
        return hung_main(args)
    if args.slow_bodies:
        return slow_bodies_main(args)
    if args.relay:
        return relay_main(args)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        for n in (int(s) for s in args.sizes.split(",")):
            rows.append(bench_size(mongo, n, args, log))
        large = (
            bench_large(mongo, args.large, args.large_kb, log, args.restarts)
            if args.large
            else None
        )
        write = None
        if args.starts:
            served = serve(mongo.uri, "bench_write", log)
            try:
                write = write_path(served.url, args.starts, args.approvals)
            finally:
                served.stop()
    print_tables(rows, large, write, args)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated N")
    parser.add_argument("--requests", type=int, default=100, help="requests per list figure")
    parser.add_argument("--clients", type=int, default=8, help="clients of the throughput")
    parser.add_argument("--seconds", type=float, default=10, help="seconds per throughput")
    parser.add_argument("--restarts", type=int, default=5, help="restarts timed per size")
    parser.add_argument("--large", type=int, default=1000, help="runs of large snapshots (0: no)")
    parser.add_argument("--large-kb", type=int, default=400, help="kB of each large snapshot")
    parser.add_argument("--scans", type=int, default=0, help="Mastra-way scans per size")
    parser.add_argument("--scan-limit", type=float, default=300, help="seconds per scan at most")
    parser.add_argument("--starts", type=int, default=1000, help="runs started (write path)")
    parser.add_argument("--approvals", type=int, default=200, help="runs approved (write path)")
    parser.add_argument("--churn", action="store_true", help="only the follower's figures")
    parser.add_argument("--churn-base", type=int, default=10_000, help="runs before the churn")
    parser.add_argument(
        "--poll-every",
        type=float,
        default=1.0,
        help="seconds between a churn client's polls of every list shape (0: no pause)",
    )
    parser.add_argument("--churn-burst", type=int, default=5000, help="documents of a burst")
    parser.add_argument("--churn-rates", default="50,100,200,400", help="writes/s, comma-separated")
    parser.add_argument("--churn-seconds", type=float, default=20, help="seconds per rate")
    parser.add_argument(
        "--churn-down", type=int, default=50_000, help="documents written while down"
    )
    parser.add_argument(
        "--live", action="store_true", help="only subscriptions' and traces' figures"
    )
    parser.add_argument("--live-subscribers", type=int, default=100, help="subscribers of one page")
    parser.add_argument("--live-writes", type=int, default=50, help="runs written, one at a time")
    parser.add_argument("--live-repeats", type=int, default=200, help="pages asked per server")
    parser.add_argument("--webhooks", action="store_true", help="only webhooks' figures")
    parser.add_argument("--webhook-burst", type=int, default=2000, help="suspensions at once")
    parser.add_argument("--webhook-batch", type=int, default=100, help="runs a write in a burst")
    parser.add_argument("--webhook-singles", type=int, default=100, help="suspensions, one a time")
    parser.add_argument(
        "--webhook-parts", default="burst,kill,flood,failing", help="comma-separated parts"
    )
    parser.add_argument("--webhook-flood", type=int, default=300, help="webhooks of one admin")
    parser.add_argument("--webhook-flood-seconds", type=float, default=45, help="pages asked for")
    parser.add_argument("--webhook-fail-seconds", type=float, default=10, help="500s for")
    parser.add_argument("--hostile", action="store_true", help="only hostile requests' figures")
    parser.add_argument("--hung", action="store_true", help="only a hung database's figures")
    parser.add_argument("--hung-rounds", type=int, default=20, help="rounds of 4 requests")
    parser.add_argument(
        "--hung-deadline", default="", help="DATABASE_DEADLINE_SECONDS (unset: its default)"
    )
    parser.add_argument(
        "--assigned", action="store_true", help="only assignedToMe lists' figures, by --sizes"
    )
    parser.add_argument(
        "--reviews", action="store_true", help="only reviews' figures (lists by --sizes)"
    )
    parser.add_argument(
        "--langgraph", action="store_true", help="only LangGraph threads' figures, by --sizes"
    )
    parser.add_argument("--langgraph-rates", default="50,200", help="threads/s, comma-separated")
    parser.add_argument("--langgraph-burst", type=int, default=1000, help="threads of a burst")
    parser.add_argument("--langgraph-concurrent", type=int, default=100, help="decisions at once")
    parser.add_argument("--hostile-agents", type=int, default=300, help="agents, a run each")
    parser.add_argument("--hostile-queries", type=int, default=1000, help="distinct queries")
    parser.add_argument("--hostile-kb", type=int, default=900, help="kB of each query")
    parser.add_argument("--hostile-writes", type=float, default=20, help="writes/s beside polls")
    parser.add_argument(
        "--slow-bodies", action="store_true", help="only polls' figures beside slow bodies"
    )
    parser.add_argument(
        "--relay", action="store_true", help="only node, nodes and connections, by --sizes"
    )
    parser.add_argument("--slow-connections", type=int, default=2000, help="slow connections")
    parser.add_argument("--slow-cap", type=int, default=256, help="MAX_CONNECTIONS_PER_PEER")
    parser.add_argument("--slow-byte-every", type=float, default=5, help="seconds between bytes")
    parser.add_argument("--slow-poll-every", type=float, default=0.25, help="seconds between polls")
    parser.add_argument("--slow-seconds", type=float, default=20, help="seconds of each phase")
    parser.add_argument("--slow-rounds", type=int, default=3, help="quiet and slow phases each")
    return parser.parse_args()


def relay_main(args: argparse.Namespace) -> int:
    """`--relay`: node beside agentRun, nodes of 100, connections beside pages, per size."""
    sizes = [int(s) for s in args.sizes.split(",")]
    found: dict[int, tuple[relay.Figures, int]] = {}
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        for n in sizes:
            db = f"bench_relay_{n}"
            _say(f"N={n}: loaded in {load(mongo.uri, db, n):.0f} s")
            uri = settled(mongo)
            served = serve(uri, db, log)
            try:
                counts_in_memory(served.url)
                found[n] = relay.figures(served.url, uri, args.requests)
            finally:
                served.stop()
            _say(f"N={n} done")
    print("\n## Global ids and connections (embedded MongoDB)\n")
    print("ms median / p95 of the new form · of what it stands beside, and the ratio of medians\n")
    print(f"| figure | {' | '.join(f'N={n:,}' for n in sizes)} |\n|---|" + "---:|" * len(sizes))
    for name in found[sizes[0]][0]:
        cells = []
        for n in sizes:
            new, old = found[n][0][name]
            ratio = f" ({statistics.median(new) / statistics.median(old):.2f}x)" if old else ""
            cells.append(_cell(new) + (f" · {_cell(old)}{ratio}" if old else ""))
        print(f"| {name} | {' | '.join(cells)} |")
    queries = " | ".join(str(found[n][1]) for n in sizes)
    print(f"| queries the database counted for one nodes of 100 | {queries} |")
    return 0


def hostile_main(args: argparse.Namespace) -> int:
    """`--hostile`: `agents` in aliases, RSS after large queries, 304s beside writes."""
    db, n = "bench_hostile", args.hostile_agents
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        with MongoClient[Document](mongo.uri) as client:
            insert_runs(client[db][SNAPSHOTS_COLLECTION], copies(n, n, START))
        served = serve(mongo.uri, db, log)
        try:
            counts_in_memory(served.url)
            _say(f"agents in aliases, over {n} agents")
            rows = hostile.agents_figures(served.url)
            before = served.memory_mb()[0]
            queries, kb = args.hostile_queries, args.hostile_kb
            _say(f"{queries} distinct queries of {kb} kB")
            hostile.large_queries(served.url, queries, kb)
            after = served.memory_mb()[0]
            rows.append((f"RSS before {queries:,} distinct {kb} kB queries", f"{before:.0f} MB"))
            rows.append(("RSS after them", f"{after:.0f} MB ({after - before:+.0f} MB)"))
            _say("conditional polls, quiet and beside writes")
            quiet = throughput(served.port, args.clients, args.seconds, conditional=True)
            stop = threading.Event()
            writer = hostile.writing(mongo.uri, db, args.hostile_writes, stop)
            try:
                busy = throughput(served.port, args.clients, args.seconds, conditional=True)
            finally:
                stop.set()
                writer.join()
        finally:
            served.stop()
    rows.append((f"304 polls/s, {args.clients} clients, nothing written", f"{quiet:,.0f}"))
    beside = f"304 polls/s, {args.clients} clients, another agent written {args.hostile_writes:g}/s"
    rows.append((beside, f"{busy:,.0f} ({busy / quiet:.0%})"))
    print(f"\n## Hostile requests ({n} agents; embedded MongoDB)\n")
    print("| figure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


def slow_bodies_main(args: argparse.Namespace) -> int:
    """`--slow-bodies`: pollers' latency and the server's descriptors, quiet and beside
    slow bodies from one client; with the limits, and with them out of reach."""
    ulimit = slow_bodies.enough_descriptors(2 * args.slow_connections + 1024)
    db, agents = "bench_slow_bodies", [_agent(k) for k in range(args.clients)]
    servers = {
        f"MAX_CONNECTIONS_PER_PEER={args.slow_cap}": {
            "MAX_CONNECTIONS_PER_PEER": str(args.slow_cap)
        },
        "limits out of reach": slow_bodies.OUT_OF_REACH,
    }
    rows = []
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        with MongoClient[Document](mongo.uri) as client:
            insert_runs(client[db][SNAPSHOTS_COLLECTION], copies(1000, AGENTS, START))
        for name, limits in servers.items():
            served = serve(mongo.uri, db, log, **limits)
            try:
                counts_in_memory(served.url)
                _say(f"{name}: polls, quiet, then beside {args.slow_connections} slow bodies")
                rows.append((name, *_slow_bodies_phases(served, agents, args)))
            finally:
                served.stop()
    print(f"\n## Polls beside slow bodies (ulimit -n {ulimit})\n")
    print(
        "| server | polls quiet: median / p99 | beside slow bodies | p99 ratio | "
        "most descriptors, quiet / beside | slow connections held |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


def _slow_bodies_phases(
    served: Served, agents: list[str], args: argparse.Namespace
) -> tuple[str, str, str, str, str]:
    """`--slow-rounds` rounds of a quiet phase and one beside slow bodies: the medians of
    each kind's median and p99, the most descriptors held, the slow connections held."""
    pid, every, seconds = served.process.pid, args.slow_poll_every, args.slow_seconds

    def polls() -> list[float]:
        return slow_bodies.poll(served.url, agents, every, seconds)

    quiet, beside, quiet_fds, beside_fds, held = [], [], 0, 0, []
    baseline = slow_bodies.descriptors(pid)
    for _ in range(args.slow_rounds):
        slow_bodies.settled(pid, baseline)  # the last round's connections closed
        times, most = slow_bodies.most_descriptors(pid, polls)
        quiet.append(slow_bodies.figures(times))
        quiet_fds = max(quiet_fds, most)
        attack = slow_bodies.SlowBodies(served.port, args.slow_connections, args.slow_byte_every)
        with attack:
            time.sleep(2 * args.slow_byte_every)  # every connection tried at least once
            times, most = slow_bodies.most_descriptors(pid, polls)
            held.append(attack.waiting.value)
        beside.append(slow_bodies.figures(times))
        beside_fds = max(beside_fds, most)
    q_median, q_p99 = (statistics.median(f[k] for f in quiet) for k in (0, 1))
    b_median, b_p99 = (statistics.median(f[k] for f in beside) for k in (0, 1))
    return (
        f"{q_median:.1f} / {q_p99:.1f} ms",
        f"{b_median:.1f} / {b_p99:.1f} ms",
        f"{b_p99 / q_p99:.2f}",
        f"{quiet_fds} / {beside_fds}",
        f"{statistics.median(held):,.0f} of {args.slow_connections:,}",
    )


def _ms(seconds: list[float]) -> str:
    values = [s * 1000 for s in seconds]
    return f"{statistics.median(values):.0f} / {live.p99(values):.0f} ms"


def live_main(args: argparse.Namespace) -> int:
    """`--live`: write-to-push delays for many subscribers; a page's cost, traced or not."""
    db, subscribers, writes = "bench_live", args.live_subscribers, args.live_writes
    sink = live.Sink()
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        load(mongo.uri, db, 1000)
        limit = str(max(subscribers, 20))
        plain = serve(mongo.uri, db, log, MAX_SUBSCRIPTIONS_PER_CALLER=limit)
        traced = serve(mongo.uri, db, log, OTEL_EXPORTER_OTLP_ENDPOINT=sink.url)
        try:
            counts_in_memory(plain.url)
            _say(f"{subscribers} subscribers, {writes} runs written one at a time")
            pushes = asyncio.run(live.push_delays(plain.url, mongo.uri, db, subscribers, writes))
            polled = asyncio.run(live.listed_delays(plain.url, mongo.uri, db, writes, writes))
            _say(f"a page of 50 runs, {args.live_repeats} times from each server")
            off, on = live.page_costs(plain.url, traced.url, args.live_repeats)
        finally:
            plain.stop()
            traced.stop()
            sink.close()
    ratio = statistics.median(on) / statistics.median(off)
    rows = [
        (f"write -> push, each of {subscribers} subscribers", _ms(pushes["each"])),
        (f"write -> push, the last of the {subscribers}", _ms(pushes["last"])),
        ("write -> listed by an HTTP poll (no subscriber)", _ms(polled)),
        ("evaluations of the page per write", f"{pushes['evaluations'] / writes:.2f}"),
        ("a page of 50 runs, tracing off", f"{statistics.median(off):.1f} / {p95(off):.1f} ms"),
        (
            "a page of 50 runs, tracing on (OTLP/HTTP)",
            f"{statistics.median(on):.1f} / {p95(on):.1f} ms ({ratio:.2f}x)",
        ),
    ]
    print("\n## Subscriptions and traces (1,000 runs; embedded MongoDB)\n")
    print("| figure | median / p99 (pages: p95) |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


def webhooks_main(args: argparse.Namespace) -> int:
    """`--webhooks`: bursts and single runs delivered, a kill mid-burst, floods of webhooks,
    a receiver failing for a while (scripts/webhooks.py); `--webhook-parts` picks."""
    parts, rows = set(args.webhook_parts.split(",")), []
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        where = Path(folder)
        for part, measure in WEBHOOK_PARTS.items():
            if part in parts:
                db = f"bench_webhooks_{part}"
                load(mongo.uri, db, 1000)
                _say(f"webhooks: {part}")
                rows += measure(args, mongo.uri, db, where)
    print(
        "\n## Webhooks (1,000 runs before; embedded MongoDB; receivers in a process of their own)\n"
    )
    print("| figure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


Rows = list[tuple[str, str]]


def _burst_rows(args: argparse.Namespace, uri: str, db: str, folder: Path) -> Rows:
    n, batch = args.webhook_burst, args.webhook_batch
    served = serve(uri, db, folder / "serve.log")
    try:
        found = webhooks.burst(served.url, uri, db, n, batch, folder)
        delays = webhooks.singles(served.url, uri, db, args.webhook_singles, folder)
    finally:
        served.stop()
    listed, delivered = n / found["listed_s"], n / found["delivered_s"]
    return [
        (f"a burst of {n:,} (by {batch}): listed/s (all listed after)",
         f"{listed:,.0f} ({found['listed_s']:.1f} s)"),
        ("the same burst: delivered/s (the last delivered after)",
         f"{delivered:,.0f} ({found['delivered_s']:.1f} s), {delivered / listed:.0%} of listed/s"),
        (f"write -> delivered, one at a time, {args.webhook_singles} runs (median / p99)",
         webhooks.summary(delays)),
    ]  # fmt: skip


def _kill_rows(args: argparse.Namespace, uri: str, db: str, folder: Path) -> Rows:
    n, batch, log = args.webhook_burst, args.webhook_batch, folder / "serve.log"
    receiver, served = webhooks.Receiver(folder), serve(uri, db, log)
    try:
        webhooks.make_webhooks(served.url, receiver.url("ok"), 1)
        writer = webhooks.write_burst(uri, db, n, batch, "killed-agent", folder)
        webhooks.wait_until(lambda: len(receiver.delivered("ok")) >= n // 3, every=0.01)
        served.process.kill()  # SIGKILL
        served.process.wait()
        before = len(receiver.delivered("ok"))
        webhooks.written(writer)
        served = serve(uri, db, log)
        back_at = time.time()
        webhooks.wait_until(lambda: len(receiver.delivered("ok")) >= n)
        after = sorted(t - back_at for t in receiver.delivered("ok").values() if t > back_at)
        twice = webhooks.duplicates(receiver)
    finally:
        served.stop()
        receiver.close()
    most = after[int(len(after) * 0.95) - 1]
    return [
        (f"the burst, the server killed at {before:,} delivered, started again: delivered",
         f"{n:,} of {n:,}, {twice} twice"),
        ("after the start: the first delivered after (the dead one's lease runs out first)",
         f"{after[0]:.1f} s"),
        ("then 95% of the rest delivered at (a backlog, the follower caught up)",
         f"{len(after) * 0.95 / (most - after[0]):,.0f}/s ({most - after[0]:.1f} s)"),
        ("the last delivered after the start (attempts under way at the kill are made again "
         "once their hold passes)", f"{after[-1]:.1f} s"),
    ]  # fmt: skip


def _flood_rows(args: argparse.Namespace, uri: str, db: str, folder: Path) -> Rows:
    hooks, seconds = args.webhook_flood, args.webhook_flood_seconds
    served = serve(uri, db, folder / "serve.log", **webhooks.FLOOD_SETTINGS)
    try:
        alone: list[float] = []
        webhooks.polled(served.url, 5, alone, threading.Event())
        hung = webhooks.flood(served.url, uri, db, hooks, seconds, "never", folder)
    finally:
        served.stop()
    served = serve(uri, f"{db}_ok", folder / "serve.log", **webhooks.FLOOD_SETTINGS)
    try:
        answered = webhooks.flood(served.url, uri, f"{db}_ok", hooks, seconds, "ok", folder)
    finally:
        served.stop()
    return [
        ("another caller's page, no webhook (p50 / p99 / max)", webhooks.pages(alone)),
        (f"the same, {seconds:g} s after {hooks} webhooks of one admin to a receiver that "
         f"never answers, 5 runs ({hung[1]} attempts)", webhooks.pages(hung[0])),
        ("/readyz meanwhile (p99 / max)", webhooks.readiness(hung[2])),
        (f"the same, {hooks} webhooks answered 204 ({answered[1]:,} delivered)",
         webhooks.pages(answered[0])),
        ("/readyz meanwhile (p99 / max)", webhooks.readiness(answered[2])),
    ]  # fmt: skip


def _failing_rows(args: argparse.Namespace, uri: str, db: str, folder: Path) -> Rows:
    n, batch, fail_for = args.webhook_burst, args.webhook_batch, args.webhook_fail_seconds
    found = {}
    for seconds in (0.0, fail_for):  # two that answer, then one of them failing first
        served = serve(uri, f"{db}_{seconds:g}", folder / "serve.log")
        try:
            found[seconds] = webhooks.failing(
                served.url, uri, f"{db}_{seconds:g}", n, batch, folder, seconds
            )
        finally:
            served.stop()
    both, one = found[0.0], found[fail_for]
    return [
        (f"a burst of {n:,} to two webhooks answering 204: delivered/s, each",
         f"{n / both['ok_s']:,.0f} and {n / both['fail_s']:,.0f}"),
        (f"the same, one answering 500 for {fail_for:g} s first: the other's delivered/s",
         f"{n / one['ok_s']:,.0f}"),
        ("the one answering 500 first: delivered/s (answered 500; all delivered after)",
         f"{n / one['fail_s']:,.1f} ({one['500s']:,}; {n:,} of {n:,} after {one['fail_s']:.0f} s, "
         f"{one['twice']} twice)"),
    ]  # fmt: skip


WEBHOOK_PARTS = {
    "burst": _burst_rows,
    "kill": _kill_rows,
    "flood": _flood_rows,
    "failing": _failing_rows,
}


def assigned_main(args: argparse.Namespace) -> int:
    """`--assigned`: lists of `assignedToMe` beside `all agents` and `by agent`, per size."""
    sizes = [int(s) for s in args.sizes.split(",")]
    found: dict[int, dict[str, tuple[list[float], list[float]]]] = {}
    listed: dict[int, dict[str, int]] = {}
    peak: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        for n in sizes:
            db = f"bench_assigned_{n}"
            _say(f"N={n}: loading")
            load(mongo.uri, db, n)
            uri = settled(mongo)
            served = serve(uri, db, log, **assigned.settings(Path(folder)))
            try:
                counts_in_memory(served.url, headers=assigned.headers())
                _say(f"N={n}: {args.requests} requests per figure")
                listed[n] = assigned.totals(served.url)
                found[n] = assigned.figures(served.url, args.requests)
                peak[n] = served.memory_mb()[1]
            finally:
                served.stop()
    columns = " | ".join(f"N={n:,}" for n in sizes)
    print("\n## assignedToMe beside other shapes (page of 20, ms median / p95, without total ·")
    print("with total; one server per size, embedded MongoDB)\n")
    print(f"| shape | {columns} |\n|---|" + "---:|" * len(sizes))
    for name in found[sizes[0]]:
        cells = [found[n][name] for n in sizes]
        shown = [(f"{_cell(a)} · " if a else "") + _cell(b) for a, b in cells]
        print(f"| {name} | {' | '.join(shown)} |")
    for name in listed[sizes[0]]:
        print(f"| runs listed, {name} | {' | '.join(f'{listed[n][name]:,}' for n in sizes)} |")
    print(f"| peak RSS of the server | {' | '.join(f'{peak[n]:.0f} MB' for n in sizes)} |")
    return 0


def reviews_main(args: argparse.Namespace) -> int:
    """`--reviews`: lists of reviews beside `all agents` per size, the insert cost of their
    indexes, and a review's push to another reviewer's subscription (scripts/reviews.py)."""
    sizes = [int(s) for s in args.sizes.split(",")]
    found: dict[int, dict[str, tuple[list[float], list[float]]]] = {}
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        for n in sizes:
            db = f"bench_reviews_{n}"
            _say(f"N={n}: loading")
            load(mongo.uri, db, n)
            uri = settled(mongo)
            served = serve(uri, db, log, **assigned.settings(Path(folder)))
            try:
                counts_in_memory(served.url, headers=assigned.headers())
                reviews.start_reviews(served.url)
                _say(f"N={n}: {args.requests} requests per figure")
                found[n] = reviews.figures(served.url, args.requests)
                if n == sizes[-1]:
                    _say("pushes, then the indexes' insert cost")
                    pushes = asyncio.run(reviews.push_delays(served.url, 20))
                    plain, sparse = reviews.index_cost(uri, db, 2000)
            finally:
                served.stop()
    print("\n## Reviews beside the same page (page of 20, ms median / p95, without total ·")
    print("with total; key:bench reviews 30 runs; one server per size, embedded MongoDB)\n")
    print(f"| shape | {' | '.join(f'N={n:,}' for n in sizes)} |\n|---|" + "---:|" * len(sizes))
    for name in found[sizes[0]]:
        shown = [f"{_cell(found[n][name][0])} · {_cell(found[n][name][1])}" for n in sizes]
        print(f"| {name} | {' | '.join(shown)} |")
    for name in list(found[sizes[0]])[1:]:
        ratios = [_ratios(found[n][name], found[n][reviews.SHAPES[0][0]]) for n in sizes]
        print(f"| {name} / all agents (medians) | {' | '.join(ratios)} |")
    print(f"\n| figure (N={sizes[-1]:,}) | value |\n| --- | --- |")
    print(f"| run-index entries inserted/s, without the two sparse indexes | {plain:,.0f} |")
    print(f"| the same, with them | {sparse:,.0f} ({sparse / plain:.0%}) |")
    for name, delays in zip(("startReview", "endReview"), pushes, strict=True):
        ms = [d * 1000 for d in delays]
        print(f"| {name} -> another reviewer's push (median / p95 ms) | {_cell(ms)} |")
    return 0


def _ratios(shape: tuple[list[float], list[float]], base: tuple[list[float], list[float]]) -> str:
    return " · ".join(
        f"{statistics.median(a) / statistics.median(b):.2f}x"
        for a, b in zip(shape, base, strict=True)
    )


def langgraph_main(args: argparse.Namespace) -> int:
    """`--langgraph`: LangGraph threads' lists beside Mastra's at each size, a start and
    restarts, the follower's burst and paced rates (scripts/threads.py)."""
    sizes = [int(s) for s in args.sizes.split(",")]
    lists: dict[int, tuple[Any, Any]] = {}
    starts: dict[int, tuple[float, list[float]]] = {}
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        _say("the database's rate for threads, without and with the writes' index")
        plain = threads.insert_rate(mongo.uri, "bench_lg_plain", args.langgraph_burst, False)
        indexed = threads.insert_rate(mongo.uri, "bench_lg_indexed", args.langgraph_burst, True)
        for n in sizes:
            lists[n], starts[n] = _langgraph_size(mongo, n, args, log)
        biggest = sizes[-1]
        env = {"LANGGRAPH_DB": f"bench_lg_{biggest}"}
        served = serve(mongo.uri, f"bench_lgidx_{biggest}", log, **env)
        try:
            _say(f"a burst of {args.langgraph_burst} threads while following")
            burst = threads.burst(mongo.uri, env["LANGGRAPH_DB"], served.url, args.langgraph_burst)
            _say("decisions: one at a time, and at once")
            env2 = {**env, "LANGGRAPH_GRAPHS": json.dumps(threads.DEMO_GRAPH)}
            decided = _langgraph_decisions(mongo, args, log, env2)
            paced = [
                threads.paced(
                    mongo.uri,
                    env["LANGGRAPH_DB"],
                    served.url,
                    rate,
                    args.churn_seconds,
                    30_000_000 + 1_000_000 * k,
                )
                for k, rate in enumerate(int(r) for r in args.langgraph_rates.split(","))
            ]
        finally:
            served.stop()
    _print_langgraph(args, sizes, lists, starts, (plain, indexed, burst), paced)
    _print_decisions(args, decided)
    return 0


def _langgraph_decisions(
    mongo: EmbeddedMongoDB, args: argparse.Namespace, log: Path, env: dict[str, str]
) -> dict[str, Any]:
    served = serve(mongo.uri, "bench_lg_decisions", log, **env)
    try:
        return threads.decisions(served.url, args.requests, args.langgraph_concurrent)
    finally:
        served.stop()


def _print_decisions(args: argparse.Namespace, decided: dict[str, Any]) -> None:
    print("\n## Decisions on LangGraph runs (the approval that answers a batch, to its tools")
    print("having run; the demo refund agent; embedded MongoDB)\n")
    print("| figure | p50 / p99 |\n| --- | --- |")
    rows = [
        (f"one at a time ({len(decided['one'])})", decided["one"]),
        (f"{args.langgraph_concurrent} at once", decided["concurrent"]),
        (f"a Python run's approval, one at a time ({len(decided['python'])})", decided["python"]),
    ]
    for name, values in rows:
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(f"| {name} | {statistics.median(ordered):.0f} / {p99:.0f} ms |")
    print(f"\nMost graphs that ran at once: {decided['most']} (LANGGRAPH_RESUME_THREADS default 4)")


def _langgraph_size(
    mongo: EmbeddedMongoDB, n: int, args: argparse.Namespace, log: Path
) -> tuple[tuple[Any, Any], tuple[float, list[float]]]:
    """(Mastra's lists, LangGraph's lists), (first start, restarts) at `n` runs."""
    _say(f"N={n}: Mastra runs")
    load(mongo.uri, f"bench_{n}", n)
    served = serve(settled(mongo), f"bench_{n}", log)
    try:
        counts_in_memory(served.url)
        mastra = list_figures(served.url, n, args.requests)
    finally:
        served.stop()
    _say(f"N={n}: LangGraph threads of {threads.CHECKPOINTS} checkpoints")
    threads.load(mongo.uri, f"bench_lg_{n}", n, START)
    env = {"LANGGRAPH_DB": f"bench_lg_{n}"}
    served = serve(settled(mongo), f"bench_lgidx_{n}", log, **env)
    first = served.ready_s
    try:
        counts_in_memory(served.url)
        langgraph = list_figures(served.url, n, args.requests)
    finally:
        served.stop()
    again = []
    for _ in range(args.restarts):
        restarted = serve(mongo.uri, f"bench_lgidx_{n}", log, **env)
        again.append(restarted.ready_s)
        restarted.stop()
    return (mastra, langgraph), (first, again)


def _print_langgraph(
    args: argparse.Namespace,
    sizes: list[int],
    lists: dict[int, tuple[Any, Any]],
    starts: dict[int, tuple[float, list[float]]],
    rates: tuple[float, float, float],
    paced: list[threads.Paced],
) -> None:
    print("\n## LangGraph threads beside Mastra runs (page of 20 with total, ms median / p95;")
    print(f"threads of {threads.CHECKPOINTS} checkpoints; embedded MongoDB)\n")
    header = " | ".join(f"Mastra N={n:,} | LangGraph N={n:,} | ratio" for n in sizes)
    print(f"| shape | {header} |\n|---|" + "---:|---:|---:|" * len(sizes))
    for name in lists[sizes[0]][0]:
        cells = []
        for n in sizes:
            mastra, langgraph = lists[n][0][name][1], lists[n][1][name][1]
            ratio = statistics.median(langgraph) / statistics.median(mastra)
            cells += [_cell(mastra), _cell(langgraph), f"{ratio:.2f}x"]
        print(f"| {name} | {' | '.join(cells)} |")
    rows = []
    for n in sizes:
        first, again = starts[n]
        started = f"{first:.1f} s; {_spread(again)}"
        rows.append((f"N={n:,}: first start, then restarts to ready", started))
    plain, indexed, burst = rates
    rows += [
        ("database: threads/s, a document at a time (3 checkpoints, 3 writes)", f"{plain:,.0f}"),
        (
            "the same, with this server's index on the writes",
            f"{indexed:,.0f} ({indexed / plain:.0%})",
        ),
        (
            f"follower: threads/s listed, a burst of {args.langgraph_burst:,}",
            f"{burst:,.0f} ({burst / plain:.0%})",
        ),
    ]
    for result in paced:
        p50, p99 = (f"{figure * 1000:.0f}" for figure in result.figures())
        unseen = f", {result.unseen} not seen" if result.unseen else ""
        rows.append(
            (f"write -> listed at {result.rate} threads/s, p50 / p99", f"{p50} / {p99} ms{unseen}")
        )
    print("\n| figure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


def hung_main(args: argparse.Namespace) -> int:
    """`--hung`: seconds to a typed answer while the database's process is stopped."""
    settings = {"DATABASE_DEADLINE_SECONDS": args.hung_deadline} if args.hung_deadline else {}
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        served = serve(mongo.uri, "bench_hung", Path(folder) / "serve.log", **settings)
        try:
            runs = hung.start_runs(served.url, 5)
            assert mongo.process is not None
            _say(f"{args.hung_rounds} rounds of 4 requests at once, the database stopped")
            found = hung.measure(served.url, mongo.process.pid, runs, args.hung_rounds)
        finally:
            served.stop()
    deadline = f"DATABASE_DEADLINE_SECONDS={args.hung_deadline or '5 (default)'}"
    print(f"\n## A hung database (SIGSTOP; {deadline}; {args.hung_rounds} rounds)\n")
    print("| request | typed answers | median | p99 | max | answers again after SIGCONT |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, seconds in found.seconds.items():
        typed = len(seconds) - found.untyped[name]
        p99 = (
            statistics.quantiles(seconds, n=100, method="inclusive")[-1]
            if len(seconds) > 1
            else seconds[0]
        )
        print(
            f"| {name} | {typed} of {len(seconds)} | {statistics.median(seconds):.2f} s "
            f"| {p99:.2f} s | {max(seconds):.2f} s | {found.back_after[name]:.2f} s |"
        )
    return 0


def churn_main(args: argparse.Namespace) -> int:
    """`--churn`: the database's insert rate, the follower's, steady churn, a long downtime."""
    db, per_run = "bench_churn", churn.changes_per_run()
    rates = [int(rate) for rate in args.churn_rates.split(",")]
    down = args.churn_down // per_run
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        log = Path(folder) / "serve.log"
        _say(f"the database's insert rate ({args.churn_burst} documents, one at a time)")
        taken = churn.insert_rate(mongo.uri, "bench_insert_rate", args.churn_burst // per_run)
        _say(f"loading {args.churn_base} runs")
        load(mongo.uri, db, args.churn_base)
        # At rest and indexed, as a deployment's follower meets its data: a burst straight
        # after the load and the first start met the database still writing them out.
        first = serve(settled(mongo), db, log)
        first.stop()
        served = serve(settled(mongo), db, log)
        try:
            counts_in_memory(served.url)
            _say(f"a burst of {args.churn_burst} documents while following")
            applied, writer, after = churn.burst_rate(
                mongo.uri, db, served.url, args.churn_burst // per_run
            )
            steady = []
            for rate in rates:
                _say(f"churn at {rate} writes/s for {args.churn_seconds:.0f} s")
                steady.append(
                    churn.churn(
                        mongo.uri,
                        db,
                        served.url,
                        rate,
                        args.churn_seconds,
                        args.clients,
                        args.poll_every,
                    )
                )
            with httpx.Client(base_url=served.url, timeout=60) as client:
                churn.caught_up(client)
                before = churn.total(client)
        finally:
            served.stop()
        _say(f"{down * per_run} documents written while the server is down")
        load(mongo.uri, db, down)
        restarted = serve(mongo.uri, db, log)
        try:
            with httpx.Client(base_url=restarted.url, timeout=60) as client:
                listed = churn.total(client)
                sync = client.post("/graphql", json={"query": "{ sync { behindSeconds } }"})
                behind = sync.json()["data"]["sync"]["behindSeconds"]
        finally:
            restarted.stop()
        _say("a restart with nothing changed")
        unchanged = serve(mongo.uri, db, log)
        unchanged.stop()
    rows = [
        ("database inserts/s (one document at a time, nothing following)", f"{taken:,.0f}"),
        (f"follower changes/s (a burst of {args.churn_burst:,})", f"{applied:,.0f}"),
        ("follower / database", f"{applied / taken:.0%}"),
        ("the writer's inserts/s during the burst (it shares the cores)", f"{writer:,.0f}"),
        ("the burst's last run listed after its last insert", f"{after:.2f} s"),
        (
            f"{down * per_run:,} documents written while down: ready after",
            f"{restarted.ready_s:.1f} s",
        ),
        (
            "follower changes/s applying them (documents / seconds to ready)",
            f"{down * per_run / restarted.ready_s:,.0f}",
        ),
        ("left to apply when ready (sync.behindSeconds)", f"{behind} s"),
        (
            "lists right when ready",
            "yes" if listed == before + down else f"no ({listed:,} of {before + down:,})",
        ),
        ("a restart with nothing changed: ready after", f"{unchanged.ready_s:.1f} s"),
    ]
    print_churn(args, rows, steady)
    return 0


def print_churn(args: argparse.Namespace, rows: list[tuple[str, str]], steady: list[Any]) -> None:
    print(f"\n## Follower ({args.churn_base:,} runs before; embedded MongoDB)\n")
    print("| figure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    every = f"every {args.poll_every:g} s" if args.poll_every else "without pause"
    shapes = f"{args.clients} clients polling every list shape with total {every}"
    print(f"\n## Write to listed, {shapes}\n")
    print("| writes/s | p50 | p99 | max | not seen |\n| --- | --- | --- | --- | --- |")
    for result in steady:
        p50, p99, most = (f"{figure * 1000:.0f} ms" for figure in result.figures())
        print(f"| {result.rate} | {p50} | {p99} | {most} | {result.unseen} |")
    under = [r.rate for r in steady if r.figures()[1] < 1.0 and not r.unseen]
    print(f"\nHighest steady rate with p99 under 1 s: {max(under) if under else 'none'} writes/s")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- tables ---------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def _spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.1f} s ({min(seconds):.1f} to {max(seconds):.1f})"


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {p95(values):.1f}"


def print_tables(
    rows: list[Row],
    large: Row | None,
    write: tuple[list[float], ...] | None,
    args: argparse.Namespace,
) -> None:
    sizes = " | ".join(f"N={row.n:,}" for row in rows)
    print("List shapes, page of 20, ms median / p95, without total · with total\n")
    print(f"| shape | {sizes} |")
    print("|---|" + "---:|" * len(rows))
    for name in rows[0].lists:
        cells = " | ".join(
            f"{_cell(row.lists[name][0])} · {_cell(row.lists[name][1])}" for row in rows
        )
        print(f"| {name} | {cells} |")
    for name in rows[0].after_write:
        cells = " | ".join(_cell(row.after_write[name]) for row in rows)
        print(f"| {name}, total, first poll after a write | {cells} |")
    print()
    restart = f"restart, median (fastest to slowest of {args.restarts})"
    counts = "counts in memory after"
    print(
        f"| N runs | load | first start (peak RSS) | {counts} | {restart} "
        "| 304 polls/s | full pages/s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.n:,} | {row.load_s:.0f} s | {row.first_s:.1f} s ({row.rss_mb[1]:.0f} MB) "
            f"| {row.counts_s:.1f} s | {_spread(row.restarts_s)} | {row.polls_304:,.0f} "
            f"| {row.pages:,.0f} |"
        )
    if large is not None:
        print(
            f"| {large.n:,} of {args.large_kb} kB | {large.load_s:.0f} s "
            f"| {large.first_s:.1f} s ({large.rss_mb[1]:.0f} MB) | "
            f"| {_spread(large.restarts_s)} | | |"
        )
    _print_extras(rows, write, args)


def _print_extras(
    rows: list[Row], write: tuple[list[float], ...] | None, args: argparse.Namespace
) -> None:
    if args.scans:
        print()
        for row in rows:
            scan = "given up" if row.scan is None else f"{statistics.median(row.scan):,.0f} ms"
            print(f"Mastra's way (listSuspendedRuns), N={row.n:,}: {scan}")
    if write is not None:
        starts, approves, bulk = write
        print()
        print(f"startRun until suspended ({len(starts)}): {_cell(starts)} ms")
        print(f"approveToolCall through completion ({len(approves)}): {_cell(approves)} ms")
        print(
            f"decideToolCalls of 100 approvals through completion ({len(bulk)} rounds): "
            f"{statistics.median(bulk):.0f} ms median, {max(bulk):.0f} ms max"
        )


if __name__ == "__main__":
    sys.exit(main())
