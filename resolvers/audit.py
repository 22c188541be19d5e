"""`decisionLog`: the audit records of one run, oldest first, paged by cursor."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bson import ObjectId
from bson.errors import InvalidId

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.storage import AuditRecord

DEFAULT_LOG_PAGE = 100
MAX_LOG_PAGE = 500


@dataclass(frozen=True, slots=True)
class LogPage:
    """A page of a run's log: its records, whether more follow, and how to count them all."""

    records: list[AuditRecord]
    has_more: bool
    count: Callable[[], Awaitable[int]]


async def decision_log(
    context: Context, run_id: str, first: int | None = None, after: str | None = None
) -> list[AuditRecord]:
    return (await decision_log_page(context, run_id, first, after)).records


async def decision_log_page(
    context: Context, run_id: str, first: int | None = None, after: str | None = None
) -> LogPage:
    require(context.principal, Role.VIEWER)
    limit = DEFAULT_LOG_PAGE if first is None else first
    if not 1 <= limit <= MAX_LOG_PAGE:
        raise BadUserInput(f"first must be between 1 and {MAX_LOG_PAGE}", argument="first")
    position = _position(after) if after is not None else None
    context.budget.take_rows(limit)
    if not context.principal.scope.unrestricted:
        entry = await context.storage.runs.get(run_id)
        if entry is None or not context.principal.scope.allows(entry):
            return LogPage([], False, _none)  # as for a run that does not exist
    log = context.storage.decisions
    # One more than the page tells whether another follows.
    records = await log.for_run(run_id, limit=limit + 1, after=position)
    return LogPage(
        [as_read(context, r) for r in records[:limit]],
        len(records) > limit,
        lambda: log.count_for_run(run_id),
    )


async def _none() -> int:
    return 0


def as_read(context: Context, record: AuditRecord) -> AuditRecord:
    """A record as shown: one written before people were recorded names its person as
    it is read now."""
    return replace(record, person=record.person or context.people.person_of(record.by))


def record_cursor(record: AuditRecord) -> str:
    """A record's place in its run's log, for `after`."""
    text = f"{record.at.isoformat()}|{record.record_id}"
    return base64.urlsafe_b64encode(text.encode()).decode()


def _position(cursor: str) -> tuple[datetime, Any]:
    try:
        at, _, record_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(at), ObjectId(record_id)
    except (ValueError, binascii.Error, TypeError, InvalidId) as exc:
        raise BadUserInput("after is not a cursor this server returned", argument="after") from exc
