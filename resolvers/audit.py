"""`decisionLog`: the audit records of one run, oldest first, paged by cursor."""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
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


async def decision_log(
    context: Context, run_id: str, first: int | None = None, after: str | None = None
) -> list[AuditRecord]:
    require(context.principal, Role.VIEWER)
    limit = DEFAULT_LOG_PAGE if first is None else first
    if not 1 <= limit <= MAX_LOG_PAGE:
        raise BadUserInput(f"first must be between 1 and {MAX_LOG_PAGE}", argument="first")
    position = _position(after) if after is not None else None
    context.budget.take_rows(limit)
    if not context.principal.scope.unrestricted:
        entry = await context.storage.runs.get(run_id)
        if entry is None or not context.principal.scope.allows(entry):
            return []  # as for a run that does not exist
    records = await context.storage.decisions.for_run(run_id, limit=limit, after=position)
    # Records written before people were recorded name their person as it is read now.
    person_of = context.people.person_of
    return [replace(r, person=r.person or person_of(r.by)) for r in records]


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
