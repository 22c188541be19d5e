"""`scripts/bench --langgraph`: LangGraph threads listed beside Mastra's runs.

Threads are written directly, as `MongoDBSaver` writes them (LangGraph's own serializer):
each a conversation of `CHECKPOINTS` root checkpoints with a write each, in turns of
`TURN` (an input, then the agent's steps), interrupted at its last by a per-call approval
(`{type: "tool_approval", ...}`), over 20 agents (metadata
`lc_agent_name`) and 200 resources (`user_id`), created one a second as the main bench's
Mastra runs are: so every list shape asks the same spread of runs of both.

- the database's own rate for a thread's documents, one at a time, with nothing following,
  and with the server's index on the writes (what the index costs the user's writes);
- for each size: first start, restarts to ready, every list shape beside the same shape
  over as many Mastra runs (`bench.list_figures`);
- a burst of threads written one after the other while the server follows (threads a
  second, first write to the last one listed), as a share of the database's rate;
- write-to-listed p50/p99 at each of `--langgraph-rates` threads a second.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt
from pymongo import MongoClient
from pymongo.database import Database

from suspended_runs.storage import Document

CHECKPOINTS = 20
TURN = 4
"""Checkpoints of one invocation: its input, a model call, tools, a model call."""
AGENTS, RESOURCES = 20, 200
_SERDE = JsonPlusSerializer()
_UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)
WRITES_INDEX = [("channel", 1), ("checkpoint_ns", 1)]


def checkpoint_id(moment: datetime) -> str:
    """A LangGraph checkpoint id (a version-6 UUID) carrying `moment`."""
    ticks = int((moment - _UUID_EPOCH).total_seconds() * 10_000_000)
    rest = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = ((ticks >> 12) << 80) | (6 << 76) | ((ticks & 0xFFF) << 64) | (0b10 << 62) | rest
    return str(uuid.UUID(int=value))


def _typed(value: Any) -> tuple[str, bytes]:
    return _SERDE.dumps_typed(value)


def thread_docs(
    i: int, created: datetime, length: int = CHECKPOINTS
) -> tuple[str, list[Document], list[Document]]:
    """Thread `i`'s run id, checkpoints and writes: one invocation, interrupted at its last."""
    thread_id = f"lg-thread-{i}"
    ids = [checkpoint_id(created + timedelta(milliseconds=k)) for k in range(length)]
    state = _typed({"v": 4, "channel_values": {"topic": "refund"}, "channel_versions": {}})
    metadata = {"lc_agent_name": f"agent-{i % AGENTS:02d}", "user_id": f"user-{i % RESOURCES}"}
    checkpoints = []
    for k, cid in enumerate(ids):
        meta = {"source": "input" if k % TURN == 0 else "loop", "step": k - 1, **metadata}
        checkpoints.append(
            {
                "thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": cid,
                "parent_checkpoint_id": ids[k - 1] if k else None,
                "type": state[0], "checkpoint": state[1],
                "metadata": {key: list(_typed(value)) for key, value in meta.items()},
            }
        )  # fmt: skip
    writes = [
        _write(thread_id, cid, "messages", [], 0, f"task-{k}") for k, cid in enumerate(ids[:-1])
    ]
    ask = {"type": "tool_approval", "tool_call_id": f"call-{i}", "name": "issue_refund",
           "args": {"order": f"A-{i}", "amount": 12.5}, "description": "Refund?"}  # fmt: skip
    interrupt = [Interrupt(value=ask, id=uuid.uuid4().hex)]
    writes.append(_write(thread_id, ids[-1], "__interrupt__", interrupt, -3, "task-ask"))
    return f"lg:{thread_id}:{ids[(length - 1) // TURN * TURN]}", checkpoints, writes


def _write(thread_id: str, cid: str, channel: str, value: Any, idx: int, task: str) -> Document:
    kind, data = _typed(value)
    return {
        "thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": cid, "task_id": task,
        "task_path": "~__pregel_pull, model", "idx": idx, "channel": channel,
        "type": kind, "value": data,
    }  # fmt: skip


