"""The snapshot follower (storage/follower/follower.py), watched through the API while the
app runs."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from suspended_runs.server import EmbeddedMongoDB, Settings
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.storage import FOLLOWER_STATE_COLLECTION
from suspended_runs.storage.follower.reconcile import Reconciler
from tests.helpers import (
    Server,
    eventually,
    listed,
    load_snapshots,
    make_gql,
    running_app,
    status_of,
    suspended_doc,
)
from tests.slow_agents import executions


@pytest.mark.parametrize("mode", ["change_stream", "poll"])
async def test_a_written_then_deleted_snapshot_shows_and_leaves_within_2s(
    snapshots, settings: Settings, start_app, mode: str
) -> None:
    client = await start_app(settings.model_copy(update={"sync_mode": mode}))
    gql = make_gql(client)
    assert (await client.get("/readyz")).json()["sync"] == mode
    await snapshots.insert_one(suspended_doc("live-1"))
    appeared = await eventually(lambda: listed(gql, "live-1"), within=2)
    await snapshots.delete_one({"run_id": "live-1"})

    async def gone() -> bool:
        return not await listed(gql, "live-1")

    left = await eventually(gone, within=2)
    assert await status_of(gql, "live-1") == "ENDED"  # kept for the retention period
    assert 0 <= appeared < 2 and 0 <= left < 2  # the figures the note quotes


@pytest.mark.parametrize("mode", ["change_stream", "poll"])
async def test_a_run_that_stops_being_suspended_ends_and_a_new_suspension_returns(
    snapshots, settings: Settings, start_app, mode: str
) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": mode})))
    await snapshots.insert_one(suspended_doc("flip-1"))
    await eventually(lambda: listed(gql, "flip-1"), within=2)
    await snapshots.update_one({"run_id": "flip-1"}, {"$set": {"snapshot.status": "running"}})

    async def ended() -> bool:
        return await status_of(gql, "flip-1") == "ENDED"

    await eventually(ended, within=2)
    assert not await listed(gql, "flip-1")
    later = suspended_doc("flip-1")["updatedAt"].replace(year=2027)
    await snapshots.update_one(
        {"run_id": "flip-1"}, {"$set": {"snapshot.status": "suspended", "updatedAt": later}}
    )
    await eventually(lambda: listed(gql, "flip-1"), within=2)


async def test_startup_reconcile_ends_runs_whose_snapshot_went_while_down(
    snapshots, settings: Settings, start_app
) -> None:
    await snapshots.insert_many([suspended_doc("keep"), suspended_doc("drop")])
    async with running_app(settings) as client:
        await eventually(lambda: listed(make_gql(client), "drop"), within=2)
    await snapshots.delete_one({"run_id": "drop"})
    await snapshots.insert_one(suspended_doc("added-while-down"))
    gql = make_gql(await start_app(settings))
    assert await listed(gql, "keep")
    assert await listed(gql, "added-while-down")
    assert await status_of(gql, "drop") == "ENDED"


async def test_malformed_snapshots_are_skipped_and_logged_and_never_fail_a_query(
    snapshots, settings: Settings, start_app, caplog
) -> None:
    good = suspended_doc("good")
    broken = [
        suspended_doc("bad-json", snapshot="{not json"),
        suspended_doc("bad-type", snapshot=["a", "list"]),
        suspended_doc("bad-date", createdAt="yesterday"),
    ]
    await snapshots.insert_many([good, *broken])
    # Extraction (and its log line) lives beside the settling of runs in doubt, which uses it.
    with caplog.at_level(logging.WARNING, logger="suspended_runs.storage.follower.settling"):
        gql = make_gql(await start_app(settings))
        await snapshots.insert_one(suspended_doc("bad-live", snapshot="{still not json"))
        await snapshots.insert_one(suspended_doc("good-live"))
        await eventually(lambda: listed(gql, "good-live"), within=2)
    body = await gql("{ suspendedRuns { total runs { runId } } }")
    assert {r["runId"] for r in body["data"]["suspendedRuns"]["runs"]} == {"good", "good-live"}
    skipped = [
        r for r in caplog.records if r.getMessage() == "skipped a malformed snapshot document"
    ]
    assert len(skipped) == 4
    assert all(getattr(r, "reason", "") for r in skipped)
    assert "not json" not in caplog.text  # a reason, never the document's content


async def test_the_change_stream_resume_token_is_stored(
    db, snapshots, settings: Settings, start_app
) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": "change_stream"})))
    await snapshots.insert_one(suspended_doc("tok-1"))
    await eventually(lambda: listed(gql, "tok-1"), within=2)
    state = await db[FOLLOWER_STATE_COLLECTION].find_one({"_id": "snapshot-change-stream"})
    assert state is not None and state["resumeToken"]


async def test_fixture_documents_reconcile_to_one_entry_per_run(
    snapshots, settings: Settings, start_app
) -> None:
    await snapshots.insert_many(load_snapshots())
    gql = make_gql(await start_app(settings))
    body = await gql("{ suspendedRuns { total runs { runId agentId } } }")
    page = body["data"]["suspendedRuns"]
    # Six Mastra runs, each with an `executionWorkflow` sibling that is not a run of its own.
    assert page["total"] == 6
    assert len({r["runId"] for r in page["runs"]}) == 6


async def test_a_stale_resume_token_means_one_reconcile_not_two(
    db, snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    await db[FOLLOWER_STATE_COLLECTION].insert_one(
        {"_id": "snapshot-change-stream", "resumeToken": {"_data": "00"}}  # not resumable
    )
    calls = 0
    real = Reconciler.reconcile

    async def counting(self: Reconciler) -> object:
        nonlocal calls
        calls += 1
        return await real(self)

    monkeypatch.setattr(Reconciler, "reconcile", counting)
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": "change_stream"})))
    assert calls == 1
    await snapshots.insert_one(suspended_doc("after-stale-token"))
    await eventually(lambda: listed(gql, "after-stale-token"), within=2)


def test_a_database_outage_loses_no_decision_and_readyz_recovers(
    server: Server, tmp_path: Path
) -> None:
    """The embedded MongoDB stopped and started again, on the same data and port, while
    runs are being decided: what was applied stays; what was asked meanwhile is refused
    (not lost silently) and succeeds once the database is back; /readyz follows."""
    data, port = tmp_path / "mongodb", free_port()
    log = tmp_path / "executions.jsonl"
    database = EmbeddedMongoDB(data, port=port)
    database.start()
    server.env.update(
        {
            "MONGODB_URI": database.uri,
            "AGENTS": "tests.slow_agents:agents",
            "SLOW_AGENT_LOG": str(log),
        }
    )
    try:
        server.start()
        before, during = (_start_slow(server, f"sleep 0 /tmp/{name}") for name in ("b", "d"))
        assert _approve(server, before) == "COMPLETED"
        database.stop()
        _wait_for(lambda: httpx.get(f"{server.url}/readyz").status_code == 503)
        _refused_while_down(server, during)
        database = EmbeddedMongoDB(data, port=port)
        database.start()
        _wait_for(lambda: httpx.get(f"{server.url}/readyz").status_code == 200, within=30)
        assert server.query(STATUS_OF, {"r": before})["data"]["agentRun"]["status"] == "COMPLETED"
        assert _approve(server, during) == "COMPLETED"
        assert [executions(log, f"/tmp/{name}") for name in ("b", "d")] == [1, 1]
    finally:
        if server.process is not None:
            server.stop()
        database.stop()


START_SLOW = """mutation($p: String!) { startRun(input: {agentId: "slow", prompt: $p}) {
  ... on RunStarted { run { runId } } } }"""
APPROVE_BY_ID = """mutation($r: ID!) { approveToolCall(input: {runId: $r}) {
  __typename ... on RunDecided { run { status } } } }"""
STATUS_OF = "query($r: ID!) { agentRun(runId: $r) { status } }"


def _refused_while_down(server: Server, run_id: str) -> None:
    """A decision asked while the database is down: refused, and the caller told so."""
    refused = httpx.post(
        f"{server.url}/graphql",
        json={"query": APPROVE_BY_ID, "variables": {"r": run_id}},
        timeout=30,
    )
    assert refused.status_code == 200 and "RunDecided" not in refused.text
    error = refused.json()["errors"][0]  # a cue to try again, not a masked internal error
    assert error["extensions"] == {"code": "DATABASE_UNAVAILABLE", "retryAfterSeconds": 5}


def _start_slow(server: Server, prompt: str) -> str:
    run_id: str = server.query(START_SLOW, {"p": prompt})["data"]["startRun"]["run"]["runId"]
    return run_id


def _approve(server: Server, run_id: str) -> str:
    result = server.query(APPROVE_BY_ID, {"r": run_id})["data"]["approveToolCall"]
    assert result["__typename"] == "RunDecided", result
    status: str = result["run"]["status"]
    return status


def _wait_for(check: Callable[[], bool], within: float = 20) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.1)


async def test_polling_misses_no_change_from_a_writer_whose_clock_is_behind(
    snapshots, settings: Settings, start_app
) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": "poll"})))
    now = datetime.now(UTC)
    await snapshots.insert_one(suspended_doc("on-time", updatedAt=now))
    await eventually(lambda: listed(gql, "on-time"), within=2)
    behind = now - timedelta(seconds=60)  # another writer, its clock a minute slow
    await snapshots.insert_one(suspended_doc("late-clock", createdAt=behind, updatedAt=behind))
    await eventually(lambda: listed(gql, "late-clock"), within=2)
    await snapshots.update_one(  # and its next write: the run ended, still on its slow clock
        {"run_id": "late-clock"},
        {"$set": {"snapshot.status": "success", "updatedAt": behind + timedelta(seconds=1)}},
    )
    await eventually(lambda: _gone(gql, "late-clock"), within=2)


async def _gone(gql: Any, run_id: str) -> bool:
    return not await listed(gql, run_id)


# -- restarts in O(changes), a first start in bounded memory, projected reads -----------


def _counting(monkeypatch, owner: type, name: str) -> list[int]:
    """Counts calls of owner.<name> (one element per call)."""
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(self: object, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


async def test_a_restart_whose_token_resumes_reads_no_snapshot_again(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    streamed = settings.model_copy(update={"sync_mode": "change_stream"})
    await snapshots.insert_many([suspended_doc(f"old-{i}") for i in range(5)])
    async with running_app(streamed) as client:
        await eventually(lambda: listed(make_gql(client), "old-4"), within=2)
    from suspended_runs.storage.snapshots.reader import SnapshotReader

    reconciles = _counting(monkeypatch, Reconciler, "reconcile")
    catch_ups = _counting(monkeypatch, Reconciler, "catch_up")
    reads = _counting(monkeypatch, SnapshotReader, "read")  # no snapshot read, whole or reduced
    await snapshots.insert_one(suspended_doc("while-down"))
    await snapshots.delete_one({"run_id": "old-0"})
    gql = make_gql(await start_app(streamed))
    assert (len(reconciles), len(catch_ups), len(reads)) == (0, 0, 0)
    await eventually(lambda: listed(gql, "while-down"), within=2)  # replayed by the stream

    async def ended() -> bool:
        return await status_of(gql, "old-0") == "ENDED"

    await eventually(ended, within=2)


async def test_a_change_made_while_a_restart_replays_is_applied_and_the_last_token_is_past_it(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    """A restart reads its resumed stream up to now, then follows one resumed where it
    ended: a change made during the read is applied, and the token kept last is past it."""
    from suspended_runs.storage.follower.change_stream import ChangeStreamFollower
    from suspended_runs.storage.follower.position import FollowPosition

    streamed = settings.model_copy(update={"sync_mode": "change_stream"})
    async with running_app(streamed) as client:
        await snapshots.insert_one(suspended_doc("before"))
        await eventually(lambda: listed(make_gql(client), "before"), within=2)
    apply_changes, save_token = ChangeStreamFollower._apply_changes, FollowPosition.save
    kept: list[Any] = []

    async def writing_during(self: ChangeStreamFollower, batch: list[Any]) -> None:
        await apply_changes(self, batch)
        replayed = [(change.get("fullDocument") or {}).get("run_id") for change in batch]
        if "while-down" in replayed:
            await snapshots.insert_one(suspended_doc("during-replay"))

    async def keeping(self: FollowPosition, token: Any) -> None:
        kept.append(token)
        await save_token(self, token)

    monkeypatch.setattr(ChangeStreamFollower, "_apply_changes", writing_during)
    monkeypatch.setattr(FollowPosition, "save", keeping)
    await snapshots.insert_one(suspended_doc("while-down"))
    gql = make_gql(await start_app(streamed))
    await eventually(lambda: listed(gql, "during-replay"), within=2)
    assert await listed(gql, "while-down")

    async def last_kept_resumes_past_all() -> bool:
        async with await snapshots.watch(resume_after=kept[-1], max_await_time_ms=100) as resumed:
            return await resumed.try_next() is None

    await eventually(last_kept_resumes_past_all, within=2)


async def test_every_token_kept_after_a_first_start_is_past_what_it_wrote(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    """A resume reads the oplog on from its token: one kept from before a first start's own
    writes makes the next restart read them all again (seconds at 100,000 runs on the
    embedded server). A change made during the first start is applied, not lost."""
    from suspended_runs.storage.follower.position import FollowPosition

    reconcile, save_token = Reconciler.reconcile, FollowPosition.save
    kept: list[Any] = []

    async def writing_during(self: Reconciler) -> object:
        report = await reconcile(self)
        await snapshots.insert_one(suspended_doc("during"))  # after the index's own writes
        return report

    async def keeping(self: FollowPosition, token: Any) -> None:
        kept.append(token)
        await save_token(self, token)

    monkeypatch.setattr(Reconciler, "reconcile", writing_during)
    monkeypatch.setattr(FollowPosition, "save", keeping)
    await snapshots.insert_many([suspended_doc(f"run-{i}") for i in range(3)])
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": "change_stream"})))
    await eventually(lambda: listed(gql, "during"), within=2)
    assert kept
    for token in kept:
        async with await snapshots.watch(resume_after=token, max_await_time_ms=100) as resumed:
            assert await resumed.try_next() is None


async def test_a_stream_busy_after_a_first_start_goes_on_and_loses_nothing(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    """Changes still coming when the first start is caught up (it has applied a change
    written after it began, and the stream is not idle): the stream goes on from there, and
    none of the rest is missed."""
    reconcile = Reconciler.reconcile

    async def writing_during(self: Reconciler) -> object:
        report = await reconcile(self)
        await snapshots.insert_many([suspended_doc("during-1"), suspended_doc("during-2")])
        return report

    monkeypatch.setattr(Reconciler, "reconcile", writing_during)
    gql = make_gql(await start_app(settings.model_copy(update={"sync_mode": "change_stream"})))
    await eventually(lambda: listed(gql, "during-2"), within=2)
    assert await listed(gql, "during-1")


async def test_a_token_that_does_not_resume_catches_up_from_the_high_water_mark(
    db, snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    streamed = settings.model_copy(update={"sync_mode": "change_stream"})
    await snapshots.insert_many([suspended_doc(f"run-{i}") for i in range(4)])
    async with running_app(streamed) as client:
        await eventually(lambda: listed(make_gql(client), "run-3"), within=2)
    assert await _by_updated_at(snapshots) == []  # a change stream needed none
    state = db[FOLLOWER_STATE_COLLECTION]
    saved = await state.find_one({"_id": "snapshot-change-stream"})
    assert saved is not None
    assert saved["highWater"].replace(tzinfo=None) == suspended_doc("x")["updatedAt"]
    await state.update_one(
        {"_id": "snapshot-change-stream"}, {"$set": {"resumeToken": {"_data": "00"}}}
    )
    later = saved["highWater"] + timedelta(minutes=30)
    await snapshots.insert_one(suspended_doc("new", updatedAt=later))
    await snapshots.delete_one({"run_id": "run-0"})
    await snapshots.update_one(
        {"run_id": "run-2"}, {"$set": {"snapshot.status": "success", "updatedAt": later}}
    )
    reconciles = _counting(monkeypatch, Reconciler, "reconcile")
    catch_ups = _counting(monkeypatch, Reconciler, "catch_up")
    gql = make_gql(await start_app(streamed))
    assert (len(reconciles), len(catch_ups)) == (0, 1)
    assert await _by_updated_at(snapshots) == ["suspended_runs_updatedAt"]  # made for the catch-up
    assert await listed(gql, "new") and await listed(gql, "run-1")
    assert await status_of(gql, "run-0") == "ENDED"  # its snapshot went
    assert await status_of(gql, "run-2") == "ENDED"  # its snapshot left the suspended state


async def _by_updated_at(snapshots: Any) -> list[str]:
    """The snapshot indexes led by `updatedAt`, by name."""
    indexes = await snapshots.index_information()
    return sorted(name for name, spec in indexes.items() if spec["key"][0][0] == "updatedAt")


async def test_polling_reads_by_an_updated_at_index_and_makes_none_beside_mastras(
    snapshots, settings: Settings
) -> None:
    polled = settings.model_copy(update={"sync_mode": "poll"})
    await snapshots.insert_one(suspended_doc("run-0"))
    async with running_app(polled) as client:
        await eventually(lambda: listed(make_gql(client), "run-0"), within=2)
    assert await _by_updated_at(snapshots) == ["suspended_runs_updatedAt"]
    await snapshots.drop_indexes()
    await snapshots.create_index([("updatedAt", -1)])  # what Mastra makes where retention is set
    async with running_app(polled) as client:
        await eventually(lambda: listed(make_gql(client), "run-0"), within=2)
    assert await _by_updated_at(snapshots) == ["updatedAt_-1"]


async def test_a_restart_just_after_a_first_start_in_poll_mode_reads_only_changes(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    polled = settings.model_copy(update={"sync_mode": "poll"})
    await snapshots.insert_many([suspended_doc(f"run-{i}") for i in range(3)])
    async with running_app(polled):
        pass  # stopped as soon as it is ready: no poll has run yet
    reconciles = _counting(monkeypatch, Reconciler, "reconcile")
    catch_ups = _counting(monkeypatch, Reconciler, "catch_up")
    gql = make_gql(await start_app(polled))
    assert (len(reconciles), len(catch_ups)) == (0, 1)
    assert await listed(gql, "run-2")


async def test_a_first_start_reports_its_progress_in_readyz(
    snapshots, settings: Settings, monkeypatch
) -> None:
    import asyncio

    from asgi_lifespan import LifespanManager

    from suspended_runs.server import create_app
    from suspended_runs.storage.index.discovery import Discovery

    rng = random.Random(7)  # random ids as Mastra's, the same every run
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(1200)]
    await snapshots.insert_many([suspended_doc(run_id) for run_id in ids])
    real = Discovery.put_new

    async def slow(self: Discovery, entries: list[Any]) -> int:
        await asyncio.sleep(0.3)
        return await real(self, entries)

    monkeypatch.setattr(Discovery, "put_new", slow)
    seen: list[dict[str, Any]] = []
    async with LifespanManager(create_app(settings)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            while (answer := await client.get("/readyz")).status_code != 200:
                seen.append(answer.json())
                await asyncio.sleep(0.05)
            body = await client.post("/graphql", json={"query": "{ suspendedRuns { total } }"})
    assert body.json()["data"]["suspendedRuns"]["total"] == 1200
    starting = [s for s in seen if s.get("indexed")]
    assert starting and all(s["status"] == "starting" for s in starting)
    assert all(s["of"] is None or s["of"] >= s["indexed"] for s in starting)
    assert any(900 <= (s["of"] or 0) <= 1500 for s in starting)  # estimated as it goes
    assert any(0 < s["indexed"] < 1200 for s in starting)


async def test_the_follower_reads_only_what_extraction_needs(db, snapshots) -> None:
    """Projected documents (a 1 MB snapshot travels as a few hundred bytes) give the very
    entries whole ones give: every fixture, as an object and as a JSON string."""
    from bson import BSON, json_util

    from suspended_runs.storage import extract_entry
    from suspended_runs.storage.snapshots.extraction import SMALL_SNAPSHOT_BYTES
    from suspended_runs.storage.snapshots.reader import SnapshotReader

    docs = load_snapshots() + load_snapshots("durable_snapshots.extjson")
    strings = [
        {**{k: v for k, v in d.items() if k != "_id"}, "run_id": f"{d['run_id']}-s"}
        | {"snapshot": json_util.dumps(d["snapshot"])}
        for d in docs
    ]
    bloated = suspended_doc("big")
    steps = bloated["snapshot"]["context"]
    steps["executionWorkflow"]["suspendPayload"]["__streamState"]["messageList"]["messages"] = [
        {"role": "user", "content": "x" * 1000}
    ] * 1000
    await snapshots.insert_many([*docs, *strings, bloated])
    reader = SnapshotReader(snapshots, reducing=True)  # what a catch-up and a poll read
    projected = {d["_id"]: d async for d in reader.read([{}])}
    whole = {d["_id"]: d async for d in snapshots.find({})}
    assert projected.keys() <= whole.keys()
    for key, doc in whole.items():
        entry = extract_entry(doc)
        assert entry is None or extract_entry(projected[key]) == entry, doc["run_id"]
    assert len(json_util.dumps(projected[bloated["_id"]])) < 5_000 < len(json_util.dumps(bloated))
    small = [key for key, doc in whole.items() if len(BSON.encode(doc)) <= SMALL_SNAPSHOT_BYTES]
    assert len(small) == len(whole) - 1  # read as they are: cheaper than reducing them
    assert all(projected[key] == whole[key] for key in small if key in projected)


async def test_a_large_collection_is_read_in_chunks_that_miss_no_run(
    snapshots, settings: Settings, start_app, monkeypatch
) -> None:
    """A reconcile reads by ranges of run_id (the embedded server decodes every match of a
    query before answering), as narrow as its density asks: any id falls in one."""
    from bson import json_util

    from suspended_runs.storage.follower import ranges as run_id_ranges

    monkeypatch.setattr(run_id_ranges, "_MATCHES_PER_QUERY", 1)  # many narrow ranges
    ids = ["00a", "0", "-x", "Zed", "9f-1", "a0", "ff", "ffff", "g-run", "~", "", "é"]
    docs = [suspended_doc(run_id or "x") | {"run_id": run_id} for run_id in ids]
    settled = suspended_doc("settled")
    settled["snapshot"]["status"] = "success"
    stored_as_string = suspended_doc("as-string")
    stored_as_string["snapshot"] = json_util.dumps(stored_as_string["snapshot"])
    await snapshots.insert_many([*docs, settled, stored_as_string, *load_snapshots()])
    gql = make_gql(await start_app(settings))
    body = await gql("{ suspendedRuns(perPage: 100) { total runs { runId } } }")
    listed_ids = {r["runId"] for r in body["data"]["suspendedRuns"]["runs"]}
    assert {run_id for run_id in ids if run_id} | {"as-string"} <= listed_ids
    assert "settled" not in listed_ids
    assert body["data"]["suspendedRuns"]["total"] == len(ids) - 1 + 1 + 6


async def test_a_new_index_is_filled_first_and_given_its_read_indexes_after(db, snapshots) -> None:
    """Inserts into a new index pay only `_id` and `runId` (the embedded server pays every
    index on each insert); the first reconcile makes the rest once it has filled it."""
    from suspended_runs.storage import RunIndex, SnapshotFollower

    await snapshots.insert_many(load_snapshots())
    index = RunIndex(db["index"], timedelta(days=1))
    sync = SnapshotFollower(snapshots, index, db["state"])
    await index.ensure_indexes()
    assert sorted(await db["index"].index_information()) == ["_id_", "runId_1"]
    written: list[list[str]] = []
    put_new = index.discovery.put_new

    async def put_new_seeing_indexes(entries: Any) -> int:
        written.append(sorted(await db["index"].index_information()))
        return await put_new(entries)

    index.discovery.put_new = put_new_seeing_indexes  # type: ignore[method-assign]
    report = await sync.reconcile()
    assert report.written == 6 and written and all(w == ["_id_", "runId_1"] for w in written)
    made = await db["index"].index_information()
    # _id, runId, snapshotId, changedAt, the lists' 6, and the sparse review and assignees
    assert len(made) == 12 and "snapshotId_1" in made
    restarted = RunIndex(db["index"], timedelta(days=1))
    await db["index"].drop_index("snapshotId_1")
    await restarted.ensure_indexes()  # an index with entries gets them all before reading
    assert await db["index"].index_information() == made
