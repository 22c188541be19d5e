"""Reviews, hand-overs and notes' counts on entries (storage/index/reviews.py): each a
conditional write that races correctly, that no other writer undoes, and that versions
and events see."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from suspended_runs.storage import (
    Action,
    Claim,
    Decision,
    Review,
    RunEntry,
    RunIndex,
    RunStatus,
)
from suspended_runs.storage.events.outbox import EventOutbox
from suspended_runs.storage.types import EVENTS_COLLECTION, WEBHOOKS_COLLECTION
from tests.builders import T0, entry


def review(person: str, minutes: float = 15) -> Review:
    now = datetime.now(UTC)
    return Review(f"key:{person}", f"person:{person}", now, now + timedelta(minutes=minutes))


async def under_review(index: RunIndex, minutes: float = 15) -> RunEntry:
    """Run r-1, waiting, as alice started to review it (read again: its version moved)."""
    await index.claims.put_started(entry())
    seen = await index.get("r-1")
    assert seen is not None
    assert await index.reviews.start(seen, review("alice", minutes), announced=True)
    reviewed = await index.get("r-1")
    assert reviewed is not None
    return reviewed


async def test_of_reviewers_starting_at_once_exactly_one_wins(index: RunIndex) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    people = [f"p{i}" for i in range(10)]
    won = await asyncio.gather(
        *(index.reviews.start(seen, review(p), announced=True) for p in people)
    )
    assert sorted(won) == [False] * 9 + [True]
    stored = await index.get("r-1")
    assert stored is not None and stored.review is not None
    assert stored.review.person == f"person:{people[won.index(True)]}"
    assert stored.version == seen.version + 1


async def test_a_decision_that_saw_the_run_before_a_review_started_looks_again(
    index: RunIndex,
) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    assert await index.reviews.start(seen, review("alice"), announced=True)
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "bob", T0))
    assert not await index.claims.apply_decision(seen, decided, None)


async def test_a_review_of_a_run_that_no_longer_waits_is_not_started(index: RunIndex) -> None:
    seen = entry()
    await index.claims.put_started(seen)
    claim = Claim("me", T0, datetime.now(UTC) + timedelta(minutes=1))
    decided = seen.with_decision("c-1", Decision(Action.APPROVE, "bob", T0))
    assert await index.claims.apply_decision(seen, decided, claim)
    taken = await index.get("r-1")
    assert taken is not None and taken.status is RunStatus.RUNNING
    assert not await index.reviews.start(taken, review("alice"), announced=True)


async def test_a_decision_that_takes_the_run_ends_its_review(index: RunIndex) -> None:
    reviewed = await under_review(index)
    assert reviewed.reviewed_at(datetime.now(UTC)) is not None
    claim = Claim("me", T0, datetime.now(UTC) + timedelta(minutes=1))
    decided = reviewed.with_decision("c-1", Decision(Action.APPROVE, "alice", T0))
    assert await index.claims.apply_decision(reviewed, decided, claim)
    stored = await index.get("r-1")
    assert stored is not None and stored.review is None


async def test_writers_that_put_an_entry_whole_keep_its_review_hand_over_and_notes(
    index: RunIndex,
) -> None:
    seen = await under_review(index)
    assert await index.reviews.hand_over(seen, ("person:bob",), T0, end_review=False)
    await index.reviews.count_note("r-1", 1)
    newer = entry(suspended_at=T0 + timedelta(seconds=5))  # the snapshot, written again
    assert await index.discovery.put_suspended([newer]) == 1
    await index.claims.put_started(replace(newer, suspended_at=T0 + timedelta(seconds=9)))
    stored = await index.get("r-1")
    assert stored is not None and stored.review is not None
    assert stored.review.person == "person:alice"
    assert stored.assignees == ("person:bob",)
    assert stored.note_count == 1


async def test_a_hand_over_by_its_reviewer_ends_the_review(index: RunIndex) -> None:
    seen = await under_review(index)
    assert await index.reviews.hand_over(seen, ("group:ops",), T0, end_review=True)
    assert not await index.reviews.hand_over(seen, ("group:sre",), T0, end_review=True)  # stale
    stored = await index.get("r-1")
    assert stored is not None and stored.review is None and stored.assignees == ("group:ops",)


async def test_each_write_gives_a_new_version(index: RunIndex) -> None:
    await index.claims.put_started(entry())
    versions = [(await index.version()).token]
    seen = await index.get("r-1")
    assert seen is not None and await index.reviews.start(seen, review("alice"), announced=True)
    versions.append((await index.version()).token)
    seen = await index.get("r-1")
    assert seen is not None and await index.reviews.end(seen)
    versions.append((await index.version()).token)
    await index.reviews.count_note("r-1", 1)
    versions.append((await index.version()).token)
    assert len(set(versions)) == 4


async def test_a_review_that_ends_by_itself_gives_a_new_version(index: RunIndex) -> None:
    await under_review(index, minutes=0.02)
    start = datetime.now(UTC)
    await index.pass_deadlines(start, timedelta(seconds=5))  # the first look always does
    assert not await index.pass_deadlines(start + timedelta(milliseconds=10), timedelta(seconds=5))
    assert await index.pass_deadlines(start + timedelta(seconds=3), timedelta(seconds=5))


async def test_a_new_reviewer_and_a_hand_over_are_announced_once(index: RunIndex, db) -> None:
    outbox = EventOutbox(db[EVENTS_COLLECTION], db[WEBHOOKS_COLLECTION], timedelta(days=1))
    await db[WEBHOOKS_COLLECTION].insert_one({"url": "https://example.com/hook"})
    index.claims.outbox = outbox
    await index.claims.put_started(entry())
    for announced in (True, False):  # a start, then its reviewer extending it
        seen = await index.get("r-1")
        assert seen is not None
        started = review("alice")
        if seen.review is not None:
            started = replace(started, at=seen.review.at)
        assert await index.reviews.start(seen, started, announced=announced)
    seen = await index.get("r-1")
    assert seen is not None
    assert await index.reviews.hand_over(seen, ("person:bob",), datetime.now(UTC), end_review=True)
    found = [e async for e in db[EVENTS_COLLECTION].find({}, sort=[("at", 1)])]
    assert [e["type"] for e in found] == ["run.suspended", "run.in_review", "run.assigned"]
    assert found[1]["run"]["review"]["person"] == "person:alice"
    assert found[2]["run"]["assignees"] == ["person:bob"]
