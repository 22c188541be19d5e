"""`scripts/bench --assigned`: what a list with `assignedToMe` costs beside other shapes.

For each N of `--sizes`, the runs of the main bench (20 agents, copies of the fixture's
documents) are served with API keys and review policies that assign:

- `key:bench` two agents' calls (agent-03, and agent-15 from the start);
- `group:ops` (the key `member`) agent-07's `deleteFile` calls and all of agent-11's;
- `key:carol` agent-15's calls once their run has waited a day (every run here has:
  its list is one band of `suspendedAt`, checked on each entry read, and counted from
  the tallies' suspension times);
- `key:bench` also the demo agent's, so a run started before a poll joins its list.

Every figure is a page of 20, its median and p95 in ms without `total` and with it, in
one server, so the shapes compare as ratios: `all agents` and `by agent` as the main
bench asks them, then each caller's `assignedToMe`, then the first poll after a write.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

KEYS = {"bench": ("admin", []), "member": ("approver", ["ops"]), "carol": ("approver", [])}
POLICIES = [
    {"agentId": "agent-03", "reviewers": ["key:bench"]},
    {"agentId": "agent-07", "toolName": "deleteFile", "reviewers": ["group:ops"]},
    {"agentId": "agent-11", "reviewers": ["group:ops"]},
    {
        "agentId": "agent-15",
        "reviewers": ["key:bench"],
        "escalateAfterSeconds": 86400,
        "escalateTo": ["key:carol"],
    },
    {"agentId": "file-cleaner", "reviewers": ["key:bench"]},
]
LIST = """query List($filter: SuspendedRunsFilter) {
  suspendedRuns(filter: $filter, perPage: 20, page: 0) { %s hasMore runs {
    runId agentId createdAt toolCalls { toolCallId toolName args assignedTo } } } }"""
START_RUN = """mutation($prompt: String!) {
  startRun(input: {agentId: "file-cleaner", prompt: $prompt}) { __typename } }"""

Shape = tuple[str, str, Callable[[int], dict[str, Any]]]
"""A figure's name, the key that asks, and its filter for the i-th request."""

SHAPES: list[Shape] = [
    ("all agents", "bench", lambda i: {}),
    ("by agent", "bench", lambda i: {"agentId": f"agent-{i % 20:02d}"}),
    ("assigned to me: a subject's (2 agents)", "bench", lambda i: {"assignedToMe": True}),
    (
        "assigned to me: a group's (a tool of one agent, another agent)",
        "member",
        lambda i: {"assignedToMe": True},
    ),
    (
        "assigned to me: escalated (a band of suspendedAt)",
        "carol",
        lambda i: {"assignedToMe": True},
    ),
    (
        "assigned to me, by resource",
        "bench",
        lambda i: {"assignedToMe": True, "resourceId": f"user-{i % 200}"},
    ),
]

AFTER_WRITES: dict[str, Callable[[int], dict[str, Any]]] = {
    "by agent": lambda i: {"agentId": f"agent-{i % 20:02d}"},
    "assigned to me": lambda i: {"assignedToMe": True},
}
"""The lists asked just after a run assigned to `key:bench` started."""


def settings(folder: Path) -> dict[str, str]:
    """The environment that serves with these keys and policies."""
    keys = folder / "bench-keys.json"
    entries = [
        {"name": name, "sha256": _digest(key(name)), "role": role, "scope": "all", "groups": groups}
        for name, (role, groups) in KEYS.items()
    ]
    keys.write_text(json.dumps(entries))
    return {"API_KEYS_FILE": str(keys), "REVIEW_POLICIES": json.dumps(POLICIES)}


def key(name: str) -> str:
    return f"bench-key-{name}"


def headers(name: str = "bench") -> dict[str, str]:
    return {"X-API-Key": key(name)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def figures(url: str, repeats: int) -> dict[str, tuple[list[float], list[float]]]:
    """name -> (ms without total, ms with total), each shape warmed up once first."""
    found: dict[str, tuple[list[float], list[float]]] = {}
    for name, caller, shape in SHAPES:
        with httpx.Client(base_url=url, timeout=120, headers=headers(caller)) as client:
            _timed(client, shape, True, 20)
            found[name] = (
                _timed(client, shape, False, repeats),
                _timed(client, shape, True, repeats),
            )
    with httpx.Client(base_url=url, timeout=120, headers=headers()) as client:
        for name, asked in AFTER_WRITES.items():
            found[f"{name}, total, first poll after a write"] = (
                [],
                _after_writes(client, asked, repeats),
            )
    return found


def _timed(
    client: httpx.Client,
    shape: Callable[[int], dict[str, Any]],
    total: bool,
    repeats: int,
    first: int = 0,
) -> list[float]:
    took = []
    query = LIST % ("total" if total else "")
    for i in range(first, first + repeats):
        started = time.perf_counter()
        body = client.post("/graphql", json={"query": query, "variables": {"filter": shape(i)}})
        took.append((time.perf_counter() - started) * 1000)
        answer = body.json()
        assert "errors" not in answer, answer
    return took


def _after_writes(
    client: httpx.Client, shape: Callable[[int], dict[str, Any]], repeats: int
) -> list[float]:
    """A list with `total`, each time just after a run (assigned to the caller) started."""
    took = []
    for i in range(repeats):
        variables = {"prompt": f"rm /a/{i}"}
        started = client.post("/graphql", json={"query": START_RUN, "variables": variables})
        assert started.json()["data"]["startRun"]["__typename"] == "RunStarted", started.text
        took += _timed(client, shape, True, 1, first=i)
    return took


def totals(url: str) -> dict[str, int]:
    """Each caller's `total` of its assigned runs."""
    totals = {}
    for name, caller, shape in SHAPES[2:5]:
        with httpx.Client(base_url=url, timeout=120, headers=headers(caller)) as client:
            body = client.post(
                "/graphql", json={"query": LIST % "total", "variables": {"filter": shape(0)}}
            )
            totals[name] = body.json()["data"]["suspendedRuns"]["total"]
    return totals
