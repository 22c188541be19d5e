"""Counts kept and brought up to date (storage/index/counts.py): exact after any write, in any
process, and after a write only the windows holding a changed entry are counted again."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest
from pymongo.errors import AutoReconnect

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
from suspended_runs.storage.index.version import VersionDocument
from tests.builders import T0, approval, entry, read_for_counts, varied_calls

MIDDLE = T0 + timedelta(seconds=150)
FILTERS = [
    RunFilter(),
    RunFilter(agent_id="a-1"),
    RunFilter(resource_id="res-2", agent_id="a-0"),
    RunFilter(from_date=T0 + timedelta(seconds=100), to_date=T0 + timedelta(seconds=250)),
    RunFilter(statuses=frozenset({RunStatus.SUSPENDED, RunStatus.COMPLETED})),
    RunFilter(assigned_to_me=True, assigned=(AssignedBand("a-1", ("sendMail",)),)),
    RunFilter(
        assigned_to_me=True,
        resource_id="res-2",
        assigned=(AssignedBand("a-0", (None, "deleteFile")), AssignedBand("a-2", ("sendMail",))),
    ),
    RunFilter(  # escalated: deleteFile from the start, sendMail too once suspended by MIDDLE
        assigned_to_me=True,
        assigned=(
            AssignedBand("a-1", ("deleteFile",), suspended_after=MIDDLE),
            AssignedBand("a-1", ("deleteFile", "sendMail"), suspended_upto=MIDDLE),
        ),
    ),
    RunFilter(assigned_to_me=True),  # not resolved: nothing
]


@pytest.fixture
def tallied() -> bool:
    """Whether suspended runs are counted by the tallies of every shape once read
    (test_tallies.py): here, by default, the counts kept per filter are what is tested."""
    return False


@pytest.fixture
async def indexes(db, monkeypatch: pytest.MonkeyPatch, tallied: bool) -> tuple[RunIndex, RunIndex]:
    """Two instances' indexes on one database, counting in windows of about 30 matches."""
    monkeypatch.setattr(counts_module, "_CHUNK", 30)
    # Writes a moment apart (the slack for a new primary's clock would take them all in).
    monkeypatch.setattr(counts_module, "_CLOCK_SLACK", timedelta(0))
    monkeypatch.setattr(tallies_module, "_RELOAD_AFTER", 0.0)
    first = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7), tallied=tallied)
    await first.ensure_indexes()
    await first.ensure_read_indexes()  # as the follower does after its first reconcile
    second = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7), tallied=tallied)
    runs = [
        entry(
            run_id=f"r-{i:03d}",
            agent_id=f"a-{i % 3}",
            resource_id=f"res-{i % 5}",
            created_at=T0 + timedelta(seconds=i),
            suspended_at=T0 + timedelta(seconds=i),
            tool_calls=varied_calls(i),
        )
        for i in range(300)
    ]
    await second.discovery.put_suspended(runs)
    return first, second


async def oracle(index: RunIndex, run_filter: RunFilter) -> int:
    queries = run_filter.to_queries(T0)
    return sum([await index.collection.count_documents(q) for q in queries])


async def matched(index: RunIndex, queries: list[dict[str, object]]) -> int:
    return sum([await index.collection.count_documents(q) for q in queries])


async def test_a_decision_recounts_only_the_window_that_holds_its_run(indexes) -> None:
    first, second = indexes
    assert await first.count(RunFilter(), now=T0) == 300
    asked = read_for_counts(first)
    seen = await second.get("r-150")
    assert seen is not None
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    assert await second.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    assert await first.count(RunFilter(), now=T0) == 299
    assert len(asked) == 1 and await matched(first, asked) <= 60, asked  # a window, not 300
    await second.claims.put_started(entry(run_id="r-new", created_at=T0 + timedelta(seconds=400)))
    asked.clear()
    assert await first.count(RunFilter(), now=T0) == 300
    assert len(asked) == 1 and await matched(first, asked) <= 60, asked  # the newest window
    asked.clear()
    assert await first.count(RunFilter(), now=T0) == 300
    assert asked == []  # nothing changed since: kept


