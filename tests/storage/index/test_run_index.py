"""The run index (storage/index/run_index.py): the writes that must not undo each other."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from pymongo.errors import AutoReconnect

from suspended_runs.storage import (
    RUNS_COLLECTION,
    Action,
    Claim,
    Decision,
    RunEntry,
    RunFilter,
    RunIndex,
    RunStatus,
    Runtime,
    ToolCall,
)
from suspended_runs.storage.events.outbox import EventOutbox
from suspended_runs.storage.index.agents import AGENTS_ID
from suspended_runs.storage.types import (
    EVENTS_COLLECTION,
    FOLLOWER_STATE_COLLECTION,
    WEBHOOKS_COLLECTION,
)
from tests.builders import T0, approval, entry, read_for_counts


async def test_a_stale_snapshot_never_undoes_a_recorded_decision(index: RunIndex) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    decision = Decision(Action.APPROVE, "alice", T0 + timedelta(seconds=1))
    assert await index.claims.apply_decision(seen, seen.with_decision("c-1", decision), None)
    assert await index.discovery.put_suspended([seen]) == 0  # the same snapshot, read before
    stored = await index.get("r-1")
    assert stored is not None and stored.tool_calls[0].decision == decision


async def test_a_newer_snapshot_replaces_a_suspended_entry(index: RunIndex) -> None:
    await index.claims.put_started(entry())
    newer = entry(suspended_at=T0 + timedelta(seconds=5), tool_calls=())
    assert await index.discovery.put_suspended([newer]) == 1
    stored = await index.get("r-1")
    assert stored is not None and stored.suspended_at == newer.suspended_at


async def test_only_one_of_two_decisions_on_the_same_version_wins(index: RunIndex) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    a = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    b = seen.with_decision("c-1", Decision(Action.DECLINE, "b", T0))
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    assert await index.claims.apply_decision(seen, a, claim) is True
    assert await index.claims.apply_decision(seen, b, claim) is False


async def test_the_follower_leaves_a_claimed_run_to_its_claim_holder(index: RunIndex) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    assert await index.claims.apply_decision(seen, decided, claim)
    assert await index.discovery.put_suspended([entry(suspended_at=T0 + timedelta(hours=1))]) == 0
    stored = await index.get("r-1")
    assert stored is not None and stored.status is RunStatus.RUNNING
    assert stored.status_at(T0 + timedelta(hours=1)) is RunStatus.STALLED  # lease ran out
    settled = replace(stored, status=RunStatus.COMPLETED, ended_at=T0, claim=None)
    assert await index.claims.settle(settled, "someone else") is False
    assert await index.claims.settle(settled, "me") is True


async def test_a_run_read_claimed_and_put_back_still_ends_with_its_snapshot(
    index: RunIndex,
) -> None:
    # A Mastra call that fails puts the run back as it was read; its snapshot id must
    # survive, or the delete event (which carries only the snapshot's _id) misses it.
    await index.claims.put_started(entry(snapshot_id="snap-1"))
    seen = await index.get("r-1")
    assert seen is not None and seen.snapshot_id == "snap-1"
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    assert await index.claims.apply_decision(seen, decided, claim)
    assert await index.claims.settle(replace(seen, claim=None), "me")
    assert await index.discovery.apply([], deleted=["snap-1"], now=T0) == 1  # its snapshot went


async def test_a_page_asks_the_database_for_about_a_page_of_matches(index: RunIndex) -> None:
    """The embedded server fetches and sorts every match of a query, so a list asks in
    `createdAt` windows: what its queries match, not what the index holds, is its cost."""
    runs = [
        entry(run_id=f"r-{i:04d}", agent_id=f"agent-{i % 4}", created_at=T0 + timedelta(seconds=i))
        for i in range(3000)
    ]
    await index.discovery.put_suspended(runs)
    asked: list[dict[str, object]] = []
    real_find = index.collection.find

    def spying(query: dict[str, object], *args: object, **kwargs: object):
        asked.append(query)
        return real_find(query, *args, **kwargs)

    index.collection.find = spying  # type: ignore[method-assign]
    for run_filter in (RunFilter(), RunFilter(agent_id="agent-2")):
        for _ in range(3):  # the first list learns the density; the next ones use it
            asked.clear()
            page = await index.page(run_filter, limit=21)
            assert [e.run_id for e in page] == [
                e.run_id
                for e in sorted(runs, key=lambda e: e.created_at, reverse=True)
                if run_filter.agent_id in (None, e.agent_id)
            ][:21]
            matched = [await index.collection.count_documents(q) for q in asked]
            assert sum(matched) <= 21 * 4, matched
        assert len(asked) <= 2, asked  # once learned, one window (two at worst)


async def test_an_offset_page_reads_the_runs_it_skips_as_their_sort_keys(
    index: RunIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page 6 of 20 passes 100 runs: they are read as `(createdAt, runId)`, and only the
    page's 20 entries whole; ties at the cut still come in `runId` order."""
    runs = [
        entry(
            run_id=f"r-{i:04d}",
            agent_id=f"agent-{i % 2}",
            created_at=T0 + timedelta(seconds=i // 3),
        )
        for i in range(400)
    ]
    await index.discovery.put_suspended(runs)
    read_whole: list[str] = []
    real = RunEntry.from_document

    def reading(doc: dict[str, object]) -> RunEntry:
        read_whole.append(str(doc["runId"]))
        return real(doc)

    monkeypatch.setattr(RunEntry, "from_document", reading)
    newest_first = sorted(runs, key=lambda e: (-e.created_at.timestamp(), e.run_id))
    for run_filter in (RunFilter(), RunFilter(agent_id="agent-1")):
        expected = [e.run_id for e in newest_first if run_filter.agent_id in (None, e.agent_id)]
        for skip in (1, 100, 101, 190):
            read_whole.clear()
            page = await index.page(run_filter, limit=20, skip=skip)
            assert [e.run_id for e in page] == expected[skip : skip + 20]
            assert read_whole == expected[skip : skip + 20]
    assert await index.page(RunFilter(), limit=20, skip=400) == []


async def test_totals_are_kept_until_the_index_changes_in_any_process(index: RunIndex, db) -> None:
    """A total is counted once per version of the index; every write, through this process
    or another on the same database, makes a new version, so totals stay exact."""
    other = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))  # another instance
    await index.discovery.put_suspended(
        [entry(run_id=f"r-{i}", agent_id=f"a-{i % 2}") for i in range(6)]
    )
    filters = [RunFilter(), RunFilter(agent_id="a-0"), RunFilter(statuses=frozenset(RunStatus))]

    async def exact() -> None:
        for run_filter in filters:
            expected = sum(
                [await db[RUNS_COLLECTION].count_documents(q) for q in run_filter.to_queries(T0)]
            )
            assert await index.count(run_filter, now=T0) == expected
            assert await other.count(run_filter, now=T0) == expected

    await exact()
    asked = read_for_counts(index)
    await index.count(RunFilter(), now=T0)
    assert asked == []  # nothing changed: the total kept
    seen = await other.get("r-0")
    assert seen is not None
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    await other.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    await exact()  # a decision through the other instance
    assert asked
    await index.discovery.put_suspended([entry(run_id="r-new", agent_id="a-0")])
    await exact()
    await other.discovery.end_runs(["r-1", "r-2"], T0)
    await exact()
    await other.writes.delete_many({"runId": "r-3"})  # (only the TTL index deletes)
    await exact()


