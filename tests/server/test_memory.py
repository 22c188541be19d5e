"""What requests leave behind is freed by bytes, not by the collector's counts of objects
(server/memory.py): distinct large queries, with the collector's own runs off, leave at
most about `GARBAGE_AFTER_BYTES` of text in unreachable cycles."""

from __future__ import annotations

import gc
import types
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from suspended_runs.server import Settings
from suspended_runs.server.memory import GARBAGE_AFTER_BYTES, RequestGarbage
from tests.helpers import running_app

LARGE = 900_000
"""A query's size, within MAX_REQUEST_BYTES' default."""
MB = 1024 * 1024


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.freeze()  # as `suspended-runs serve` does once started
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def garbage_text_bytes() -> int:
    """Bytes of large strings held only by unreachable cycles (collected on the way)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        held = {
            id(referent): len(referent)
            for cycle in gc.garbage
            for referent in gc.get_referents(cycle)
            if isinstance(referent, str | bytes) and len(referent) >= LARGE // 2
        }
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return sum(held.values())


async def test_distinct_large_queries_leave_no_more_than_the_budget_in_cycles(
    mongo_uri: str, collector_off: None
) -> None:
    settings = Settings(
        mongodb_uri=mongo_uri, mongodb_db=f"mem_{uuid.uuid4().hex[:8]}", query_cache_bytes=1
    )
    async with running_app(settings) as client:
        for i in range(40):
            query = f"query Q{i} {{ __typename }} # {i}" + "x" * LARGE
            answer = await client.post("/graphql", json={"query": query})
            assert answer.json() == {"data": {"__typename": "Query"}}
        left = garbage_text_bytes()
    # Each request leaves its text two or three times over (the body, the query, the
    # comment's token): forty of them hold over 70 MB until a full collection.
    assert left <= 3 * (GARBAGE_AFTER_BYTES + LARGE), f"{left / MB:.0f} MB of text in cycles"


def test_a_full_collection_runs_each_time_the_bodies_pass_the_budget(monkeypatch: Any) -> None:
    collected: list[int] = []

    def collect() -> int:
        collected.append(1)
        return 0

    monkeypatch.setattr("gc.collect", collect)
    # A clock that stands still: the collections take no time, and none waits for another.
    monkeypatch.setattr(
        "suspended_runs.server.memory.time", types.SimpleNamespace(monotonic=lambda: 100.0)
    )
    garbage = RequestGarbage(after_bytes=1000)
    for _ in range(9):
        garbage.received(300)
    assert len(collected) == garbage.collections == 2


def test_collections_take_at_most_a_tenth_of_the_time(monkeypatch: Any) -> None:
    """A collection that took 1 s: the next waits 9 s more, however many bytes come."""
    clock = [100.0]
    monkeypatch.setattr(
        "suspended_runs.server.memory.time", types.SimpleNamespace(monotonic=lambda: clock[0])
    )

    def slow_collect() -> int:
        clock[0] += 1.0
        return 0

    monkeypatch.setattr("gc.collect", slow_collect)
    garbage = RequestGarbage(after_bytes=1000)
    garbage.received(1000)
    clock[0] += 8.9
    garbage.received(5000)
    assert garbage.collections == 1
    clock[0] += 0.1
    garbage.received(1)
    assert garbage.collections == 2
