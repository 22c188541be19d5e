"""Keyset cursors and filters (storage/index/filters.py), and every list the run index answers."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pymongo import AsyncMongoClient

from suspended_runs.storage import (
    RUNS_COLLECTION,
    AssignedBand,
    Claim,
    Cursor,
    Document,
    InvalidCursor,
    Review,
    ReviewState,
    RunEntry,
    RunFilter,
    RunIndex,
    RunStatus,
    Runtime,
    ToolCall,
)
from tests.builders import approval


def test_cursor_round_trips() -> None:
    cursor = Cursor(datetime(2026, 11, 30, 6, 54, 0, 816000, tzinfo=UTC), "run-1")
    assert Cursor.decode(cursor.encode()) == cursor


@pytest.mark.parametrize("text", ["", "!!!", "bm90IGpzb24", "WzEsMl0", "WyJhIiwiYiJd"])
def test_foreign_cursors_are_refused(text: str) -> None:
    with pytest.raises(InvalidCursor):
        Cursor.decode(text)


def test_filter_query_uses_only_given_fields() -> None:
    assert RunFilter().to_query() == {"status": "SUSPENDED"}
    query = RunFilter(agent_id="a", thread_id="t").to_query()
    assert query == {"status": "SUSPENDED", "agentId": "a", "threadId": "t"}


def test_from_date_is_inclusive_at_millisecond_precision() -> None:
    bound = datetime(2026, 1, 1, 0, 0, 0, 5500, tzinfo=UTC)  # 5.5 ms
    query = RunFilter(from_date=bound).to_query()
    # Stored dates are whole ms: >= 5.5 ms is > 5 ms.
    assert query["createdAt"] == {"$gt": datetime(2026, 1, 1, 0, 0, 0, 5000, tzinfo=UTC)}


# -- every list shape and paging mode against a plain oracle (storage/index/run_index.py) ------

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
ME = "person:me"
WANTED = [(r, m) for r in (None, True, False) for m in (None, True, False)]
"""inReview and inReviewByMe, each unset, true or false."""
MOMENTS = [
    T + timedelta(seconds=s)
    for s in (0, 0, 1, 2, 2, 2, 5, 3600, 3601, 86400 * 3, -86400 * 400, -86400 * 400 + 1)
] + [T + timedelta(milliseconds=1), T - timedelta(days=30), T + timedelta(days=365)]
STATES = [RunStatus.SUSPENDED, RunStatus.RUNNING, RunStatus.ENDED, RunStatus.COMPLETED]
SHOWN = [*STATES, RunStatus.STALLED, RunStatus.FAILED]

run_rows = st.lists(
    st.tuples(
        st.sampled_from(MOMENTS),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from([None, "t1", "t2"]),
        st.sampled_from([None, "r1", "r2"]),
        st.sampled_from(STATES),
        st.booleans(),  # a RUNNING run's lease ran out (STALLED)
        st.sampled_from(["put", "started", "raw"]),  # how it was written (raw: bypassing)
        st.sampled_from([(), ("x",), ("y",), ("x", "y"), (None,)]),  # its calls' tools
        st.booleans(),  # its first call decided
        st.sampled_from([None, None, ME, "person:other", "ended"]),  # who reviews it
        st.sampled_from([(), (), ("key:me",), ("group:ops", "key:other"), ("key:other",)]),
    ),
    max_size=45,
)
bounds = st.one_of(
    st.none(),
    st.sampled_from(MOMENTS).flatmap(
        lambda m: st.sampled_from([m, m + timedelta(microseconds=500), m - timedelta(seconds=1)])
    ),
)
filters = st.builds(
    RunFilter,
    agent_id=st.sampled_from([None, "a", "b", "z"]),
    thread_id=st.sampled_from([None, "t1", "t2"]),
    resource_id=st.sampled_from([None, "r1", "r2"]),
    from_date=bounds,
    to_date=bounds,
    statuses=st.frozensets(st.sampled_from(SHOWN), min_size=1),
    resource_ids=st.sampled_from([None, frozenset(), frozenset({"r1"}), frozenset({"r1", "r2"})]),
    agent_ids=st.sampled_from([None, frozenset({"a"}), frozenset({"a", "c"})]),
    assigned_to_me=st.booleans(),
    assigned=st.sampled_from(
        [
            None,
            (),
            (AssignedBand("a", ("x",)),),
            (AssignedBand("a", (None, "y")), AssignedBand("b", ("x", "y"))),
            (  # escalated: x from the start, y too once suspended an hour before T
                AssignedBand("b", ("x",), suspended_after=T + timedelta(hours=-1)),
                AssignedBand("b", ("x", "y"), suspended_upto=T + timedelta(hours=-1)),
            ),
        ]
    ),
    reviews=st.sampled_from([None, *(ReviewState.wanted(r, m) for r, m in WANTED)]),
    reviewer=st.just(ME),
    handed_to=st.sampled_from([frozenset(), frozenset({"key:me", "group:ops"})]),
)
pagings = st.one_of(
    st.tuples(st.just("offset"), st.integers(1, 7), st.integers(0, 12)),
    st.tuples(st.just("keyset"), st.integers(1, 7), st.just(0)),
)


# No shrinking: an example costs a database; a failure reports the example as drawn.
@settings(
    max_examples=60,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    rows=run_rows,
    deleted=st.sets(st.integers(0, 44)),
    asked=st.lists(st.tuples(filters, pagings), min_size=1, max_size=4),
)
def test_every_shape_and_paging_mode_lists_what_a_plain_sort_lists(
    mongo_uri: str, rows, deleted, asked
) -> None:
    asyncio.run(_compare(mongo_uri, rows, deleted, asked))


async def _compare(mongo_uri: str, rows, deleted, asked) -> None:
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_uri, tz_aware=True)
    name = f"q_{uuid.uuid4().hex[:12]}"
    try:
        index = RunIndex(client[name][RUNS_COLLECTION], retention=timedelta(days=7))
        await index.ensure_indexes()
        await _store(index, rows, deleted)
        stored = [e async for d in index.collection.find({}) if (e := RunEntry.from_document(d))]
        for run_filter, paging in asked:
            expected = _oracle(stored, run_filter)
            assert await index.count(run_filter, now=T) == len(expected)
            assert await _listed(index, run_filter, paging) == expected, (run_filter, paging)
    finally:
        await client.drop_database(name)
        await client.close()


async def _store(index: RunIndex, rows, deleted) -> None:
    for i, row in enumerate(rows):
        created, agent, thread, resource, status, lapsed, how, tools, decided = row[:9]
        claim = None
        if status is RunStatus.RUNNING:
            expires = T + (timedelta(minutes=-1) if lapsed else timedelta(minutes=1))
            claim = Claim("me", T, expires)
        entry = RunEntry(
            run_id=f"run-{i:02d}",
            workflow_name="agentic-loop",
            runtime=Runtime.MASTRA,
            agent_id=agent,
            status=status,
            created_at=created,
            suspended_at=created,
            thread_id=thread,
            resource_id=resource,
            claim=claim,
            tool_calls=tuple(
                ToolCall(f"c-{k}", tool, True, decision=approval() if decided and k == 0 else None)
                for k, tool in enumerate(tools)
            ),
        )
        if how == "put" and status is RunStatus.SUSPENDED:
            await index.discovery.put_suspended([entry])
        elif how == "raw":
            await index.collection.database[RUNS_COLLECTION].insert_one(entry.to_document())
        else:
            await index.claims.put_started(entry)
        await _mark(index, entry.run_id, *row[9:])
    gone = [f"run-{i:02d}" for i in deleted]
    await index.writes.delete_many({"runId": {"$in": gone}})


async def _mark(
    index: RunIndex, run_id: str, reviewer: str | None, handed: tuple[str, ...]
) -> None:
    """A review (one that ended before T, or lasts past it) and a hand-over, as written by
    storage/index/reviews.py (on a run in any state: only a waiting run's counts)."""
    marks: Document = {}
    if reviewer is not None:
        ended = reviewer == "ended"
        until = T + (timedelta(minutes=-1) if ended else timedelta(minutes=1))
        by = "person:other" if ended else reviewer
        marks["review"] = Review(by, by, T - timedelta(minutes=5), until).to_document()
    if handed:
        marks["assignees"] = list(handed)
    if marks:
        await index.writes.update_one({"runId": run_id}, {"$set": marks})


def _oracle(stored: list[RunEntry], f: RunFilter) -> list[str]:
    def selected(e: RunEntry) -> bool:
        return (
            e.status_at(T) in f.statuses
            and f.agent_id in (None, e.agent_id)
            and (f.agent_ids is None or e.agent_id in f.agent_ids)
            and f.thread_id in (None, e.thread_id)
            and f.resource_id in (None, e.resource_id)
            and (f.resource_ids is None or e.resource_id in f.resource_ids)
            and (f.from_date is None or e.created_at >= f.from_date)
            and (f.to_date is None or e.created_at <= f.to_date)
            and (not f.assigned_to_me or _assigned(e, f) or _handed(e, f))
            and (f.reviews is None or _review_state(e) in f.reviews)
        )

    chosen = sorted(filter(selected, stored), key=lambda e: (-e.created_at.timestamp(), e.run_id))
    return [e.run_id for e in chosen]


def _handed(e: RunEntry, f: RunFilter) -> bool:
    return e.status is RunStatus.SUSPENDED and bool(set(e.assignees) & f.handed_to)


def _review_state(e: RunEntry) -> ReviewState:
    review = e.reviewed_at(T)
    if review is None:
        return ReviewState.NONE
    return ReviewState.MINE if review.person == ME else ReviewState.OTHERS


def _assigned(e: RunEntry, f: RunFilter) -> bool:
    bands = f.assigned or ()

    def within(band: AssignedBand) -> bool:
        at, after, upto = e.suspended_at, band.suspended_after, band.suspended_upto
        if at is None:
            return upto is None
        return (after is None or at > after) and (upto is None or at <= upto)

    return e.status is RunStatus.SUSPENDED and any(
        band.agent_id == e.agent_id
        and within(band)
        and any(call.tool_name in band.tool_names for call in e.pending_calls())
        for band in bands
    )


async def _listed(index: RunIndex, run_filter: RunFilter, paging) -> list[str]:
    """Every run, page after page, by offset or by cursor (the resolver's `+1` included)."""
    mode, size, start = paging
    listed: list[str] = []
    after = None
    skip = start if mode == "offset" else 0
    if mode == "offset":  # the pages before `start` are asked too, and must agree
        head = await index.page(run_filter, limit=start + 1, now=T)
        listed += [e.run_id for e in head[:start]]
    for _ in range(len(MOMENTS) * 5):  # more pages than runs: one repeats
        page = await index.page(run_filter, limit=size + 1, skip=skip, after=after, now=T)
        listed += [e.run_id for e in page[:size]]
        if len(page) <= size:
            return listed
        if mode == "offset":
            skip += size
        else:
            after = Cursor(page[size - 1].created_at, page[size - 1].run_id)
    raise AssertionError(f"the pages never ended: {listed}")


def test_an_escalated_assignment_lists_each_run_once_in_its_band(mongo_uri: str) -> None:
    """Runs of b on both sides of the escalation (T - 1 h), with x, y or both pending."""
    old, new = T - timedelta(days=30), T + timedelta(seconds=1)
    rows = [
        (moment, "b", None, None, RunStatus.SUSPENDED, False, "put", tools, decided, None, ())
        for moment in (old, new)
        for tools in (("x",), ("y",), ("x", "y"))
        for decided in (False, True)
    ]
    escalated = RunFilter(
        assigned_to_me=True,
        assigned=(
            AssignedBand("b", ("x",), suspended_after=T + timedelta(hours=-1)),
            AssignedBand("b", ("x", "y"), suspended_upto=T + timedelta(hours=-1)),
        ),
    )
    asked = [(escalated, ("offset", 2, 0)), (escalated, ("keyset", 3, 0))]
    asyncio.run(_compare(mongo_uri, rows, set(), asked))


def test_reviews_and_hand_overs_list_each_run_once(mongo_uri: str) -> None:
    """Waiting runs in every review state (none, mine, another's, one that ended), some
    handed to the caller, beside finished ones; every combination of inReview and
    inReviewByMe, alone, by agent and with assignedToMe (a band of agent a's x), paged."""
    rows = [
        (T + timedelta(seconds=i), agent, None, None, status, False, "put", ("x",), False, who, to)
        for i, (agent, status, who, to) in enumerate(
            (agent, status, who, to)
            for agent in ("a", "b")
            for status in (RunStatus.SUSPENDED, RunStatus.COMPLETED)
            for who in (None, ME, "person:other", "ended")
            for to in ((), ("key:me",))
        )
    ]
    band = (AssignedBand("a", ("x",)),)
    mine = frozenset({"key:me"})
    asked = [
        (RunFilter(statuses=statuses, reviews=ReviewState.wanted(r, m), reviewer=ME, **more), p)
        for r, m in WANTED
        for statuses in (frozenset({RunStatus.SUSPENDED}), frozenset(RunStatus))
        for more in (
            {},
            {"agent_id": "b"},
            {"assigned_to_me": True, "assigned": band, "handed_to": mine},
        )
        for p in (("offset", 3, 2), ("keyset", 2, 0))
    ]
    asyncio.run(_compare(mongo_uri, rows, set(), asked))
