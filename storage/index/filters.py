"""What a list query asks of the run index: its filter and its keyset cursor.

Every filter is an equality prefix of one of `RUN_INDEXES` followed by the sort key
`(createdAt desc, runId asc)`, so a real MongoDB answers each page from an index in order.
A list asks each of its `shapes` (equalities only) within `createdAt` windows of its `Span`
(docs/design.md, "Lists on the embedded server").
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TypeVar

from suspended_runs.storage.errors import InvalidCursor
from suspended_runs.storage.index.assignment import AssignedBand, assigned_queries
from suspended_runs.storage.types import Document, RunStatus

SORT: list[tuple[str, int]] = [("createdAt", -1), ("runId", 1)]

RUN_INDEXES: list[list[tuple[str, int]]] = [
    [("status", 1), *SORT],
    [("status", 1), ("agentId", 1), *SORT],
    [("status", 1), ("agentId", 1), ("threadId", 1), *SORT],
    [("status", 1), ("agentId", 1), ("resourceId", 1), *SORT],
    [("status", 1), ("threadId", 1), *SORT],
    [("status", 1), ("resourceId", 1), *SORT],
]


class ReviewState(StrEnum):
    """Where a run stands as to reviews (`inReview`, `inReviewByMe`): in no review that
    lasts (every run but a waiting one), in the caller's, or in someone else's."""

    NONE = "none"
    MINE = "mine"
    OTHERS = "others"

    @classmethod
    def wanted(cls, in_review: bool | None, by_me: bool | None) -> frozenset[ReviewState] | None:
        """The states `inReview` and `inReviewByMe` hold together (None: any)."""
        if in_review is None and by_me is None:
            return None
        states = frozenset(cls)
        if in_review is not None:
            states &= {cls.MINE, cls.OTHERS} if in_review else {cls.NONE}
        if by_me is not None:
            states &= {cls.MINE} if by_me else {cls.NONE, cls.OTHERS}
        return states


@dataclass(frozen=True, slots=True)
class RunFilter:
    agent_id: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    from_date: datetime | None = None
    to_date: datetime | None = None
    statuses: frozenset[RunStatus] = frozenset({RunStatus.SUSPENDED})
    """The states to list; STALLED is a RUNNING run whose lease ran out, so asking for one
    of the two without the other narrows by the lease's expiry."""
    has_problems: bool | None = None
    """Only runs whose snapshot had fields that could not be read (False: only others)."""
    resource_ids: frozenset[str] | None = None
    agent_ids: frozenset[str] | None = None
    """A caller's scope: only runs of these resources / agents (None: any)."""
    assigned_to_me: bool = False
    """Only SUSPENDED runs with a pending call assigned to the caller: those of `assigned`."""
    assigned: tuple[AssignedBand, ...] | None = None
    """The caller's assignment, spelled out (storage/index/assignment.py); None while not
    resolved, when `assigned_to_me` lists nothing (fails closed)."""
    handed_to: frozenset[str] = frozenset()
    """With `assigned_to_me`: the caller's names (credential, person, groups), which a run
    handed over names (`assignRun`) to be theirs too (storage/index/marked.py)."""
    reviews: frozenset[ReviewState] | None = None
    """Only runs in these review states (`inReview`, `inReviewByMe`); None: any."""
    reviewer: str | None = None
    """The caller's person, whose reviews are MINE; None while not resolved (no review
    is the caller's)."""

    def to_queries(self, now: datetime) -> list[Document]:
        """One query per stored state asked for, each an equality on `status` first, so an
        index serves it; a list is their merge (no $or: the embedded server scans one)."""
        stored = {RunStatus.RUNNING if s is RunStatus.STALLED else s for s in self.statuses}
        if self.assigned_to_me:  # only a waiting run's calls are assigned
            if RunStatus.SUSPENDED not in stored:
                return []
            return assigned_queries(self.to_query(RunStatus.SUSPENDED), self.assigned or ())
        queries = []
        for status in sorted(stored):
            query = self.to_query(status)
            if status is RunStatus.RUNNING and RunStatus.STALLED not in self.statuses:
                query["claim.expiresAt"] = {"$gt": now}
            elif status is RunStatus.RUNNING and RunStatus.RUNNING not in self.statuses:
                query["claim.expiresAt"] = {"$lte": now}
            queries.append(query)
        return queries

    def shapes(self, now: datetime) -> list[Document]:
        """`to_queries` without `createdAt` (see `span`), with a scope's `$in` spelled out
        as one equality query per value: the embedded server serves a compound index only
        for equalities and one range, and scans for an `$in` beside a range."""
        shapes = []
        for query in self.to_queries(now):
            query.pop("createdAt", None)
            shapes += _spelled_out(query)
        return shapes

    def span(self) -> Span:
        """The filter's bounds on `createdAt` (both inclusive, at millisecond precision)."""
        return Span(
            after=None if self.from_date is None else _before_ceiling(self.from_date),
            upto=None if self.to_date is None else _whole_millisecond_floor(self.to_date),
        )

    def run_fields_query(self) -> Document:
        """The filter's equalities on a run's own fields (its agent, thread and resource,
        within the scope), named as an index entry and a decision's audit record both
        name them."""
        query: Document = {}
        _match(query, "agentId", self.agent_id, self.agent_ids)
        if self.thread_id is not None:
            query["threadId"] = self.thread_id
        _match(query, "resourceId", self.resource_id, self.resource_ids)
        return query

    def to_query(self, status: RunStatus = RunStatus.SUSPENDED) -> Document:
        """The query of the runs in one stored state."""
        query: Document = {"status": status.value, **self.run_fields_query()}
        if self.has_problems is not None:
            query["hasProblems"] = True if self.has_problems else {"$ne": True}
        created: Document = {}
        after = self.span().after
        if after is not None:
            # Portable `$gte`: the embedded server scans `$gte` on a descending key as `$gt`.
            created["$gt"] = after
        if self.to_date is not None:
            created["$lte"] = self.to_date
        if created:
            query["createdAt"] = created
        return query


