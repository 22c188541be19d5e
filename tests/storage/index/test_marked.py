"""Runs in review read once per version of the index (storage/index/marked.py): kept for the
lists asked as of that version, read again at a new one, and checked against `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from suspended_runs.storage import Review, RunIndex
from suspended_runs.storage.index.filters import ReviewState, RunFilter
from suspended_runs.storage.index.marked import MarkedRuns
from tests.builders import entry


async def test_the_runs_in_review_are_kept_per_version_and_checked_against_now(
    index: RunIndex,
) -> None:
    await index.claims.put_started(entry())
    seen = await index.get("r-1")
    assert seen is not None
    now = datetime.now(UTC)
    review = Review("key:alice", "person:alice", now, now + timedelta(minutes=1))
    assert await index.reviews.start(seen, review, announced=True)
    marked = MarkedRuns(index.collection)
    in_review = RunFilter(reviews=ReviewState.wanted(True, None))
    assert [d["runId"] for d in await marked.extra(in_review, now, "v1")] == ["r-1"]
    await index.collection.update_one({"runId": "r-1"}, {"$unset": {"review": ""}})
    assert len(await marked.reviewed(now, "v1")) == 1  # as of v1: kept
    assert await marked.reviewed(now, "v2") == []  # a new version: read again
    await index.collection.update_one({"runId": "r-1"}, {"$set": {"review": review.to_document()}})
    assert len(await marked.reviewed(now, "v3")) == 1
    later = now + timedelta(minutes=2)  # the review ended by itself; no write says so
    assert await marked.extra(in_review, later, "v3") == []
    not_in_review = RunFilter(reviews=ReviewState.wanted(False, None))
    assert await marked.left_out(not_in_review, later, "v3") == 0
    assert await marked.left_out(not_in_review, now, "v3") == 1
