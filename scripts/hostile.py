"""`scripts/bench --hostile`: what careless and hostile requests cost the server.

On a fresh embedded MongoDB holding one suspended run for each of `--hostile-agents`
agents:

- `agents` asked once, in 6 aliases (the most `MAX_ROWS_PER_REQUEST` allows over 300
  agents) and in 30 (refused before its counts), and another caller's page meanwhile;
- the server's RSS before and after `--hostile-queries` distinct queries of
  `--hostile-kb` kB each (every cache keyed by query text is bounded in bytes);
- conditional polls (8 clients, each its own agent, all answered 304) with nothing
  written, and while runs of another agent are written at `--hostile-writes` a second:
  after each write anywhere a poll executes once to learn that its answer is the same.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from pymongo import MongoClient

from scripts.copies import suspended_templates
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document


def aliases(count: int) -> str:
    return "{ " + " ".join(f"a{i}: agents {{ id suspendedRuns }}" for i in range(count)) + " }"


def timed_ms(ask: Callable[[], Any], times: int) -> float:
    """The median milliseconds of `times` calls of `ask`."""
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        ask()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1000


def agents_figures(url: str, times: int = 20) -> list[tuple[str, str]]:
    """Medians of `agents` in 1, 6 and 30 aliases, and of a page asked meanwhile."""
    rows = []
    with httpx.Client(base_url=url, timeout=120) as client:

        def ask(count: int) -> Callable[[], Any]:
            return lambda: client.post("/graphql", json={"query": aliases(count)}).json()

        refused = ask(30)()
        assert refused["errors"][0]["extensions"]["limit"] == "MAX_ROWS_PER_REQUEST", refused
        for count in (1, 6, 30):
            rows.append((f"{count} alias(es) of agents", f"{timed_ms(ask(count), times):.1f} ms"))
        page = {"query": "{ suspendedRuns(first: 20) { total runs { runId } } }"}
        alone = timed_ms(lambda: client.post("/graphql", json=page), times)
        stop = threading.Event()

        def flood() -> None:
            with httpx.Client(base_url=url, timeout=120) as other:
                while not stop.is_set():
                    other.post("/graphql", json={"query": aliases(30)})

        flooding = [threading.Thread(target=flood) for _ in range(2)]
        for thread in flooding:
            thread.start()
        try:
            during = timed_ms(lambda: client.post("/graphql", json=page), times)
        finally:
            stop.set()
            for thread in flooding:
                thread.join()
        rows.append(("another caller's page, alone", f"{alone:.1f} ms"))
        rows.append(("the same page, while 2 clients send 30 aliases", f"{during:.1f} ms"))
    return rows


def large_queries(url: str, count: int, kilobytes: int) -> None:
    """`count` distinct valid queries of about `kilobytes` kB each (a comment fills them)."""
    filler = "x" * (kilobytes * 1024)
    with httpx.Client(base_url=url, timeout=120) as client:
        for i in range(count):
            query = f"query Q{i} {{ __typename }} # {i}{filler}"
            answer = client.post("/graphql", json={"query": query})
            assert answer.status_code == 200, answer.text[:200]


def writing(uri: str, db_name: str, rate: float, stop: threading.Event) -> threading.Thread:
    """A thread inserting a suspended run of `agent-writes` `rate` times a second."""
    template = suspended_templates()[0]

    def write() -> None:
        with MongoClient[Document](uri) as client:
            snapshots = client[db_name][SNAPSHOTS_COLLECTION]
            i = 0
            while not stop.is_set():
                started = time.perf_counter()
                doc = template.copy(f"w-{time.time_ns()}-{i}", "agent-writes", datetime.now(UTC))
                snapshots.insert_many(doc)
                i += 1
                time.sleep(max(0.0, 1 / rate - (time.perf_counter() - started)))

    thread = threading.Thread(target=write)
    thread.start()
    return thread
