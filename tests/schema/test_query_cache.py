"""The byte-bounded cache of parsed and validated documents (schema/query_cache.py): what
it charges an entry is at least what the entry holds, and it never holds more than its
budget, however many distinct large queries arrive."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from graphql import parse

from suspended_runs.schema import Limits, build_schema
from suspended_runs.schema.query_cache import QueryCache

SHAPES = {
    "a comment": "query Q { __typename } # " + "c" * 200_000,
    "a string value": 'query Q { agentRun(runId: "' + "s" * 200_000 + '") { runId } }',
    "aliases": "query Q { " + " ".join(f"a{i}: agents {{ id }}" for i in range(300)) + " }",
    "long names": "query Q { " + " ".join(f"{'n' * 900}{i}: __typename" for i in range(200)) + " }",
    "small": "query Q($id: ID!) { agentRun(runId: $id) { runId status } }",
}


def _held(query: str) -> int:
    """Bytes a parsed `query` holds beyond the text itself (tracemalloc's count)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    document = parse(query, max_tokens=2000)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del document
    return held


@pytest.mark.parametrize("shape", SHAPES)
def test_an_entry_is_charged_at_least_what_it_holds(shape: str) -> None:
    query = SHAPES[shape]
    cache = QueryCache(max_bytes=64 * 1024 * 1024)
    cache.document(query, 2000)
    held = _held(query) + len(query)  # its nodes, and the text it keeps
    assert held <= cache.bytes <= 3 * held + 4096, (held, cache.bytes)


def test_a_thousand_distinct_large_queries_stay_within_the_budget() -> None:
    budget = 4 * 1024 * 1024
    schema = build_schema(Limits(cache_bytes=budget))
    cache = schema.query_cache
    most = 0
    for i in range(1000):
        query = f"query Q{i} {{ __typename }} # {i:04}" + "x" * 100_000
        result = schema.execute_sync(query)
        assert result.errors is None and result.data == {"__typename": "Query"}
        most = max(most, cache.bytes)
    assert most <= budget
    assert 17 <= len(cache) <= 20  # about 200 kB each: the text, and its comment's token
    again = schema.execute_sync(f"query Q999 {{ __typename }} # {999:04}" + "x" * 100_000)
    assert again.errors is None


def test_validation_errors_are_kept_with_their_document() -> None:
    schema = build_schema(Limits(cache_bytes=1024 * 1024))
    for _ in range(3):
        result = schema.execute_sync("{ nope }")
        assert result.errors and "nope" in result.errors[0].message
    assert len(schema.query_cache) == 1


def test_the_deprecated_count_bounds_the_entries_as_well() -> None:
    cache = QueryCache(max_bytes=64 * 1024 * 1024, max_entries=2)
    for i in range(5):
        cache.document(f"query Q{i} {{ __typename }}")
    assert len(cache) == 2


def test_a_document_larger_than_the_budget_is_parsed_and_not_kept() -> None:
    cache = QueryCache(max_bytes=10_000)
    document = cache.document("query Q { __typename } # " + "x" * 20_000)
    assert document.definitions and len(cache) == 0 and cache.bytes == 0


def test_a_kept_document_holds_no_cycle_so_forgetting_it_frees_it_at_once() -> None:
    cache = QueryCache(max_bytes=64 * 1024 * 1024)
    document = cache.document("query Q { a: __typename b: __typename } # comment")
    token, seen = document.loc.start_token if document.loc else None, 0
    while token is not None:
        assert token.prev is None  # the only link back, which made every document a cycle
        token, seen = token.next, seen + 1
    assert seen > 5
    gc.disable()
    try:
        before = len(gc.get_objects())
        for i in range(50):
            QueryCache(max_bytes=10**9).document(f"query Q{i} {{ __typename }}")
        assert len(gc.get_objects()) - before < 50  # freed by reference counts alone
    finally:
        gc.enable()
