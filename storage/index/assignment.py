"""Calls assigned to one caller, as the run index is asked for them (`assignedToMe`).

Who a pending call is assigned to follows from a review policy, matched by the run's agent
and the call's tool, and from how long the run has waited (escalation). The policies are
settings, not stored on entries: a caller's assignment is spelled out, per agent, as the
tools whose calls are theirs and the span of `suspendedAt` in which they are (resolvers/
assignment.py). Each band is an equality on `agentId` (an index serves it as any agent
filter) with conditions on the entry's own calls and its suspension, which one entry
answers. The bands of an agent never overlap, so a list and its count are their sums.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from suspended_runs.storage.types import Document

TOOL_CALLS = "toolCalls"


@dataclass(frozen=True, slots=True)
class AssignedBand:
    """Runs of `agent_id` with a pending call of one of `tool_names` (None: a call whose
    tool could not be read), suspended after `suspended_after` (exclusive; None: open) up
    to `suspended_upto` (inclusive; None: open, and a run with no suspension time is in
    the band: it waits unescalated)."""

    agent_id: str
    tool_names: tuple[str | None, ...]
    suspended_after: datetime | None = None
    suspended_upto: datetime | None = None

    def query(self) -> Document:
        """This band's conditions, beside a list query's equalities."""
        pending = {"decision": None, "toolName": {"$in": list(self.tool_names)}}
        query: Document = {"agentId": self.agent_id, TOOL_CALLS: {"$elemMatch": pending}}
        after, upto = self.suspended_after, self.suspended_upto
        if upto is not None:
            query["suspendedAt"] = {"$lte": upto} if after is None else {"$gt": after, "$lte": upto}
        elif after is not None:
            # `$not`: a run that states no suspension time waits unescalated, in this band.
            query["suspendedAt"] = {"$not": {"$lte": after}}
        return query


def assigned_queries(query: Document, bands: Iterable[AssignedBand]) -> list[Document]:
    """`query` narrowed to each band its agent condition allows (none: nothing matches)."""
    narrowed = []
    for band in bands:
        wanted = query.get("agentId")
        if isinstance(wanted, str) and wanted != band.agent_id:
            continue
        if isinstance(wanted, dict) and band.agent_id not in wanted.get("$in", ()):
            continue
        narrowed.append({**query, **band.query()})
    return narrowed


CHECKED_FIELDS: Document = {
    f"{TOOL_CALLS}.toolName": 1,
    f"{TOOL_CALLS}.decision.action": 1,
    "suspendedAt": 1,
}
"""What a band's check (`checked`, `pending_tools`) reads of an entry."""


def checked(shape: Document) -> tuple[Document, Callable[[Document], bool] | None]:
    """A band's query as the database is asked it (its equalities, which an index serves),
    and the check of its calls and its suspension, made here of each entry read; `shape`
    and None for any other. The embedded server scans every entry for a query that names
    a field no index holds; a real MongoDB would check them on each entry read, as here."""
    tools = band_tools(shape.get(TOOL_CALLS))
    if tools is None:
        return shape, None
    asked = {k: v for k, v in shape.items() if k not in (TOOL_CALLS, "suspendedAt")}
    suspended = shape.get("suspendedAt")

    def check(doc: Document) -> bool:
        return bool(pending_tools(doc) & tools) and _suspended_within(
            doc.get("suspendedAt"), suspended
        )

    return asked, check


def _suspended_within(moment: object, condition: Document | None) -> bool:
    """`moment` against `AssignedBand.query`'s condition on `suspendedAt`."""
    if condition is None:
        return True
    if "$not" in condition:
        return not (isinstance(moment, datetime) and moment <= condition["$not"]["$lte"])
    after = condition.get("$gt")
    return (
        isinstance(moment, datetime)
        and (after is None or moment > after)
        and moment <= condition["$lte"]
    )


def band_tools(condition: object) -> frozenset[str | None] | None:
    """The tools of a band's condition on pending calls (`AssignedBand.query`); None for
    anything else."""
    if not isinstance(condition, dict) or set(condition) != {"$elemMatch"}:
        return None
    match = condition["$elemMatch"]
    if not isinstance(match, dict) or set(match) != {"decision", "toolName"}:
        return None
    named = match["toolName"].get("$in") if isinstance(match["toolName"], dict) else None
    if match["decision"] is not None or not isinstance(named, list):
        return None
    return frozenset(named)


def pending_tools(doc: Document) -> frozenset[str | None]:
    """The tools of an entry's pending calls, as `tool_name` reads each."""
    calls = doc.get(TOOL_CALLS)
    return frozenset(
        tool_name(call.get("toolName"))
        for call in (calls if isinstance(calls, list) else ())
        if isinstance(call, dict) and call.get("decision") is None
    )


def tool_name(value: object) -> str | None:
    """A call's tool as the index reads it: a name that is not a string is None, as an
    entry reads it (storage/index/entry.py), and as review policies then match it."""
    return value if isinstance(value, str) else None


def tool_order(name: str | None) -> tuple[bool, str]:
    """Tools in a stable order: the unreadable one (None) first, then by name."""
    return name is not None, name or ""