def saver_db(uri: str, name: str) -> Database[Document]:
    return MongoClient[Document](uri)[name]


def load(uri: str, name: str, count: int, start: datetime) -> float:
    """`count` threads, created one a second from `start`; seconds it took."""
    began = time.perf_counter()
    db = saver_db(uri, name)
    db.checkpoint_writes.create_index(
        [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1), ("task_id", 1), ("idx", 1)],
        unique=True,
    )
    db.checkpoints.create_index(
        [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)], unique=True
    )
    checkpoints: list[Document] = []
    writes: list[Document] = []
    for i in range(count):
        _, made, written = thread_docs(i, start + timedelta(seconds=i))
        checkpoints += made
        writes += written
        if len(checkpoints) >= 5000:
            db.checkpoints.insert_many(checkpoints)
            db.checkpoint_writes.insert_many(writes)
            checkpoints, writes = [], []
    if checkpoints:
        db.checkpoints.insert_many(checkpoints)
        db.checkpoint_writes.insert_many(writes)
    db.client.close()
    return time.perf_counter() - began


def _insert_thread(db: Database[Document], i: int, length: int = 3) -> str:
    """One thread written as the saver writes it: a document at a time; its run id."""
    run_id, checkpoints, writes = thread_docs(i, datetime.now(UTC), length)
    for doc in [*checkpoints, *writes]:
        (db.checkpoints if "checkpoint" in doc else db.checkpoint_writes).insert_one(doc)
    return run_id


def insert_rate(uri: str, name: str, threads: int, indexed: bool) -> float:
    """Threads a second the database takes, one document at a time, nothing following."""
    db = saver_db(uri, name)
    if indexed:
        db.checkpoint_writes.create_index(WRITES_INDEX, name="suspended_runs_channel_ns")
    began = time.perf_counter()
    for i in range(threads):
        _insert_thread(db, 10_000_000 + i)
    rate = threads / (time.perf_counter() - began)
    db.client.close()
    return rate


def listed_count(client: httpx.Client, agent: str | None = None) -> int:
    shape = f'{{agentId: "{agent}"}}' if agent else "{}"
    query = f"{{ suspendedRuns(filter: {shape}, first: 1) {{ total }} }}"
    return int(
        client.post("/graphql", json={"query": query}).json()["data"]["suspendedRuns"]["total"]
    )


def burst(uri: str, name: str, url: str, threads: int) -> float:
    """Threads a second the follower lists: `threads` written one document at a time, from
    the first write to the last listed."""
    db = saver_db(uri, name)
    with httpx.Client(base_url=url, timeout=60) as client:
        before = listed_count(client)
        began = time.perf_counter()
        for i in range(threads):
            _insert_thread(db, 20_000_000 + i)
        while listed_count(client) < before + threads:
            time.sleep(0.02)
        rate = threads / (time.perf_counter() - began)
    db.client.close()
    return rate


@dataclass
class Paced:
    rate: int
    delays: list[float] = field(default_factory=list)
    unseen: int = 0

    def figures(self) -> tuple[float, float]:
        ordered = sorted(self.delays) or [float("nan")]
        return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def paced(uri: str, name: str, url: str, rate: int, seconds: float, offset: int) -> Paced:
    """Threads written at `rate` a second for `seconds`; each one's delay until listed."""
    db = saver_db(uri, name)
    written: dict[str, float] = {}
    seen: dict[str, float] = {}
    lock, stop = threading.Lock(), threading.Event()
    checker = threading.Thread(target=_check, args=(url, written, seen, lock, stop))
    checker.start()
    began = time.perf_counter()
    for k in range(int(rate * seconds)):
        time.sleep(max(0.0, began + k / rate - time.perf_counter()))
        run_id = _insert_thread(db, offset + k)
        with lock:
            written[run_id] = time.perf_counter()
    time.sleep(5)
    stop.set()
    checker.join()
    db.client.close()
    result = Paced(rate, [seen[r] - at for r, at in written.items() if r in seen])
    result.unseen = len(written) - len(result.delays)
    return result