async def test_time_passing_a_deadline_makes_a_new_version(index: RunIndex) -> None:
    """No write marks a lease running out (RUNNING shows as STALLED) or the retention of a
    finished entry ending: the follower looks for both, deletes expired entries, and makes
    a new version."""
    tick = timedelta(seconds=1)
    await index.claims.put_started(entry(run_id="held"))
    seen = await index.get("held")
    assert seen is not None
    claim = Claim("me", T0, T0 + timedelta(seconds=10))
    await index.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    assert await index.pass_deadlines(T0, tick)  # the first look: whatever happened before
    assert not await index.pass_deadlines(T0 + tick, tick)
    assert await index.pass_deadlines(T0 + 11 * tick, tick)  # the lease ran out
    assert not await index.pass_deadlines(T0 + 12 * tick, tick)
    for run_id in ("done", "kept"):
        await index.claims.put_started(entry(run_id=run_id))
    await index.discovery.end_runs(["done"], T0)  # expires after the retention period
    await index.discovery.end_runs(["kept"], T0 + timedelta(hours=1))
    expiry = T0 + index.retention
    assert not await index.pass_deadlines(expiry - tick, tick)
    assert await index.get("done") is not None
    assert await index.pass_deadlines(expiry + timedelta(minutes=1), tick)  # deleted
    assert await index.get("done") is None and await index.get("kept") is not None
    assert not await index.pass_deadlines(expiry + timedelta(minutes=2), tick)


