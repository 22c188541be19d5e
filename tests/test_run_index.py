"""The run index (storage/run_index.py): the writes that must not undo each other."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from suspended_runs.storage import (
    RUNS_COLLECTION,
    Action,
    Claim,
    Decision,
    RunEntry,
    RunIndex,
    RunStatus,
    Runtime,
    ToolCall,
)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def entry(**changes: object) -> RunEntry:
    base = RunEntry(
        run_id="r-1",
        workflow_name="agentic-loop",
        runtime=Runtime.MASTRA,
        agent_id="approver",
        status=RunStatus.SUSPENDED,
        created_at=T0,
        suspended_at=T0,
        tool_calls=(ToolCall("c-1", "deleteFile", True, args={"path": "/a"}),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
async def index(db) -> RunIndex:
    runs = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))
    await runs.ensure_indexes()
    return runs


async def test_a_stale_snapshot_never_undoes_a_recorded_decision(index: RunIndex) -> None:
    seen = entry()
    await index.put_started(seen)
    decision = Decision(Action.APPROVE, "alice", T0 + timedelta(seconds=1))
    assert await index.apply_decision(seen, seen.with_decision("c-1", decision), None)
    assert await index.put_suspended([seen]) == 0  # the same snapshot, read before
    stored = await index.get("r-1")
    assert stored is not None and stored.tool_calls[0].decision == decision


async def test_a_newer_snapshot_replaces_a_suspended_entry(index: RunIndex) -> None:
    await index.put_started(entry())
    newer = entry(suspended_at=T0 + timedelta(seconds=5), tool_calls=())
    assert await index.put_suspended([newer]) == 1
    stored = await index.get("r-1")
    assert stored is not None and stored.suspended_at == newer.suspended_at


async def test_only_one_of_two_decisions_on_the_same_version_wins(index: RunIndex) -> None:
    seen = entry()
    await index.put_started(seen)
    a = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    b = seen.with_decision("c-1", Decision(Action.DECLINE, "b", T0))
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    assert await index.apply_decision(seen, a, claim) is True
    assert await index.apply_decision(seen, b, claim) is False


async def test_the_follower_leaves_a_claimed_run_to_its_claim_holder(index: RunIndex) -> None:
    seen = entry()
    await index.put_started(seen)
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    assert await index.apply_decision(seen, decided, claim)
    assert await index.put_suspended([entry(suspended_at=T0 + timedelta(hours=1))]) == 0
    stored = await index.get("r-1")
    assert stored is not None and stored.status is RunStatus.RUNNING
    assert stored.status_at(T0 + timedelta(hours=1)) is RunStatus.STALLED  # lease ran out
    settled = replace(stored, status=RunStatus.COMPLETED, ended_at=T0, claim=None)
    assert await index.settle(settled, "someone else") is False
    assert await index.settle(settled, "me") is True


async def test_a_run_read_claimed_and_put_back_still_ends_with_its_snapshot(
    index: RunIndex,
) -> None:
    # A Mastra call that fails puts the run back as it was read; its snapshot id must
    # survive, or the delete event (which carries only the snapshot's _id) misses it.
    await index.put_started(entry(snapshot_id="snap-1"))
    seen = await index.get("r-1")
    assert seen is not None and seen.snapshot_id == "snap-1"
    claim = Claim("me", T0, T0 + timedelta(minutes=1))
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "a", T0))
    assert await index.apply_decision(seen, decided, claim)
    assert await index.settle(replace(seen, claim=None), "me")
    assert await index.end_by_snapshot("snap-1", T0) == 1
