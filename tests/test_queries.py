"""Keyset cursors and filters (storage/queries.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from suspended_runs.storage import Cursor, InvalidCursor, RunFilter


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