_MILLISECOND = timedelta(milliseconds=1)


def _match(query: Document, name: str, value: str | None, allowed: frozenset[str] | None) -> None:
    """Equality on a field, within an allowed set: outside it nothing matches."""
    if value is not None:
        query[name] = value if allowed is None or value in allowed else {"$in": []}
    elif allowed is not None:
        query[name] = {"$in": sorted(allowed)}


_MOST_SPELLED_OUT = 64
"""A scope's `$in` is asked as separate equality queries up to this many of them."""


def _spelled_out(query: Document) -> list[Document]:
    """`query` with each `$in` on agentId and resourceId split into one query per value
    (none for an empty `$in`: nothing matches), or as it is beyond `_MOST_SPELLED_OUT`."""
    queries = [query]
    for name in ("agentId", "resourceId"):
        allowed = query.get(name)
        if isinstance(allowed, dict) and "$in" in allowed:
            queries = [{**q, name: value} for q in queries for value in allowed["$in"]]
    return queries if len(queries) <= _MOST_SPELLED_OUT else [query]


def shape_key(shape: Document) -> tuple[object, ...]:
    """What makes shapes alike in density: the state and which fields are matched."""
    return (shape.get("status"), *sorted(shape))


_V = TypeVar("_V")
SHAPES_REMEMBERED = 1024
"""Shapes a process remembers a walk of (its count, where its last page reached)."""


def remember(memory: OrderedDict[str, _V], key: str, value: _V) -> None:
    """Keep `value` as the most recent of `memory`, forgetting the least recent beyond
    `SHAPES_REMEMBERED`."""
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > SHAPES_REMEMBERED:
        memory.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Span:
    """A range of `createdAt`: after `after` (exclusive) up to `upto` (inclusive); None is
    open. Only `$gt` and `$lte`: the embedded server scans `$gte` on a descending key as `$gt`."""

    after: datetime | None = None
    upto: datetime | None = None

    @property
    def empty(self) -> bool:
        return self.after is not None and self.upto is not None and self.upto <= self.after

    def holds(self, moment: datetime) -> bool:
        return (self.after is None or moment > self.after) and (
            self.upto is None or moment <= self.upto
        )

    def below(self, moment: datetime) -> Span:
        """The part of this span before `moment` (stored dates are whole milliseconds)."""
        top = _before_ceiling(moment)
        if top is None:  # nothing is stored before the calendar's first millisecond
            return Span(_EARLIEST, _EARLIEST)
        return Span(self.after, top if self.upto is None else min(self.upto, top))

    def to_query(self) -> Document:
        bounds: Document = {}
        if self.after is not None:
            bounds["$gt"] = self.after
        if self.upto is not None:
            bounds["$lte"] = self.upto
        return bounds


def _whole_millisecond_floor(moment: datetime) -> datetime:
    return moment - timedelta(microseconds=moment.microsecond % 1000)