@pytest.mark.parametrize("tallied", [False, True])
async def test_counts_stay_exact_through_random_writes_from_two_instances(indexes) -> None:
    first, second = indexes
    chance = random.Random(11)
    for step in range(40):
        writer = chance.choice(indexes)
        await _random_write(writer, chance, step)
        for run_filter in FILTERS:
            expected = await oracle(first, run_filter)
            assert await first.count(run_filter, now=T0) == expected, (step, run_filter)
            assert await second.count(run_filter, now=T0) == expected, (step, run_filter)


async def _random_write(index: RunIndex, chance: random.Random, step: int) -> None:
    run_id = f"r-{chance.randrange(300):03d}"
    seen = await index.get(run_id)
    kind = chance.choice(["decide", "part", "finish", "end", "start", "resuspend", "delete"])
    if kind == "start":
        at = T0 + timedelta(seconds=chance.randrange(-50, 400))
        await index.claims.put_started(entry(run_id=f"n-{step}", agent_id="a-1", created_at=at))
    elif kind == "end":
        await index.discovery.end_runs([run_id], T0)
    elif kind == "delete":
        await index.writes.delete_one({"runId": run_id})  # (only the TTL index deletes)
    elif seen is not None and kind == "decide" and seen.status is RunStatus.SUSPENDED:
        claim = Claim("me", T0, T0 + timedelta(minutes=1))
        await index.claims.apply_decision(seen, seen.with_decision("c-1", approval()), claim)
    elif seen is not None and kind == "part" and seen.status is RunStatus.SUSPENDED:
        # One call of two decided, the run still waits on the other: its pending tools change.
        await index.claims.apply_decision(seen, seen.with_decision("c-1", approval()), None)
    elif seen is not None and kind == "finish":
        await index.claims.settle_seen(seen, seen.finished(RunStatus.COMPLETED, None, T0))
    elif seen is not None and kind == "resuspend":
        later = replace(seen, suspended_at=T0 + timedelta(hours=1 + step))
        await index.discovery.put_suspended([later])


async def test_a_window_across_a_gap_in_time_is_counted_in_pieces(
    indexes,
) -> None:
    """300 runs a second apart and, a day later, 5 more: a walk down from the newest jumps
    the gap in one window holding most of the 300. It is kept as pieces cut where its
    runs are, so a change there reads one piece again."""
    first, second = indexes
    later = [
        entry(run_id=f"late-{i}", created_at=T0 + timedelta(days=1, seconds=i)) for i in range(5)
    ]
    await second.discovery.put_suspended(later)
    assert await first.count(RunFilter(), now=T0) == 305
    asked = read_for_counts(first)
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    read = []
    for run_id, left in (("r-100", 304), ("r-101", 303)):
        asked.clear()
        seen = await second.get(run_id)
        assert seen is not None
        assert await second.claims.apply_decision(
            seen, seen.with_decision("c-1", approval()), claim
        )
        assert await first.count(RunFilter(), now=T0) == left
        read.append(await matched(first, asked))
    assert max(read) <= 30, read  # a piece, not the window of 300 across the gap


async def test_a_recount_that_could_not_be_marked_is_marked_with_the_next_change(
    indexes,
) -> None:
    """An insert whose mark failed with the database leaves entries without a stamp: the
    next change this process makes gives counts a new epoch, so they start afresh."""
    first, _ = indexes
    before = (await first.version()).epoch
    version = VersionDocument(first.state)
    real = first.state.update_one

    async def failing(*args: object, **kwargs: object) -> object:
        raise AutoReconnect("the database went away")

    first.state.update_one = failing
    with pytest.raises(AutoReconnect):
        await version.changed(recount=True)
    first.state.update_one = real
    await version.changed()
    assert (await first.version()).epoch not in (None, before)