async def test_expired_entries_go_without_a_ttl_index_and_an_old_one_is_dropped(
    db, index: RunIndex
) -> None:
    """Indexes made by an older version had a TTL index on `expiresAt` (the embedded
    server's TTL monitor decodes every entry each minute): it is dropped, and no index
    leads with `expiresAt`."""
    collection = db[RUNS_COLLECTION]
    await collection.create_index([("expiresAt", 1)], expireAfterSeconds=0)
    await index.ensure_read_indexes()
    keys = [spec["key"][0][0] for spec in (await collection.index_information()).values()]
    assert "expiresAt" not in keys


async def test_put_new_inserts_and_leaves_a_run_written_meanwhile_to_put_suspended(
    index: RunIndex,
) -> None:
    seen = entry(run_id="taken")
    await index.claims.put_started(seen)
    decision = Decision(Action.APPROVE, "alice", T0)
    assert await index.claims.apply_decision(seen, seen.with_decision("c-1", decision), None)
    assert await index.discovery.put_new([entry(run_id="fresh"), entry(run_id="taken")]) == 1
    taken, fresh = await index.get("taken"), await index.get("fresh")
    assert taken is not None and taken.tool_calls[0].decision == decision  # not undone
    assert fresh is not None and fresh.version == 1


async def test_an_upsert_that_meets_an_entry_it_may_not_touch_is_no_change(index) -> None:
    """The follower indexing a snapshot whose run another writer holds as it is: its insert
    meets the unique runId and is left. Nothing changed, so a conditional poll stays 304."""
    held = entry(run_id="held-1")
    await index.claims.put_started(held)
    before = (await index.version()).token
    assert await index.discovery.put_suspended([held]) == 0
    assert (await index.version()).token == before


async def test_agents_are_kept_as_entries_are_written_and_found_in_an_older_index(db) -> None:
    older = db[RUNS_COLLECTION]
    await older.insert_one(entry(run_id="r-old", agent_id="legacy").to_document())  # no list
    index = RunIndex(older, retention=timedelta(days=7))
    await index.ensure_indexes()
    await index.discovery.put_new([entry(run_id="r-1", agent_id="a-new")])
    await index.discovery.put_suspended([entry(run_id="r-2", agent_id="a-upd")])
    await index.claims.put_started(entry(run_id="r-3", agent_id="a-py", runtime=Runtime.PYTHON))
    assert await index.agents() == [
        ("a-new", "mastra"),
        ("a-py", "python"),
        ("a-upd", "mastra"),
        ("legacy", "mastra"),
    ]
    counts = await index.suspended_by_agent(RunFilter())
    assert counts == {k: 1 for k in await index.agents()}


async def test_every_calls_tool_is_kept_and_found_in_an_older_index_as_entries_read_it(
    db,
) -> None:
    older = db[RUNS_COLLECTION]
    odd = entry(run_id="r-old", agent_id="legacy").to_document()
    odd["toolCalls"] = [
        {"toolCallId": "c-1", "toolName": {"not": "text"}, "decision": None},
        {"toolCallId": "c-2", "toolName": 5, "decision": None},
        {"toolCallId": "c-3", "toolName": "x", "decision": None},
    ]
    await older.insert_one(odd)
    agents_before_tools = {"_id": AGENTS_ID, "seen": [{"agentId": "legacy", "runtime": "mastra"}]}
    await db[FOLLOWER_STATE_COLLECTION].insert_one(agents_before_tools)
    index = RunIndex(older, retention=timedelta(days=7))
    await index.ensure_indexes()
    await index.claims.put_started(entry(run_id="r-1", agent_id="a-py", runtime=Runtime.PYTHON))
    seen = await index.get("r-1")
    assert seen is not None
    rolled = replace(seen, tool_calls=(ToolCall("c-9", "rollback", True),))
    assert await index.claims.settle_seen(seen, rolled)  # suspended again, on a new tool
    assert await index.tools() == {
        ("legacy", None),
        ("legacy", "x"),
        ("a-py", "deleteFile"),
        ("a-py", "rollback"),
    }