def _before_ceiling(moment: datetime) -> datetime | None:
    """The last whole millisecond before `moment`'s ceiling: BSON dates are whole
    milliseconds, so `>= moment` is `>` this. None at the calendar's first millisecond
    (every date is `>=` it); past its last whole millisecond, that one (nothing is after).
    """
    if moment > _LAST_MILLISECOND:
        return _LAST_MILLISECOND
    spare = moment.microsecond % 1000
    ceiling = moment + timedelta(microseconds=1000 - spare) if spare else moment
    return None if ceiling - _EARLIEST < _MILLISECOND else ceiling - _MILLISECOND


_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LAST_MILLISECOND = datetime.max.replace(microsecond=999_000, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Cursor:
    """A position in `(createdAt desc, runId asc)` order: the last run of a page."""

    created_at: datetime
    run_id: str

    def encode(self) -> str:
        millis = int(self.created_at.timestamp() * 1000)
        raw = json.dumps([millis, self.run_id], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            millis, run_id = json.loads(raw)
            if not isinstance(millis, int) or not isinstance(run_id, str):
                raise TypeError
            return cls(datetime.fromtimestamp(millis / 1000, tz=UTC), run_id)
        except (binascii.Error, ValueError, TypeError, OverflowError, OSError):
            raise InvalidCursor("the cursor is not one this server returned") from None


_FIRST_WIDTH = timedelta(minutes=1)
_MOST_GROWTH = 16
_WIDEST = timedelta(days=36500)


class WindowWalk:
    """`createdAt` windows down a span, newest first, that widen until `need` matches are
    found or the span is exhausted. A window costs its matches on the embedded server, so
    each is sized from the density seen so far (or learned from earlier lists of the same
    shape) to hold about what is still needed.

    The first window is open above and the last open below, so no stored run is missed
    whatever `top` and `floor` say: they only make the walk short.
    """

    def __init__(
        self,
        span: Span,
        *,
        top: datetime,
        floor: datetime | None,
        need: int | None,
        density: float | None = None,
        chunk: int = 0,
        reach: datetime | None = None,
    ) -> None:
        """`need` matches at most, or (None) the whole span, `chunk` matches a window."""
        self.span = span
        self.top = top if span.upto is None else min(top, span.upto)
        self.floor = floor
        self.need = need
        self.chunk = chunk
        self.got = 0
        self.width = _FIRST_WIDTH if not density else self._width_for(self.wanted, density)
        if reach is not None and reach < self.top:
            # Down to where the last walk of this shape found what it needed (a density
            # averaged across a gap in time would make this window hold everything).
            self.width = self.top - reach + _MILLISECOND
        self.done = span.empty or (need is not None and need <= 0)
        self._edge: datetime | None = None

    @property
    def wanted(self) -> int:
        """Matches the next window should hold."""
        return self.chunk if self.need is None else self.need - self.got

    def window(self) -> Span:
        """The next window: from where the last one ended down by the current width."""
        upper = self.span.upto if self._edge is None else self._edge
        try:
            lower: datetime | None = (self.top if self._edge is None else self._edge) - self.width
        except OverflowError:
            lower = None
        if lower is not None and self.span.after is not None and lower <= self.span.after:
            lower, self.done = self.span.after, True
        elif lower is None or self.floor is None or lower <= self.floor:
            lower, self.done = self.span.after, True  # open below: nothing older is missed
        self._edge = lower
        return Span(lower, upper)

    def saw(self, matches: int) -> None:
        """The last window held `matches`: widen the next one to hold what is still needed."""
        self.got += matches
        if self.need is not None and self.got >= self.need:
            self.done = True
        if self.done or self._edge is None:
            return
        density = self.density
        wanted = self._width_for(self.wanted, density) if density else self.width * 4
        self.width = min(max(wanted, self.width), self.width * _MOST_GROWTH, _WIDEST)

    @property
    def density(self) -> float | None:
        """Matches per second over the windows walked so far (None: none seen yet)."""
        if self._edge is None or not self.got:
            return None
        seconds = (self.top - self._edge).total_seconds()
        return self.got / seconds if seconds > 0 else None

    def learned(self, oldest_found: datetime, newest_found: datetime) -> float | None:
        """The density to start the next walk of this shape with, once `need` matches were
        found between `newest_found` and `oldest_found` (the last window was cut at the
        page: what it held beyond is unknown, so its width is not what the page needed; and
        the time above the newest, perhaps a gap, is not the shape's density)."""
        if self.need is None or self.got < self.need:
            return None
        seconds = max((newest_found - oldest_found).total_seconds(), 0.001)
        return self.got / seconds

    @staticmethod
    def _width_for(matches: int, density: float) -> timedelta:
        seconds = max(matches, 1) / density * 1.25
        return timedelta(seconds=min(max(seconds, 0.001), _WIDEST.total_seconds()))
