"""The tallies of suspended runs (storage/index/tallies.py): once read, every shape and span is
counted from memory, exactly, through writes from any process, epochs and bursts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from suspended_runs.storage import (
    RUNS_COLLECTION,
    AssignedBand,
    Claim,
    RunFilter,
    RunIndex,
    RunStatus,
)
from suspended_runs.storage.index import counts as counts_module
from suspended_runs.storage.index import tallies as tallies_module
from suspended_runs.storage.index.filters import Span
from tests.builders import T0, approval, entry, read_for_counts, varied_calls

AGENTS, RESOURCES, THREADS = 3, 5, 7

MIDDLE = T0 + timedelta(seconds=150)
FILTERS = [
    RunFilter(),
    RunFilter(agent_id="a-1"),
    RunFilter(resource_id="res-2"),
    RunFilter(thread_id="t-3"),
    RunFilter(agent_id="a-0", thread_id="t-3"),
    RunFilter(agent_id="a-2", resource_id="res-4"),
    RunFilter(resource_id="res-1", thread_id="t-6"),
    RunFilter(agent_id="a-9"),
    RunFilter(from_date=T0 + timedelta(seconds=100), to_date=T0 + timedelta(seconds=250)),
    RunFilter(agent_id="a-1", to_date=T0 + timedelta(seconds=99, milliseconds=500)),
    RunFilter(from_date=T0 + timedelta(seconds=100, microseconds=500)),  # after 100 s
    RunFilter(resource_ids=frozenset({"res-0", "res-3"})),
    RunFilter(assigned_to_me=True, assigned=(AssignedBand("a-1", ("sendMail",)),)),
    RunFilter(
        assigned_to_me=True,
        resource_id="res-2",
        assigned=(AssignedBand("a-0", (None, "deleteFile")), AssignedBand("a-2", ("sendMail",))),
    ),
    RunFilter(
        assigned_to_me=True,
        thread_id="t-3",
        assigned=(AssignedBand("a-0", ("deleteFile", "sendMail")),),
    ),
    RunFilter(  # escalated: deleteFile from the start, sendMail too once suspended by MIDDLE
        assigned_to_me=True,
        assigned=(
            AssignedBand("a-1", ("deleteFile",), suspended_after=MIDDLE),
            AssignedBand("a-1", ("deleteFile", "sendMail"), suspended_upto=MIDDLE),
            AssignedBand("a-2", (None,), suspended_after=MIDDLE - timedelta(seconds=50)),
        ),
    ),
]


@pytest.fixture
async def indexes(db, monkeypatch: pytest.MonkeyPatch) -> tuple[RunIndex, RunIndex]:
    """Two instances' indexes on one database: 300 suspended runs a second apart (some
    with no resource or thread, two at one moment) and 20 completed ones."""
    monkeypatch.setattr(counts_module, "_CLOCK_SLACK", timedelta(0))
    monkeypatch.setattr(tallies_module, "_RELOAD_AFTER", 0.0)
    first = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))
    await first.ensure_indexes()
    await first.ensure_read_indexes()  # as the follower does after its first reconcile
    second = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))
    runs = [
        entry(
            run_id=f"r-{i:03d}",
            agent_id=f"a-{i % AGENTS}",
            resource_id=None if i % 11 == 0 else f"res-{i % RESOURCES}",
            thread_id=None if i % 13 == 0 else f"t-{i % THREADS}",
            created_at=T0 + timedelta(seconds=min(i, 299 - 1)),
            suspended_at=None if i % 17 == 0 else T0 + timedelta(seconds=i),
            tool_calls=varied_calls(i),
        )
        for i in range(300)
    ]
    done = [entry(run_id=f"d-{i}", status=RunStatus.COMPLETED) for i in range(20)]
    await second.discovery.put_suspended(runs)
    await second.claims.put_started(done[0])
    for finished in done[1:]:
        await second.claims.put_started(finished)
    return first, second


async def oracle(index: RunIndex, run_filter: RunFilter) -> int:
    queries = [
        {**q, "createdAt": {"$type": "date", **q.get("createdAt", {})}}
        for q in run_filter.to_queries(T0)
    ]
    return sum([await index.collection.count_documents(q) for q in queries])


async def read_tallies(index: RunIndex) -> None:
    """Ask for a count (it starts their read) and wait until the tallies are read."""
    await index.count(RunFilter())
    assert index.tallies is not None
    for _ in range(200):
        if index.tallies.loaded:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the tallies were not read within 10 s")


async def assert_exact(index: RunIndex) -> None:
    for run_filter in FILTERS:
        assert await index.count(run_filter, now=T0) == await oracle(index, run_filter), run_filter


async def test_once_read_every_shape_and_span_is_counted_from_memory(
    indexes, caplog: pytest.LogCaptureFixture
) -> None:
    first, _ = indexes
    caplog.set_level(logging.INFO, logger=tallies_module.__name__)
    await read_tallies(first)
    assert "counts of suspended runs kept in memory: 300 runs" in caplog.text
    asked = read_for_counts(first)
    for run_filter in FILTERS:
        assert await first.count(run_filter, now=T0) == await oracle(first, run_filter), run_filter
    assert asked == []  # no entry read: not a window, nor what changed


async def test_writes_from_another_process_are_counted_from_what_changed(indexes) -> None:
    first, second = indexes
    await read_tallies(first)
    asked = read_for_counts(first)
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    seen = await second.get("r-150")
    assert seen is not None
    assert await second.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    await assert_exact(first)
    both = await second.get("r-146")  # a-2's deleteFile and sendMail: sendMail decided alone
    assert both is not None and len(both.tool_calls) == 2
    assert await second.claims.apply_decision(both, both.with_decision("c-2", approval()), None)
    await assert_exact(first)
    await second.claims.put_started(entry(run_id="r-new", agent_id="a-1", resource_id="res-2"))
    await assert_exact(first)
    await second.discovery.end_runs(["r-007", "r-008"], T0)
    await assert_exact(first)
    later = await second.get("r-150")
    assert later is not None
    await second.claims.settle_seen(later, later.finished(RunStatus.COMPLETED, None, T0))
    await assert_exact(first)
    assert first.tallies is not None and first.tallies.loaded
    assert asked == []


async def test_a_new_epoch_forgets_them_and_they_are_read_again(indexes) -> None:
    """A deletion leaves no stamp: the counts are taken as before until read again."""
    first, second = indexes
    await read_tallies(first)
    await second.writes.delete_one({"runId": "r-010"})
    await assert_exact(first)
    await read_tallies(first)
    await assert_exact(first)


async def test_more_changes_than_they_keep_track_of_are_read_afresh(
    indexes, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = indexes
    caplog.set_level(logging.INFO, logger=tallies_module.__name__)
    monkeypatch.setattr(tallies_module, "_MOST_CHANGED", 3)
    await read_tallies(first)
    await second.discovery.end_runs([f"r-{i:03d}" for i in range(20, 30)], T0)
    await assert_exact(first)
    for _ in range(200):
        if caplog.text.count("counts of suspended runs kept in memory: 290 runs") == 1:
            break
        await asyncio.sleep(0.05)
    assert caplog.text.count("counts of suspended runs kept in memory") == 2, caplog.text
    await assert_exact(first)


async def test_a_malformed_entry_is_left_out_and_the_others_counted(indexes) -> None:
    first, second = indexes
    await second.writes.insert_one(
        {"runId": "bad", "status": "SUSPENDED", "agentId": "a-1", "createdAt": "yesterday"}
    )
    await read_tallies(first)
    await assert_exact(first)


async def test_a_tool_name_that_is_not_text_is_listed_and_counted_as_none(indexes) -> None:
    first, second = indexes
    odd = entry(run_id="odd", agent_id="a-1", created_at=T0 + timedelta(seconds=5)).to_document()
    odd["toolCalls"] = [{"toolCallId": "c-1", "toolName": {"not": "text"}, "decision": None}]
    await second.writes.insert_one(odd)
    unnamed = RunFilter(assigned_to_me=True, assigned=(AssignedBand("a-1", (None,)),))
    listed = [e.run_id for e in await first.page(unnamed, limit=500, now=T0)]
    assert "odd" in listed
    await read_tallies(first)
    assert await first.count(unnamed, now=T0) == len(listed)


async def test_the_process_filling_a_new_index_reads_none_until_it_is_done(db) -> None:
    """Its first reconcile changes the epoch with every batch: what it read would be stale."""
    index = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))
    await index.ensure_indexes()  # a new index, which its first reconcile fills
    await index.discovery.put_suspended([entry()])
    assert await index.count(RunFilter()) == 1
    await asyncio.sleep(0.3)
    assert index.tallies is not None and not index.tallies.loaded
    await index.ensure_read_indexes()
    await read_tallies(index)
    assert await index.count(RunFilter()) == 1


async def test_what_was_written_while_they_were_read_is_applied_before_they_count(
    indexes,
) -> None:
    """A scan is no snapshot. Here one passes r-299's place while it runs (claimed) and
    reaches r-010's after it was claimed, though r-299 was put back meanwhile: counted
    as it was read, no version ever held what it saw. What changed since the version read
    before it is read again before the tallies count."""
    first, second = indexes
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    newest = await second.get("r-299")
    assert newest is not None and await second.claims.take_over(newest, claim)
    real_find = first.collection.find
    first.collection.find = _missing_both(real_find, second, claim)
    tallies = first.tallies
    assert tallies is not None
    loaded_at = await first.version()
    assert await tallies.count({"status": "SUSPENDED"}, Span(), loaded_at) is None  # starts it
    for _ in range(200):
        if tallies.loaded:
            break
        await asyncio.sleep(0.05)
    first.collection.find = real_find
    for run_filter in FILTERS:
        counted = 0
        for shape in run_filter.shapes(T0):
            tallied = await tallies.count(shape, run_filter.span(), loaded_at)
            assert tallied is not None
            counted += tallied
        assert counted == await oracle(first, run_filter), run_filter


def _missing_both(real_find: Any, second: RunIndex, claim: Claim) -> Any:
    """`find`, but the read of every suspended entry is the scan described above."""

    def find(query: dict[str, object], *args: object, **kwargs: object) -> Any:
        if query != {"status": "SUSPENDED"}:
            return real_find(query, *args, **kwargs)

        async def docs() -> AsyncIterator[dict[str, object]]:
            running = await second.get("r-299")
            assert running is not None
            back = replace(running, status=RunStatus.SUSPENDED, claim=None)
            assert await second.claims.settle_seen(running, back)
            oldest = await second.get("r-010")
            assert oldest is not None and await second.claims.take_over(oldest, claim)
            async for doc in real_find(query, *args, **kwargs):
                if doc["runId"] != "r-299":  # its place was passed before it came back
                    yield doc

        return docs()

    return find


async def test_a_version_document_made_anew_starts_them_afresh(indexes) -> None:
    """An operator deleted `suspended_runs_sync`: the next write makes the version anew,
    its `changes` counted from 1 again, and with a new epoch, so nothing kept against the
    old one is taken as newer."""
    first, second = indexes
    await read_tallies(first)
    await first.state.delete_one({"_id": "run-index"})
    seen = await second.get("r-150")
    assert seen is not None
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    assert await second.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    await assert_exact(first)
