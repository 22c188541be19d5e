"""`scripts/bench`: the read path's latency, next to the way Mastra answers the same page.

For each N: N Mastra-shaped suspended runs (copies of the fixture documents, new ids, over
20 agents) go into a fresh database of a fresh embedded MongoDB; `suspended-runs serve`
starts on it (its start-up reconcile is timed); then an agent-filtered `suspendedRuns`
page of 20 is asked over HTTP, with and without `total`. Beside it, the same page the way
Mastra's `listSuspendedRuns()` computes it: every suspended snapshot read in pages of 100
(sorted by createdAt, with skip), parsed, and filtered in the process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pymongo import MongoClient

from scripts.copies import copies, insert_runs
from suspended_runs.server import EmbeddedMongoDB
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document, extract_entry

AGENTS = 20
PAGE = 20
QUERY = """query($agent: ID!) { suspendedRuns(filter: {agentId: $agent}, perPage: 20, page: 0) {
  %s hasMore runs { runId threadId resourceId suspendedAt
  toolCalls { toolCallId toolName args requiresApproval suspendPayload } } } }"""


def load(uri: str, db_name: str, count: int) -> None:
    with MongoClient[Document](uri) as client:
        collection = client[db_name][SNAPSHOTS_COLLECTION]
        insert_runs(collection, copies(count, AGENTS, datetime(2026, 1, 1, tzinfo=UTC)))


def serve(uri: str, db_name: str, log: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    env = {**os.environ, "MONGODB_URI": uri, "MONGODB_DB": db_name, "PORT": str(port)}
    env["LOG_LEVEL"] = "WARNING"
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
                return process, url, time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.05)


def timed(call: Callable[[int], object], repeats: int) -> list[float]:
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - started) * 1000)
    return times


def api_page(client: httpx.Client, with_total: bool) -> Callable[[int], object]:
    query = QUERY % ("total" if with_total else "")

    def ask(i: int) -> object:
        response = client.post(
            "/graphql", json={"query": query, "variables": {"agent": f"agent-{i % AGENTS:02d}"}}
        )
        body = response.json()
        assert "errors" not in body and len(body["data"]["suspendedRuns"]["runs"]) == PAGE, body
        return body

    return ask


class ScanTooSlow(Exception):
    """The scan passed its time limit (Mastra did not answer within 5 minutes at 10,000)."""


KEYSET = """query($agent: ID!, $after: String) {
  suspendedRuns(filter: {agentId: $agent}, first: 20, after: $after) {
    hasMore nextCursor runs { runId toolCalls { toolCallId } } } }"""


def keyset_page(client: httpx.Client) -> Callable[[int], object]:
    """The second page of 20 by cursor (first/after), for each agent in turn."""
    cursors = {}
    for i in range(AGENTS):
        agent = f"agent-{i:02d}"
        body = client.post("/graphql", json={"query": KEYSET, "variables": {"agent": agent}})
        cursors[agent] = body.json()["data"]["suspendedRuns"]["nextCursor"]

    def ask(i: int) -> object:
        agent = f"agent-{i % AGENTS:02d}"
        variables = {"agent": agent, "after": cursors[agent]}
        body = client.post("/graphql", json={"query": KEYSET, "variables": variables}).json()
        assert len(body["data"]["suspendedRuns"]["runs"]) == PAGE, body
        return body

    return ask


def mastra_scan(uri: str, db_name: str, limit_s: float) -> Callable[[int], object]:
    """listSuspendedRuns() as @mastra/core 1.71 does it: every suspended run, 100 at a time."""
    client = MongoClient[Document](uri, tz_aware=True)
    collection = client[db_name][SNAPSHOTS_COLLECTION]
    query = {"workflow_name": "agentic-loop", "snapshot.status": "suspended"}

    def scan(i: int) -> object:
        agent = f"agent-{i % AGENTS:02d}"
        matches = []
        offset = 0
        deadline = time.perf_counter() + limit_s
        while True:
            if time.perf_counter() > deadline:
                raise ScanTooSlow
            docs = list(collection.find(query).sort("createdAt", -1).skip(offset).limit(100))
            for doc in docs:
                entry = extract_entry(doc)
                if entry is not None and entry.agent_id == agent:
                    matches.append(entry)
            if len(docs) < 100:
                break
            offset += 100
        assert len(matches[:PAGE]) == PAGE
        return matches[:PAGE], len(matches)

    return scan


START = """mutation($prompt: String!) {
  startRun(input: {agentId: "file-cleaner", prompt: $prompt}) {
    ... on RunStarted { run { runId status } } } }"""
APPROVE = """mutation($run: ID!) { approveToolCall(input: {runId: $run}) {
  __typename ... on RunDecided { run { status output } } } }"""


def write_path(client: httpx.Client, runs: int, approvals: int) -> dict[str, Any]:
    """Start `runs` runs of the demo approval agent (each suspends), then approve some."""
    run_ids: list[str] = []

    def start(i: int) -> object:
        body = client.post(
            "/graphql", json={"query": START, "variables": {"prompt": f"delete /tmp/{i}"}}
        ).json()
        run = body["data"]["startRun"]["run"]
        assert run["status"] == "SUSPENDED", body
        run_ids.append(run["runId"])
        return run

    started = time.perf_counter()
    starts = timed(start, runs)
    total_s = time.perf_counter() - started

    def approve(i: int) -> object:
        body = client.post(
            "/graphql", json={"query": APPROVE, "variables": {"run": run_ids[i]}}
        ).json()
        assert body["data"]["approveToolCall"]["run"]["status"] == "COMPLETED", body
        return body

    return {
        "runs": runs,
        "total_s": total_s,
        "starts": starts,
        "approves": timed(approve, approvals),
        "bulk": bulk_decisions(client, rounds=5),
    }


BULK = """mutation($d: [ToolCallDecisionInput!]!) { decideToolCalls(decisions: $d) {
  __typename ... on RunDecided { run { status } } } }"""


def bulk_decisions(client: httpx.Client, rounds: int, size: int = 100) -> list[float]:
    """`rounds` times: start `size` runs (not timed), then approve them all in one
    decideToolCalls, through completion; the milliseconds of each decideToolCalls."""
    took: list[float] = []
    for r in range(rounds):
        run_ids = []
        for i in range(size):
            body = client.post(
                "/graphql", json={"query": START, "variables": {"prompt": f"delete /b/{r}/{i}"}}
            ).json()
            run_ids.append(body["data"]["startRun"]["run"]["runId"])
        decisions = [{"runId": run_id, "action": "APPROVE"} for run_id in run_ids]
        started = time.perf_counter()
        body = client.post("/graphql", json={"query": BULK, "variables": {"d": decisions}}).json()
        took.append((time.perf_counter() - started) * 1000)
        statuses = {a["run"]["status"] for a in body["data"]["decideToolCalls"]}
        assert statuses == {"COMPLETED"}, body
    return took


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated N")
    parser.add_argument("--requests", type=int, default=200, help="API requests per figure")
    parser.add_argument("--scans", type=int, default=5, help="Mastra-way scans per figure")
    parser.add_argument(
        "--scan-limit", type=float, default=300, help="seconds before a scan is given up"
    )
    parser.add_argument("--starts", type=int, default=1000, help="runs started (write path)")
    parser.add_argument("--approvals", type=int, default=200, help="runs approved (write path)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder, EmbeddedMongoDB(Path(folder)) as mongo:
        for n in (int(s) for s in args.sizes.split(",")):
            db_name = f"bench_{n}"
            load(mongo.uri, db_name, n)
            process, url, ready_s = serve(mongo.uri, db_name, Path(folder) / "serve.log")
            try:
                with httpx.Client(base_url=url, timeout=60) as client:
                    timed(api_page(client, True), 20)  # warm-up: caches, connections
                    plain = timed(api_page(client, False), args.requests)
                    total = timed(api_page(client, True), args.requests)
                    keyset = timed(keyset_page(client), args.requests)
            finally:
                process.terminate()
                process.wait()
            # A restart with nothing changed: the reconcile reads no whole snapshot.
            process, _, restart_s = serve(mongo.uri, db_name, Path(folder) / "serve.log")
            process.terminate()
            process.wait()
            try:
                scan: list[float] | None = timed(
                    mastra_scan(mongo.uri, db_name, args.scan_limit), args.scans
                )
            except ScanTooSlow:
                scan = None
            rows.append(
                {
                    "n": n,
                    "plain": plain,
                    "total": total,
                    "keyset": keyset,
                    "scan": scan,
                    "ready": ready_s,
                    "restart": restart_s,
                }
            )
            print(f"N={n} done", file=sys.stderr)
        process, url, _ = serve(mongo.uri, "bench_write", Path(folder) / "serve.log")
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                write = write_path(client, args.starts, args.approvals)
        finally:
            process.terminate()
            process.wait()
    print(
        "| N runs | page of 20, no total: median / p95 | with total: median / p95 "
        "| second page by cursor: median / p95 "
        "| Mastra's way (scan): median | speed-up (median) | first start / restart to ready |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        plain, total, keyset, scan = row["plain"], row["total"], row["keyset"], row["scan"]
        if scan is None:
            scan_cell = f"> {args.scan_limit:,.0f} s (given up)"
            ratio = f"> {args.scan_limit * 1000 / statistics.median(plain):,.0f}x"
        else:
            scan_cell = f"{statistics.median(scan):,.0f} ms"
            ratio = f"{statistics.median(scan) / statistics.median(plain):,.0f}x"
        print(
            f"| {row['n']:,} | {statistics.median(plain):.1f} / {p95(plain):.1f} ms "
            f"| {statistics.median(total):.1f} / {p95(total):.1f} ms "
            f"| {statistics.median(keyset):.1f} / {p95(keyset):.1f} ms "
            f"| {scan_cell} | {ratio} | {row['ready']:.1f} s / {row['restart']:.1f} s |"
        )
    starts, approves = write["starts"], write["approves"]
    print()
    print("| write path (demo agent file-cleaner, over HTTP) | median | p95 | total |")
    print("|---|---:|---:|---:|")
    print(
        f"| startRun until suspended, {write['runs']:,} runs one after another "
        f"| {statistics.median(starts):.1f} ms | {p95(starts):.1f} ms "
        f"| {write['total_s']:.1f} s |"
    )
    print(
        f"| approveToolCall through completion ({len(approves)} runs) "
        f"| {statistics.median(approves):.1f} ms | {p95(approves):.1f} ms | |"
    )
    bulk = write["bulk"]
    print(
        f"| decideToolCalls of 100 approvals through completion ({len(bulk)} rounds) "
        f"| {statistics.median(bulk):.0f} ms | {max(bulk):.0f} ms (max) | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
