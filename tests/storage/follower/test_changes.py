"""Changes applied in batches (storage/follower/changes.py), through the real follower and
the API: a burst costs a version a batch, not one a change, and whatever Mastra writes
(new runs, old dates, ties, deletions, runs resumed elsewhere), every list ends up as the
snapshots say."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from suspended_runs.server import Settings
from suspended_runs.storage import FOLLOWER_STATE_COLLECTION, extract_entry
from suspended_runs.storage.index import tallies
from tests.helpers import Gql, eventually, load_snapshots, make_gql

TEMPLATE = load_snapshots()[0]
AGENTS = ["approver", "asker", "mixed"]
RESOURCES = ["tenant-a", "tenant-b", None]
T0 = datetime(2026, 6, 1, tzinfo=UTC)
PAGE = """query($filter: SuspendedRunsFilter, $after: String) {
  suspendedRuns(filter: $filter, first: 7, after: $after) {
    total hasMore nextCursor runs { runId }
  }
}"""
SYNC = "{ sync { caughtUp behindSeconds } }"


def snapshot(run_id: str, agent: str, resource: str | None, created: datetime) -> dict[str, Any]:
    """A Mastra approval snapshot of `agent`, as @mastra/mongodb writes it."""
    doc = copy.deepcopy(TEMPLATE)
    doc.pop("_id", None)
    doc["run_id"] = run_id
    doc["snapshot"]["runId"] = run_id
    doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]["__agentId"] = agent
    doc["resourceId"] = resource
    doc["createdAt"], doc["updatedAt"] = created, datetime.now(UTC)
    return doc


async def _changes(db: Any) -> int:
    version = await db[FOLLOWER_STATE_COLLECTION].find_one({"_id": "run-index"}) or {}
    return int(version.get("changes", 0))


@pytest.fixture
async def client(settings: Settings, start_app: Any) -> Any:
    return await start_app(settings.model_copy(update={"sync_mode": "change_stream"}))


@pytest.fixture
async def streamed(client: Any) -> Gql:
    return make_gql(client)


async def test_a_burst_is_applied_in_batches_and_listed_whole(
    streamed: Gql, snapshots, db, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 snapshots written at once, with no count asked meanwhile: all listed and
    counted, with far fewer versions of the index than changes (a batch makes one), the
    counts of suspended runs still kept in memory (brought up to date, not read afresh),
    and `sync` caught up after."""
    monkeypatch.setattr(tallies, "_RELOAD_AFTER", 0.0)  # the first try found no version
    await snapshots.insert_one(snapshot("first", "approver", None, T0))
    await _counted_in_memory(client)  # (once the index has a version to count from)
    before = await _changes(db)
    await snapshots.insert_many(
        [
            snapshot(f"burst-{i:04d}", AGENTS[i % 3], None, T0 + timedelta(seconds=i))
            for i in range(3000)
        ]
    )

    async def last_listed() -> bool:
        body = await streamed('{ agentRun(runId: "burst-2999") { status } sync { caughtUp } }')
        data = body["data"]
        return bool(
            (data["agentRun"] or {}).get("status") == "SUSPENDED" and data["sync"]["caughtUp"]
        )

    await eventually(last_listed, within=120)
    assert await _changes(db) - before <= 300  # one version a batch, never one a change
    total = await streamed("{ suspendedRuns(first: 1) { total } }")
    assert total["data"]["suspendedRuns"]["total"] == 3001
    assert "suspended_runs_counts_in_memory 1.0" in (await client.get("/metrics")).text
    status = (await streamed(SYNC))["data"]["sync"]
    assert status == {"caughtUp": True, "behindSeconds": 0.0}


async def _counted_in_memory(client: Any) -> None:
    async def kept() -> bool:
        return "suspended_runs_counts_in_memory 1.0" in (await client.get("/metrics")).text

    await eventually(kept, within=30)


async def _oracle(snapshots: Any, agent: str | None, resource: str | None) -> list[str]:
    """The suspended runs a filter selects, by Mastra's rules, newest first."""
    entries = [e async for doc in snapshots.find({}) if (e := extract_entry(doc)) is not None]
    chosen = [
        e
        for e in entries
        if (agent is None or e.agent_id == agent)
        and (resource is None or e.resource_id == resource)
    ]
    chosen.sort(key=lambda e: (-e.created_at.timestamp(), e.run_id))
    return [e.run_id for e in chosen]


async def _listed(gql: Gql, agent: str | None, resource: str | None) -> tuple[list[str], set[int]]:
    """Every page of the filter, by cursor; and the totals the pages said."""
    run_filter = {k: v for k, v in {"agentId": agent, "resourceId": resource}.items() if v}
    ids: list[str] = []
    totals: set[int] = set()
    after = None
    while True:
        body = await gql(PAGE, {"filter": run_filter, "after": after})
        page = body["data"]["suspendedRuns"]
        ids += [run["runId"] for run in page["runs"]]
        totals.add(page["total"])
        if not page["hasMore"]:
            return ids, totals
        after = page["nextCursor"]


SHAPES = [(None, None), ("asker", None), (None, "tenant-a"), ("mixed", "tenant-b")]


async def _every_list_is_right(gql: Gql, snapshots: Any) -> bool:
    for agent, resource in SHAPES:
        expected = await _oracle(snapshots, agent, resource)
        ids, totals = await _listed(gql, agent, resource)
        if ids != expected or totals != {len(expected)}:
            return False
    return True


async def _burst(snapshots: Any, rng: random.Random, live: list[str], serial: int) -> None:
    """One burst of Mastra's writes: new runs (some with old or equal `createdAt`), runs
    that completed (deleted), runs resumed elsewhere (settled), runs suspended again."""
    moments = [T0 + timedelta(seconds=rng.randrange(50)) for _ in range(5)]  # ties, old dates
    new = [
        snapshot(f"r{serial}-{i}", rng.choice(AGENTS), rng.choice(RESOURCES), rng.choice(moments))
        for i in range(rng.randrange(20, 120))
    ]
    await snapshots.insert_many(new)
    live += [doc["run_id"] for doc in new]
    for run_id in rng.sample(live, min(len(live), rng.randrange(5, 30))):
        action = rng.choice(["delete", "settle", "suspend again"])
        if action == "delete":
            await snapshots.delete_one({"run_id": run_id})
            live.remove(run_id)
        elif action == "settle":
            update = {"snapshot.status": "success", "updatedAt": datetime.now(UTC)}
            await snapshots.update_one({"run_id": run_id}, {"$set": update})
        else:
            await snapshots.update_one(
                {"run_id": run_id},
                {"$set": {"snapshot.status": "suspended", "updatedAt": datetime.now(UTC)}},
            )


@pytest.mark.parametrize("seed", [1, 2])
async def test_random_bursts_leave_every_list_and_total_as_the_snapshots_say(
    streamed: Gql, snapshots, seed: int
) -> None:
    rng = random.Random(seed)
    live: list[str] = []
    for serial in range(4):
        await _burst(snapshots, rng, live, serial)
        await eventually(lambda: _every_list_is_right(streamed, snapshots), within=60)