def _check(
    url: str,
    written: dict[str, float],
    seen: dict[str, float],
    lock: threading.Lock,
    stop: threading.Event,
) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            with lock:
                waiting = [r for r in written if r not in seen]
            for batch in _chunks(waiting, 25):
                query = (
                    "{ "
                    + " ".join(
                        f'a{i}: agentRun(runId: "{r}") {{ status }}' for i, r in enumerate(batch)
                    )
                    + " }"
                )
                data = client.post("/graphql", json={"query": query}).json()["data"]
                now = time.perf_counter()
                with lock:
                    for i, run_id in enumerate(batch):
                        if (data.get(f"a{i}") or {}).get("status") == "SUSPENDED":
                            seen[run_id] = now
            time.sleep(0.01)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


START_RUN = """mutation($agent: ID!, $p: String!) {
  startRun(input: {agentId: $agent, prompt: $p}) { __typename
    ... on RunStarted { run { runId status toolCalls { toolCallId } } }
    ... on Problem { message } } }"""
APPROVE = """mutation($r: ID!, $c: String) { approveToolCall(input: {runId: $r, toolCallId: $c}) {
  __typename ... on RunDecided { run { status } } ... on Problem { message } } }"""
DEMO_GRAPH = {"langgraph-refunds": "suspended_runs.runtime.demo_graphs:refunds"}


def _started(client: httpx.Client, agent: str, prompt: str) -> list[str]:
    """A run started and its every call but the last approved: (run id, last call)."""
    body = client.post(
        "/graphql", json={"query": START_RUN, "variables": {"agent": agent, "p": prompt}}
    )
    run = body.json()["data"]["startRun"]["run"]
    calls = [c["toolCallId"] for c in run["toolCalls"]]
    for call in calls[:-1]:
        _approve(client, run["runId"], call)
    return [run["runId"], calls[-1]]


def _approve(client: httpx.Client, run_id: str, call: str | None) -> float:
    """Milliseconds of an approval, through the run's continuation (its tools ran)."""
    began = time.perf_counter()
    body = client.post("/graphql", json={"query": APPROVE, "variables": {"r": run_id, "c": call}})
    answer = body.json()["data"]["approveToolCall"]
    assert answer["__typename"] == "RunDecided", answer
    return (time.perf_counter() - began) * 1000


def decisions(url: str, single: int, concurrent: int) -> dict[str, Any]:
    """Decision to the tools having run (the approval that continues a run answers once its
    continuation rested): LangGraph one at a time and `concurrent` at once, and the demo
    Python agent's one at a time; the most graphs that ran at once."""
    with httpx.Client(base_url=url, timeout=300) as client:
        one = []
        for i in range(single):
            run_id, call = _started(client, "langgraph-refunds", f"Refund order A-{i}, 10.00")
            one.append(_approve(client, run_id, call))
        waiting = [
            _started(client, "langgraph-refunds", f"Refund A-{i}") for i in range(concurrent)
        ]
        times: list[float] = []

        def approve(run: list[str]) -> None:
            with httpx.Client(base_url=url, timeout=300) as own:
                times.append(_approve(own, run[0], run[1]))

        workers = [threading.Thread(target=approve, args=(run,)) for run in waiting]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        python = []
        for i in range(single):
            run_id, call = _started(client, "file-cleaner", f"delete /tmp/bench-{i}.txt")
            python.append(_approve(client, run_id, call))
        scraped = client.get("/metrics").text
    most = [
        line
        for line in scraped.splitlines()
        if line.startswith("suspended_runs_langgraph_graphs_running_most")
    ]
    return {
        "one": one,
        "concurrent": times,
        "python": python,
        "most": most[0].split()[-1] if most else "?",
    }
