"""`scripts/bench --relay`: what global ids, `node`, `nodes` and Relay connections cost
beside the queries they stand beside, at each N of `--sizes` (the main bench's runs).

- `node(id:)` of a run beside `agentRun(runId:)`, the same runs and fields, interleaved;
- `nodes` of 100 runs' ids, and the queries the database counted for one such request
  (its `opcounters`; the fewest over all asked, as the follower may ask meanwhile);
- a page of 20 as `suspendedRunsConnection { totalCount edges ... }` beside
  `suspendedRuns { total runs ... }`: all agents, by agent, and an agent's second page
  by cursor, interleaved so that both meet the machine alike.

Each figure is `--requests` requests, median and p95 in ms, and the ratio of medians.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from pymongo import MongoClient

from suspended_runs.storage import Document

AGENTS = 20
RUN = """runId agentId threadId resourceId createdAt suspendedAt
  toolCalls { id toolCallId toolName args requiresApproval suspendPayload }"""
AGENT_RUN = f"query($run: ID!) {{ agentRun(runId: $run) {{ id {RUN} }} }}"
NODE = f"query($id: ID!) {{ node(id: $id) {{ id ... on AgentRun {{ {RUN} }} }} }}"
NODES = f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ id ... on AgentRun {{ {RUN} }} }} }}"
PAGE = f"""query($filter: SuspendedRunsFilter, $after: String) {{
  suspendedRuns(filter: $filter, first: 20, after: $after) {{
    total hasMore nextCursor runs {{ id {RUN} }} }} }}"""
CONNECTION = f"""query($filter: SuspendedRunsFilter, $after: String) {{
  suspendedRunsConnection(filter: $filter, first: 20, after: $after) {{
    totalCount edges {{ cursor node {{ id {RUN} }} }} pageInfo {{ hasNextPage endCursor }} }} }}"""
SAMPLE = "{ suspendedRunsConnection(first: 500) { edges { node { id runId } } } }"

Figures = dict[str, tuple[list[float], list[float]]]
"""name -> (ms of the new form, ms of what it stands beside; empty: nothing beside)."""


def figures(url: str, mongo_uri: str, repeats: int) -> tuple[Figures, int]:
    """Every figure, and the fewest queries the database counted for one `nodes` of 100."""
    with httpx.Client(base_url=url, timeout=120) as client:
        runs = [e["node"] for e in _ask(client, SAMPLE)["suspendedRunsConnection"]["edges"]]
        found: Figures = {
            "a run: node(id:) · agentRun(runId:)": _paired(
                client,
                lambda i: (NODE, {"id": runs[i % len(runs)]["id"]}),
                lambda i: (AGENT_RUN, {"run": runs[i % len(runs)]["runId"]}),
                repeats,
            ),
        }
        ids = [run["id"] for run in runs[:100]]
        found["nodes of 100 runs"] = (_timed(client, lambda i: (NODES, {"ids": ids}), repeats), [])
        for name, shape in _shapes(client).items():
            found[f"{name}: connection with totalCount · page with total"] = _paired(
                client,
                lambda i, shape=shape: (CONNECTION, shape(i)),  # type: ignore[misc]
                lambda i, shape=shape: (PAGE, shape(i)),  # type: ignore[misc]
                repeats,
            )
        return found, _fewest_queries(client, mongo_uri, ids, repeats)


def _shapes(client: httpx.Client) -> dict[str, Callable[[int], dict[str, Any]]]:
    """Each list shape: i -> variables, spread over the agents."""
    seconds = {}
    for k in range(AGENTS):
        agent = {"agentId": f"agent-{k:02d}"}
        page = _ask(client, PAGE, filter=agent)["suspendedRuns"]
        seconds[k] = page["nextCursor"]
    return {
        "all agents": lambda i: {"filter": {}},
        "by agent": lambda i: {"filter": {"agentId": f"agent-{i % AGENTS:02d}"}},
        "by agent, page 2 by cursor": lambda i: {
            "filter": {"agentId": f"agent-{i % AGENTS:02d}"},
            "after": seconds[i % AGENTS],
        },
    }


def _paired(
    client: httpx.Client,
    new: Callable[[int], tuple[str, dict[str, Any]]],
    old: Callable[[int], tuple[str, dict[str, Any]]],
    repeats: int,
) -> tuple[list[float], list[float]]:
    """Both forms, one request of each in turn, after a warm-up of each."""
    _timed(client, new, AGENTS)
    _timed(client, old, AGENTS)
    news: list[float] = []
    olds: list[float] = []
    for i in range(repeats):
        news += _timed(client, new, 1, first=i)
        olds += _timed(client, old, 1, first=i)
    return news, olds


def _timed(
    client: httpx.Client,
    asked: Callable[[int], tuple[str, dict[str, Any]]],
    repeats: int,
    first: int = 0,
) -> list[float]:
    took = []
    for i in range(first, first + repeats):
        query, variables = asked(i)
        started = time.perf_counter()
        _ask(client, query, **variables)
        took.append((time.perf_counter() - started) * 1000)
    return took


def _ask(client: httpx.Client, query: str, **variables: Any) -> Any:
    body = client.post("/graphql", json={"query": query, "variables": variables}).json()
    assert "errors" not in body, body
    return body["data"]


def _fewest_queries(client: httpx.Client, mongo_uri: str, ids: list[str], repeats: int) -> int:
    """The fewest queries (finds) the database counted across one `nodes` request."""
    fewest = None
    with MongoClient[Document](mongo_uri) as mongo:
        for _ in range(repeats):
            before = mongo.admin.command("serverStatus")["opcounters"]["query"]
            _ask(client, NODES, ids=ids)
            counted = mongo.admin.command("serverStatus")["opcounters"]["query"] - before
            fewest = counted if fewest is None else min(fewest, counted)
    return fewest or 0
