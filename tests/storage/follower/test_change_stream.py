"""Following by change stream (storage/follower/change_stream.py): a restart is ready only
once what was written while it was down is listed, and an idle stream keeps its token
fresh, so a restart after a quiet spell resumes instead of reading everything again."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from suspended_runs.server import Settings, create_app
from suspended_runs.storage import FOLLOWER_STATE_COLLECTION
from suspended_runs.storage.follower import position
from tests.helpers import eventually, make_gql, running_app, suspended_doc

TOTAL = "{ suspendedRuns(first: 1) { total } }"


async def test_a_restart_is_ready_only_once_what_was_written_while_down_is_listed(
    settings: Settings, snapshots: Any
) -> None:
    streamed = settings.model_copy(update={"sync_mode": "change_stream"})
    async with running_app(streamed):
        pass  # a first start: the index made, a token kept
    template = suspended_doc("template")
    await snapshots.insert_many(
        [{**template, "run_id": f"down-{i:04d}"} for i in range(3000)]  # while it is down
    )
    said: list[dict[str, Any]] = []
    async with LifespanManager(create_app(streamed)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            async with asyncio.timeout(120):
                while (ready := await client.get("/readyz")).status_code != 200:
                    said.append(ready.json())
                    await asyncio.sleep(0.02)
            total = (await make_gql(client)(TOTAL))["data"]["suspendedRuns"]["total"]
    assert total == 3000  # ready means caught up: every run written while down is listed
    assert {body["status"] for body in said} <= {"starting", "catching_up"}
    for body in said:
        if body["status"] == "catching_up":
            behind = body["behindSeconds"]
            assert behind is None or behind >= 0


async def test_a_long_stretch_of_other_documents_does_not_make_a_restart_ready_early(
    settings: Settings, snapshots: Any
) -> None:
    """Mastra's `executionWorkflow` siblings (not runs) written while down, then one run:
    the stream's reads over the siblings are not taken for the end of what it has to give."""
    streamed = settings.model_copy(update={"sync_mode": "change_stream"})
    async with running_app(streamed):
        pass
    sibling = suspended_doc("template", workflow_name="executionWorkflow")
    await snapshots.insert_many([{**sibling, "run_id": f"sibling-{i:04d}"} for i in range(1500)])
    await snapshots.insert_one(suspended_doc("the-run"))
    async with LifespanManager(create_app(streamed)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            async with asyncio.timeout(120):
                while (await client.get("/readyz")).status_code != 200:
                    await asyncio.sleep(0.02)
            total = (await make_gql(client)(TOTAL))["data"]["suspendedRuns"]["total"]
    assert total == 1


async def test_an_idle_stream_saves_a_token_that_moves_on_with_the_database(
    settings: Settings, start_app: Any, db: Any, monkeypatch: Any
) -> None:
    """No snapshot changes, only other collections: the token kept still moves on (the
    stream's post-batch token), so it stays within the oplog."""
    monkeypatch.setattr(position, "_TOKEN_SAVE_INTERVAL", 0.2)
    await start_app(settings.model_copy(update={"sync_mode": "change_stream"}))
    state = db[FOLLOWER_STATE_COLLECTION]
    first = await state.find_one({"_id": "snapshot-change-stream"})
    assert first is not None and first.get("resumeToken") is not None
    await db["elsewhere"].insert_many([{"n": i} for i in range(20)])

    async def moved_on() -> bool:
        kept = await state.find_one({"_id": "snapshot-change-stream"})
        return kept is not None and kept["resumeToken"] != first["resumeToken"]

    await eventually(moved_on, within=10)