async def test_a_quiet_agents_page_does_not_walk_the_time_since_its_last_run(
    index: RunIndex,
) -> None:
    """Another agent's runs a week later make the index's newest moment a week after the
    quiet agent's last run: its page starts from its own newest, found by its last page."""
    quiet = [
        entry(run_id=f"q-{i:04d}", agent_id="quiet", created_at=T0 + timedelta(seconds=i))
        for i in range(2000)
    ]
    busy = [
        entry(run_id=f"b-{i}", agent_id="busy", created_at=T0 + timedelta(days=7, seconds=i))
        for i in range(50)
    ]
    await index.discovery.put_suspended(quiet + busy)
    await index.page(RunFilter(agent_id="quiet"), limit=21)  # learns where its runs are
    asked = read_for_counts(index)  # (every find: here, the page's)
    page = await index.page(RunFilter(agent_id="quiet"), limit=21)
    assert [e.run_id for e in page] == [f"q-{i:04d}" for i in range(1999, 1978, -1)]
    assert sum([await index.collection.count_documents(q) for q in asked]) <= 21 * 4, asked


async def test_a_page_that_spans_a_gap_in_time_reads_about_a_page_the_next_time(
    index: RunIndex,
) -> None:
    """5 runs today and 2,000 a week before: a page of 21 holds both sides of the gap,
    and the next page starts where the last one reached, not at a density averaged
    across the week (which made its first window hold all 2,005)."""
    old = [entry(run_id=f"o-{i:04d}", created_at=T0 + timedelta(seconds=i)) for i in range(2000)]
    new = [entry(run_id=f"n-{i}", created_at=T0 + timedelta(days=7, seconds=i)) for i in range(5)]
    await index.discovery.put_suspended(old + new)
    await index.page(RunFilter(), limit=21)
    asked = read_for_counts(index)  # (every find: here, the page's)
    page = await index.page(RunFilter(), limit=21)
    assert [e.run_id for e in page][:6] == ["n-4", "n-3", "n-2", "n-1", "n-0", "o-1999"]
    assert sum([await index.collection.count_documents(q) for q in asked]) <= 21 * 4, asked


async def test_an_event_travels_with_its_change_and_is_relayed_if_its_move_failed(
    index: RunIndex, db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a process leaves it that died (or lost the database) right after its change: the
    event is in the entry, written with the change, and the relay moves it once."""
    outbox = EventOutbox(db[EVENTS_COLLECTION], db[WEBHOOKS_COLLECTION], timedelta(days=1))
    await db[WEBHOOKS_COLLECTION].insert_one({"url": "https://example.com/hook"})
    index.claims.outbox = outbox
    real_add = outbox.add_documents

    async def lost(docs: list[dict[str, object]]) -> int:
        raise AutoReconnect("the database went away")

    monkeypatch.setattr(outbox, "add_documents", lost)
    await index.claims.put_started(entry())
    assert await db[EVENTS_COLLECTION].count_documents({}) == 0
    stored = await db[RUNS_COLLECTION].find_one({"runId": "r-1"})
    assert [e["type"] for e in stored["unannounced"]] == ["run.suspended"]
    assert await index.get("r-1") is not None  # the entry reads as ever

    monkeypatch.setattr(outbox, "add_documents", real_add)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await index.claims.relay_unannounced(later) == (0, True)  # changed before that
    earlier = datetime.now(UTC) - timedelta(minutes=1)
    assert await index.claims.relay_unannounced(earlier) == (1, True)
    assert await index.claims.relay_unannounced(None) == (0, True)
    moved = await db[EVENTS_COLLECTION].find_one({})
    assert moved["type"] == "run.suspended" and moved["runId"] == "r-1"
    assert (await db[RUNS_COLLECTION].find_one({"runId": "r-1"}))["unannounced"] == []


async def test_a_change_that_loses_its_race_leaves_no_event(index: RunIndex, db) -> None:
    outbox = EventOutbox(db[EVENTS_COLLECTION], db[WEBHOOKS_COLLECTION], timedelta(days=1))
    await db[WEBHOOKS_COLLECTION].insert_one({"url": "https://example.com/hook"})
    index.claims.outbox = outbox
    seen = entry()
    await index.claims.put_started(seen)
    a = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    b = seen.with_decision("c-1", Decision(Action.DECLINE, "b", T0))
    assert await index.claims.apply_decision(seen, a, None) is True
    assert await index.claims.apply_decision(seen, b, None) is False
    decided = [e async for e in db[EVENTS_COLLECTION].find({"type": "toolcall.decided"})]
    assert [e["run"]["toolCalls"][0]["decision"]["by"] for e in decided] == ["a"]
    assert await index.claims.relay_unannounced(None) == (0, True)
