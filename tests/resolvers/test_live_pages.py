"""Live pages (resolvers/live_pages.py): one evaluation per change for all subscribers of
a page, and a push only to those whose page changed. Real WebSocket clients, a real
uvicorn server, changes written as Mastra writes them."""

from __future__ import annotations

import asyncio
import re

import httpx

from suspended_runs.server import Settings
from suspended_runs.storage import Document
from tests.graphql_ws import next_for, open_session, page_of, subscribe
from tests.helpers import ThreadedServer, suspended_doc

EVALUATIONS = re.compile(r"^suspended_runs_subscription_evaluations_total (\S+)$", re.M)
WATCH = 'subscription { suspendedRuns(filter: {agentId: "approver"}) { total runs { runId } } }'


def evaluations(url: str) -> float:
    found = EVALUATIONS.search(httpx.get(f"{url}/metrics").text)
    assert found, "the evaluations counter is exported"
    return float(found.group(1))


async def index_changes(db) -> int:
    state: Document | None = await db["suspended_runs_sync"].find_one({"_id": "run-index"})
    return int((state or {}).get("changes", 0))


async def quiet_baseline(url: str, db) -> tuple[int, float]:
    """The index's changes and the evaluations made, read once no change has come for
    half a second (the watcher's reads are a tenth of a second apart): a background change
    just before would otherwise be counted as done and its evaluation as to come."""
    while True:
        changes = await index_changes(db)
        await asyncio.sleep(0.5)
        before = evaluations(url)
        if await index_changes(db) == changes:
            return changes, before


async def test_a_hundred_subscribers_of_one_page_cost_one_evaluation_per_change(
    settings: Settings, snapshots, db
) -> None:
    await snapshots.insert_one(suspended_doc("live-0"))
    with ThreadedServer(settings.model_copy(update={"max_subscriptions_per_caller": 100})) as url:
        sessions = [await open_session(url) for _ in range(100)]
        firsts = await asyncio.gather(*(subscribe(ws, "1", WATCH) for ws in sessions))
        assert all(first["type"] == "next" for first in firsts)

        async def shown(ws, total: int) -> None:
            await page_of(ws, "1", await next_for(ws, "1"), total)

        # Every subscriber holds the one run before the count starts.
        for ws, first in zip(sessions, firsts, strict=True):
            await asyncio.wait_for(page_of(ws, "1", first, 1), 10)
        changes, before = await quiet_baseline(url, db)
        await snapshots.insert_one(suspended_doc("live-1"))
        await asyncio.wait_for(asyncio.gather(*(shown(ws, 2) for ws in sessions)), 10)
        await asyncio.sleep(0.5)  # any later evaluation would be counted too
        made, changed = evaluations(url) - before, await index_changes(db) - changes
        assert changed >= 1
        # At most one per change: changes that land together may share one (a busy machine).
        assert 1 <= made <= changed, f"{made:g} evaluations for {changed} changes of the index"
        for ws in sessions:
            await ws.close()


async def test_a_change_outside_a_callers_scope_pushes_nothing_to_it(
    settings: Settings, snapshots
) -> None:
    await snapshots.insert_one(suspended_doc("mine-0"))
    with ThreadedServer(settings) as url:
        mine = await open_session(url)
        await page_of(mine, "1", await subscribe(mine, "1", WATCH), 1)
        other = await open_session(url)
        others = 'subscription { suspendedRuns(filter: {agentId: "asker"}) { total } }'
        assert (await subscribe(other, "1", others))["type"] == "next"
        await snapshots.insert_one(suspended_doc("theirs-0", agent_id="asker"))
        pushed = await asyncio.wait_for(next_for(other, "1"), 10)
        assert pushed["payload"]["data"]["suspendedRuns"]["total"] == 1
        try:
            unexpected = await asyncio.wait_for(next_for(mine, "1"), 1.0)
        except TimeoutError:
            unexpected = None
        assert unexpected is None, "a page that did not change is not sent again"
        await mine.close()
        await other.close()
