"""Global object identification: an `id` for each run, tool call and decision record, and
`node`/`nodes`, which read objects back by it within the caller's scope.

Normalized client caches (Apollo, urql's Graphcache, Relay) key an object by its type and
`id`, and Relay refetches one by `node(id:)`. An id is opaque to clients, stable, and
URL-safe: unpadded base64url of a one-letter tag and the object's key.

    R<runId>                                      a run
    C<length of runId>:<runId><toolCallId>        a tool call that has an id
    S<length of runId>:<runId><suspendedAt>:<i>   one that has none: its run's suspension
                                                  (epoch milliseconds) and its place
    D<record _id>                                 a decision record

No key holds what changes while a run goes SUSPENDED -> RUNNING -> SUSPENDED (its status,
version, claim or decisions), so a cached object keeps its entry through a decision. The
length before a run id keeps a key whole whatever characters the run id holds.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bson import ObjectId
from bson.errors import InvalidId

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.audit import as_read
from suspended_runs.resolvers.context import Context
from suspended_runs.storage import AuditRecord, RunEntry, ToolCall

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def _encoded(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def run_node_id(run_id: str) -> str:
    return _encoded(f"R{run_id}")


def call_node_id(entry: RunEntry, call: ToolCall, position: int) -> str:
    run_id = entry.run_id
    if call.tool_call_id is not None:
        return _encoded(f"C{len(run_id)}:{run_id}{call.tool_call_id}")
    return _encoded(f"S{len(run_id)}:{run_id}{_millis(entry.suspended_at)}:{position}")


def record_node_id(record_id: object) -> str:
    return _encoded(f"D{record_id}")


def _millis(moment: datetime | None) -> str:
    """Exact integer milliseconds (a float's product may fall a millisecond short)."""
    return "" if moment is None else str((moment - _EPOCH) // _MILLISECOND)


@dataclass(frozen=True, slots=True)
class RunKey:
    run_id: str


@dataclass(frozen=True, slots=True)
class CallKey:
    run_id: str
    tool_call_id: str | None
    suspension: str = ""
    position: int = -1

    def finds(self, entry: RunEntry) -> FoundCall | None:
        for position, call in enumerate(entry.tool_calls):
            if self.tool_call_id is not None and call.tool_call_id == self.tool_call_id:
                return FoundCall(entry, call, position)
            if (
                self.tool_call_id is None
                and call.tool_call_id is None
                and position == self.position
                and _millis(entry.suspended_at) == self.suspension
            ):
                return FoundCall(entry, call, position)
        return None


@dataclass(frozen=True, slots=True)
class RecordKey:
    record_id: ObjectId


Key = RunKey | CallKey | RecordKey


def parse(node_id: str) -> Key | None:
    """The key an id names; None for a string this server did not write."""
    try:
        text = base64.urlsafe_b64decode(node_id + "=" * (-len(node_id) % 4)).decode()
        if _encoded(text) != node_id:
            return None  # another spelling of the same bytes: not an id this server wrote
        tag, rest = text[:1], text[1:]
        if tag == "R" and rest:
            return RunKey(rest)
        if tag == "D":
            return RecordKey(ObjectId(rest))
        if tag in ("C", "S"):
            length, _, keyed = rest.partition(":")
            run_id, key = keyed[: int(length)], keyed[int(length) :]
            if len(run_id) != int(length) or not run_id:
                return None
            if tag == "C":
                return CallKey(run_id, key) if key else None
            suspension, _, position = key.rpartition(":")
            return CallKey(run_id, None, suspension, int(position))
    except (binascii.Error, UnicodeDecodeError, ValueError, InvalidId):
        return None
    return None


@dataclass(frozen=True, slots=True)
class FoundCall:
    """A tool call, with its run and its place among the run's calls."""

    entry: RunEntry
    call: ToolCall
    position: int


Found = RunEntry | FoundCall | AuditRecord | None


async def nodes(context: Context, node_ids: list[str]) -> list[Found]:
    """Each id's object, where the caller may see it (else None, as for an unknown or a
    malformed id): runs and calls in one read of the run index, decision records in one
    read of the log (and, in a restricted scope, their runs with the others). Each id
    costs a row of the request's budget, taken before any read."""
    require(context.principal, Role.VIEWER)
    context.budget.take_rows(len(node_ids))
    keys = [parse(node_id) for node_id in node_ids]
    scope = context.principal.scope
    asked = [k.record_id for k in keys if isinstance(k, RecordKey)]
    records = await context.storage.decisions.get_many(asked)
    run_ids = {k.run_id for k in keys if isinstance(k, RunKey | CallKey)}
    if not scope.unrestricted:  # a record is seen where its run is (as decisionLog)
        run_ids |= {record.run_id for record in records.values()}
    entries = await context.storage.runs.get_many(sorted(run_ids))
    visible = {run_id: e for run_id, e in entries.items() if scope.allows(e)}
    found: list[Found] = []
    for key in keys:
        if isinstance(key, RunKey):
            found.append(visible.get(key.run_id))
        elif isinstance(key, CallKey):
            entry = visible.get(key.run_id)
            found.append(key.finds(entry) if entry else None)
        elif isinstance(key, RecordKey) and (record := records.get(key.record_id)):
            seen = scope.unrestricted or record.run_id in visible
            found.append(as_read(context, record) if seen else None)
        else:
            found.append(None)
    return found
