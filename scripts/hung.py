"""`scripts/bench --hung`: how long a request waits for a database that hangs.

Against `suspended-runs serve` on an embedded MongoDB of its own, holding runs of the demo
approval agent: the database's process is stopped (SIGSTOP: its connections stay open and
nothing answers, as with a frozen disk or a network partition), and `--hung-rounds` times
a list, an `agentRun`, an approval and `/readyz` are asked at once; each one's seconds to
a typed answer (`DATABASE_UNAVAILABLE`; /readyz's 503 `unavailable`) are kept. The process
is always continued (SIGCONT), and then the seconds until each answers as before.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

LIST = "{ suspendedRuns(first: 20) { total runs { runId } } }"
RUN = "query($runId: ID!) { agentRun(runId: $runId) { status } }"
APPROVE = """mutation($runId: ID!) { approveToolCall(input: {runId: $runId}) {
  __typename ... on RunDecided { run { status } } } }"""
START = """mutation { startRun(input: {agentId: "file-cleaner",
  prompt: "please delete /tmp/hung.txt"}) { ... on RunStarted { run { runId } } } }"""

Ask = Callable[[httpx.Client, str], httpx.Response]
ASKS: dict[str, Ask] = {
    "list (suspendedRuns)": lambda c, run: c.post("/graphql", json={"query": LIST}),
    "agentRun": lambda c, run: c.post("/graphql", json={"query": RUN, "variables": {"runId": run}}),
    "approveToolCall": lambda c, run: c.post(
        "/graphql", json={"query": APPROVE, "variables": {"runId": run}}
    ),
    "/readyz": lambda c, run: c.get("/readyz"),
}


@dataclass
class Figures:
    seconds: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in ASKS})
    untyped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ASKS, 0))
    back_after: dict[str, float] = field(default_factory=dict)


def start_runs(url: str, count: int) -> list[str]:
    with httpx.Client(base_url=url, timeout=60) as client:
        started = [client.post("/graphql", json={"query": START}).json() for _ in range(count)]
    return [body["data"]["startRun"]["run"]["runId"] for body in started]


def measure(url: str, pid: int, runs: list[str], rounds: int) -> Figures:
    """The four requests `rounds` times while process `pid` is stopped; then how soon
    each answers again once it goes on."""
    figures = Figures()
    os.kill(pid, signal.SIGSTOP)
    try:
        for i in range(rounds):
            _round(url, runs[i % len(runs)], figures)
    finally:
        os.kill(pid, signal.SIGCONT)
    went_on = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as client:
        for name, ask in ASKS.items():
            while not _as_before(name, ask(client, runs[-1])):
                time.sleep(0.05)
            figures.back_after[name] = time.perf_counter() - went_on
    return figures


def _round(url: str, run: str, figures: Figures) -> None:
    def one(name: str, ask: Ask) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            started = time.perf_counter()
            answer = ask(client, run)
            figures.seconds[name].append(time.perf_counter() - started)
            if not _typed(name, answer):
                figures.untyped[name] += 1

    threads = [threading.Thread(target=one, args=item) for item in ASKS.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _typed(name: str, answer: httpx.Response) -> bool:
    body: Any = answer.json()
    if name == "/readyz":
        return answer.status_code == 503 and body.get("status") == "unavailable"
    errors = body.get("errors") or [{}]
    return bool(errors[0].get("extensions", {}).get("code") == "DATABASE_UNAVAILABLE")


def _as_before(name: str, answer: httpx.Response) -> bool:
    if name == "/readyz":
        return answer.status_code == 200
    body: Any = answer.json()
    if name == "approveToolCall":
        return bool((body.get("data") or {}).get("approveToolCall", {}).get("run"))
    return answer.status_code == 200 and not body.get("errors")
