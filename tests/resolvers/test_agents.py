"""`agents` and `startRun` (resolvers/agents.py)."""

from __future__ import annotations

from suspended_runs.storage import FOLLOWER_STATE_COLLECTION, RunIndex
from suspended_runs.storage.index.agents import AGENTS_ID
from tests.builders import calls_of
from tests.helpers import eventually, load_snapshots, start_run

AGENTS = "{ agents { id runtime suspendedRuns } }"


async def test_agents_lists_python_and_mastra_agents_with_their_suspended_runs(
    gql, snapshots
) -> None:
    await snapshots.insert_many(load_snapshots())
    await gql(
        'mutation { startRun(input: {agentId: "file-cleaner", prompt: "delete /tmp/x"}) '
        "{ __typename } }"
    )

    expected = {
        "approver": ("MASTRA", 3),
        "asker": ("MASTRA", 2),
        "mixed": ("MASTRA", 1),
        "file-cleaner": ("PYTHON", 1),
        "city-asker": ("PYTHON", 0),
        "trip-planner": ("PYTHON", 0),
    }

    async def listed() -> dict[str, tuple[str, int]]:
        agents = (await gql(AGENTS))["data"]["agents"]
        return {a["id"]: (a["runtime"], a["suspendedRuns"]) for a in agents}

    async def settled() -> bool:
        # An agent is listed before its first run is written (never missing, at 0 a moment).
        return await listed() == expected

    await eventually(settled, within=2)
    assert await listed() == expected


async def test_a_run_started_with_thread_and_resource_is_filterable_by_them(gql) -> None:
    started = await start_run(gql, "city-asker", "Where?", threadId="th-9", resourceId="user-9")
    run_id = started["runId"]
    page = await gql(
        '{ suspendedRuns(filter: {threadId: "th-9", resourceId: "user-9"}) '
        "{ total runs { runId threadId resourceId } } }"
    )
    assert page["data"]["suspendedRuns"] == {
        "total": 1,
        "runs": [{"runId": run_id, "threadId": "th-9", "resourceId": "user-9"}],
    }


def _aliases(count: int) -> str:
    return "{ " + " ".join(f"a{i}: agents {{ id suspendedRuns }}" for i in range(count)) + " }"


async def test_agents_costs_a_row_per_agent_and_is_read_once_per_request(
    gql, db, monkeypatch
) -> None:
    seen = [{"agentId": f"agent-{i:03}", "runtime": "mastra"} for i in range(300)]
    await db[FOLLOWER_STATE_COLLECTION].update_one(
        {"_id": AGENTS_ID}, {"$addToSet": {"seen": {"$each": seen}}}, upsert=True
    )
    reads = calls_of(monkeypatch, RunIndex, "suspended_by_agent")
    within = await gql(_aliases(6))  # 6 x 303 agents (and 3 Python ones): 1,818 rows
    assert "errors" not in within and len(within["data"]["a5"]) == 303
    assert len(reads) == 1
    beyond = await gql(_aliases(30))  # the 7th alias would read 2,121 rows
    assert beyond["data"] is None
    limits = {str(error["extensions"]) for error in beyond["errors"]}
    assert limits == {str({"code": "BAD_USER_INPUT", "limit": "MAX_ROWS_PER_REQUEST"})}
    assert len(reads) == 2
