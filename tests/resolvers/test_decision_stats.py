"""decisionStats (resolvers/decision_stats.py) over GraphQL: counts and times equal to
figures computed by hand from a seeded audit log, within the filter and the scope."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from suspended_runs.server import Settings
from suspended_runs.server.auth import new_api_key
from suspended_runs.storage.types import DECISIONS_COLLECTION
from tests.helpers import APPROVE, act, make_gql, running_app
from tests.helpers import start_run as start

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
STATS = """query($filter: RunsFilter, $from: DateTime, $to: DateTime) {
  decisionStats(filter: $filter, decidedFrom: $from, decidedTo: $to) {
    approved declined resumed expired
    times { key decisions medianSeconds p90Seconds }
    byAgent { key decisions medianSeconds p90Seconds }
    byTool { key decisions medianSeconds p90Seconds } } }"""


def record(
    seconds: float,
    action: str = "approve",
    agent: str = "a1",
    tool: str = "t1",
    resource: str = "r1",
    outcome: str = "RunDecided",
    **extra: Any,
) -> dict[str, Any]:
    """An audit record of a decision taken `seconds` after its run suspended at T0."""
    return {
        "runId": f"run-{seconds}-{action}",
        "action": action,
        "by": "key:alice",
        "at": T0 + timedelta(seconds=seconds),
        "outcome": outcome,
        "agentId": agent,
        "toolName": tool,
        "resourceId": resource,
        "threadId": None,
        "runCreatedAt": T0,
        "suspendedAt": T0,
        **extra,
    }


SEEDED = [
    record(10),
    record(20, "decline"),
    record(30),
    record(40, "resume", tool="t2"),
    record(100, agent="a2", tool="t2", resource="r2"),
    record(60, "decline", by="system", reason="expired after 60 s"),
    record(5, outcome="ApprovalRecorded"),  # an approval before a quorum: not a decision
    record(7, outcome="AlreadyDecided"),  # refused: nothing applied
    record(9, outcome="ExecutorUnavailable"),  # certainly not applied
    record(86_400 * 3),  # outside the window asked
]


def times(key: str, decisions: int, median: float | None, p90: float | None) -> dict[str, Any]:
    return {"key": key, "decisions": decisions, "medianSeconds": median, "p90Seconds": p90}


async def test_counts_and_times_equal_those_computed_by_hand(
    settings: Settings, db: Any, tmp_path: Path
) -> None:
    await db[DECISIONS_COLLECTION].insert_many(SEEDED)
    key, digest = new_api_key()
    entry = {"name": "r1-viewer", "sha256": digest, "role": "viewer", "resourceIds": ["r1"]}
    admin_key, admin_digest = new_api_key()
    admin = {"name": "admin", "sha256": admin_digest, "role": "admin", "scope": "all"}
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([entry, admin]))
    window = {"from": T0.isoformat(), "to": (T0 + timedelta(days=1)).isoformat()}
    async with running_app(settings.model_copy(update={"api_keys_file": keys})) as client:
        everyone = make_gql(client, {"x-api-key": admin_key})
        scoped = make_gql(client, {"x-api-key": key})
        whole = (await everyone(STATS, window))["data"]["decisionStats"]
        one_agent = await everyone(STATS, {**window, "filter": {"agentId": "a1"}})
        in_scope = (await scoped(STATS, window))["data"]["decisionStats"]
    # By hand: people's decisions took 10, 20, 30, 40 (a1) and 100 s (a2); the expiry apart.
    assert whole == {
        "approved": 3,
        "declined": 1,
        "resumed": 1,
        "expired": 1,
        "times": times("all", 5, 30.0, 100.0),
        "byAgent": [times("a1", 4, 25.0, 40.0), times("a2", 1, 100.0, 100.0)],
        "byTool": [times("t1", 3, 20.0, 30.0), times("t2", 2, 70.0, 100.0)],
    }
    assert one_agent["data"]["decisionStats"]["times"] == times("all", 4, 25.0, 40.0)
    assert in_scope["times"] == times("all", 4, 25.0, 40.0)  # r2's decision is not its
    assert in_scope["expired"] == 1


async def test_a_decision_made_here_is_counted_and_timed(settings: Settings) -> None:
    async with running_app(settings) as client:
        gql = make_gql(client)
        run = await start(gql, "file-cleaner")
        await act(gql, APPROVE, runId=run["runId"])
        stats = (await gql(STATS, {"filter": {"agentId": "file-cleaner"}}))["data"]
        metrics = (await client.get("/metrics")).text
    shown = stats["decisionStats"]
    assert shown["approved"] == 1 and shown["byTool"][0]["key"] == "delete_file"
    assert 0 <= shown["times"]["medianSeconds"] < 60
    assert "suspended_runs_time_to_decision_seconds_count" in metrics
