"""Runs a list finds by what reviewers wrote on them: reviews that last, and hand-overs.

A condition on a field no list index holds makes the embedded server scan the collection,
even beside an equality on `status` that an index holds (docs/design.md, "Lists on the
embedded server"), and every index of the run index is paid by every write. Reviews and
hand-overs are few, and each is held by a sparse index of its own (`review.until`,
`assignees`, storage/index/reviews.py) that only the entries that have one are in: a list
asks that index alone, and checks the rest of its filter on each entry here.

- `inReview: true`, `inReviewByMe: true`: the runs in review now, matched here; no window
  is walked.
- `inReview: false`, `inReviewByMe: false`: the list's windows as without them, each
  entry read checked; its total is the total without them less the runs in review that
  it holds and must not.
- `assignedToMe`: the review policies' bands (storage/index/assignment.py), and the runs
  handed to the caller that no band holds.

The runs in review are read once per version of the index (storage/index/version.py: a
new token after every write to an entry, in any process) and kept for the lists and counts
asked as of that version; a review that ends by itself is checked against `now` on each use.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.assignment import checked
from suspended_runs.storage.index.filters import ReviewState, RunFilter
from suspended_runs.storage.index.reviews import ASSIGNEES_INDEX, REVIEW_INDEX
from suspended_runs.storage.types import Document, RunStatus

REVIEW_FIELDS: Document = {"status": 1, "review": 1}
"""What the check of an entry's review state (`review_state`) reads."""
_WHOLE: Document = {"_id": 0, "snapshotId": 0}
"""Marked entries are read whole: they are few, and a page may show them."""


class MarkedRuns:
    def __init__(self, collection: AsyncCollection[Document]) -> None:
        self.collection = collection
        self._kept: tuple[Any, datetime, list[Document]] | None = None
        """The version's token, when they were read, and the entries in review then."""

    async def reviewed(self, now: datetime, token: Any = None) -> list[Document]:
        """The entries whose review lasts at `now` (any state, and reviews that ended since
        they were read: the caller checks both), as of the version `token` (None: read)."""
        kept = self._kept
        if token is not None and kept is not None and kept[0] == token and kept[1] <= now:
            return kept[2]
        cursor = self.collection.find({REVIEW_INDEX: {"$gt": now}}, _WHOLE)
        found = [doc async for doc in cursor]
        if token is not None:
            self._kept = (token, now, found)
        return found

    async def handed(self, names: frozenset[str]) -> list[Document]:
        """The entries handed over to any of `names`."""
        cursor = self.collection.find({ASSIGNEES_INDEX: {"$in": sorted(names)}}, _WHOLE)
        return [doc async for doc in cursor]

    async def extra(
        self, run_filter: RunFilter, now: datetime, token: Any = None
    ) -> list[Document]:
        """The entries `run_filter` holds that its walk of windows does not find: the runs
        in review of a list of them alone, or the runs handed to the caller that no band of
        its `assignedToMe` holds."""
        if not walks(run_filter):
            return [
                doc
                for doc in await self.reviewed(now, token)
                if _wanted(doc, run_filter, now) and holds(doc, run_filter, now)
            ]
        if not run_filter.assigned_to_me or not run_filter.handed_to:
            return []
        return [
            doc
            for doc in await self.handed(run_filter.handed_to)
            if _wanted(doc, run_filter, now)
            and _handed_over(doc, run_filter)
            and not _in_shapes(doc, run_filter, now)
        ]

    async def left_out(self, run_filter: RunFilter, now: datetime, token: Any = None) -> int:
        """How many entries the list's shapes hold that its review states leave out (its
        walk skips them as it reads them: its total does not count them)."""
        if run_filter.reviews is None or not walks(run_filter):
            return 0
        return sum(
            1
            for doc in await self.reviewed(now, token)
            if not _wanted(doc, run_filter, now) and _in_shapes(doc, run_filter, now)
        )


def walks(run_filter: RunFilter) -> bool:
    """Whether a list walks its windows: not when it holds only runs in review."""
    return run_filter.reviews is None or ReviewState.NONE in run_filter.reviews


def kept(run_filter: RunFilter, now: datetime) -> Callable[[Document], bool] | None:
    """The check of each entry a walk reads, for a list that leaves some reviews out."""
    if run_filter.reviews is None:
        return None
    return lambda doc: _wanted(doc, run_filter, now)


def review_state(doc: Document, now: datetime, reviewer: str | None) -> ReviewState:
    """An entry's review state at `now` (a review is of a waiting run only)."""
    review = doc.get("review")
    if doc.get("status") != RunStatus.SUSPENDED.value or not isinstance(review, dict):
        return ReviewState.NONE
    until = review.get("until")
    if not isinstance(until, datetime) or until <= now:
        return ReviewState.NONE
    mine = reviewer is not None and review.get("person") == reviewer
    return ReviewState.MINE if mine else ReviewState.OTHERS


def holds(doc: Document, run_filter: RunFilter, now: datetime) -> bool:
    """Whether `run_filter` holds the entry, its review state aside."""
    return _in_shapes(doc, run_filter, now) or _handed_over(doc, run_filter)


def _wanted(doc: Document, run_filter: RunFilter, now: datetime) -> bool:
    wanted = run_filter.reviews
    return wanted is None or review_state(doc, now, run_filter.reviewer) in wanted


def _in_shapes(doc: Document, run_filter: RunFilter, now: datetime) -> bool:
    return any(matches(doc, query) for query in run_filter.to_queries(now))


def _handed_over(doc: Document, run_filter: RunFilter) -> bool:
    """A waiting run handed to one of the caller's names, within the list's other fields."""
    if not run_filter.assigned_to_me:
        return False
    assignees = doc.get("assignees")
    named = set(assignees) if isinstance(assignees, list) else set()
    return bool(named & run_filter.handed_to) and matches(doc, run_filter.to_query())


def matches(doc: Document, query: Document) -> bool:
    """Whether the entry matches a list's query (filters.py: equalities, `$in`, `$ne`,
    ranges of dates; a band's calls and suspension, assignment.py). An operator it does
    not know matches nothing."""
    asked, check = checked(query)
    if check is not None and not check(doc):
        return False
    return all(_meets(_field(doc, name), wanted) for name, wanted in asked.items())


def _field(doc: Document, path: str) -> object:
    value: object = doc
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _meets(value: object, wanted: object) -> bool:
    if not isinstance(wanted, dict):
        return value == wanted
    for operator, argument in wanted.items():
        if operator == "$in":
            met = value in argument
        elif operator == "$ne":
            met = value != argument
        elif operator in ("$gt", "$lte"):
            met = isinstance(value, datetime) and (
                value > argument if operator == "$gt" else value <= argument
            )
        else:
            return False
        if not met:
            return False
    return True
