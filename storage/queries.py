"""What a list query asks of the run index: its filter and its keyset cursor.

Every filter is an equality prefix of one of `RUN_INDEXES` followed by the sort key
`(createdAt desc, runId asc)`, so a real MongoDB answers each page from an index in order.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from suspended_runs.storage.errors import InvalidCursor
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
    resource_ids: frozenset[str] | None = None
    agent_ids: frozenset[str] | None = None
    """A caller's scope: only runs of these resources / agents (None: any)."""

    def to_queries(self, now: datetime) -> list[Document]:
        """One query per stored state asked for, each an equality on `status` first, so an
        index serves it; a list is their merge (no $or: the embedded server scans one)."""
        stored = {RunStatus.RUNNING if s is RunStatus.STALLED else s for s in self.statuses}
        queries = []
        for status in sorted(stored):
            query = self.to_query(status)
            if status is RunStatus.RUNNING and RunStatus.STALLED not in self.statuses:
                query["claim.expiresAt"] = {"$gt": now}
            elif status is RunStatus.RUNNING and RunStatus.RUNNING not in self.statuses:
                query["claim.expiresAt"] = {"$lte": now}
            queries.append(query)
        return queries

    def to_query(self, status: RunStatus = RunStatus.SUSPENDED) -> Document:
        """The query of the runs in one stored state."""
        query: Document = {"status": status.value}
        _match(query, "agentId", self.agent_id, self.agent_ids)
        if self.thread_id is not None:
            query["threadId"] = self.thread_id
        _match(query, "resourceId", self.resource_id, self.resource_ids)
        created: Document = {}
        if self.from_date is not None:
            # Portable `$gte`: the embedded server scans `$gte` on a descending key as `$gt`.
            created["$gt"] = _whole_millisecond_ceiling(self.from_date) - _MILLISECOND
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


def _whole_millisecond_ceiling(moment: datetime) -> datetime:
    """BSON dates are whole milliseconds, so `>= moment` is `> ceiling(moment) - 1 ms`."""
    spare = moment.microsecond % 1000
    return moment + timedelta(microseconds=1000 - spare) if spare else moment


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
