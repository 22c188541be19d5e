"""decisionStats: how many decisions of each kind, and how long people took to make them.

Counted from the audit log's applied decisions in a window of decision times (each record
carries its run's agent, tool, scope fields and suspension time), within the caller's
scope and the filter. A time to decision runs from the run's suspension to the decision
(under a quorum, to the Nth approval); an expiry (declined as `system` when a timeout
ran out) is counted apart, and is not a person's time. Median, and p90 by nearest rank.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.resolvers.expiry import EXPIRY_REASON, SYSTEM
from suspended_runs.storage import Document, RunFilter

MAX_DECISIONS = 100_000
"""Records one answer reads at most: a window beyond that is refused, not cut silently."""


@dataclass(frozen=True, slots=True)
class DecisionTimes:
    key: str
    decisions: int
    median_seconds: float | None
    p90_seconds: float | None


@dataclass(frozen=True, slots=True)
class DecisionStats:
    approved: int
    declined: int
    resumed: int
    expired: int
    overall: DecisionTimes
    by_agent: list[DecisionTimes]
    by_tool: list[DecisionTimes]


async def decision_stats(
    context: Context, run_filter: RunFilter, decided_from: datetime, decided_to: datetime
) -> DecisionStats:
    require(context.principal, Role.VIEWER)
    if decided_from > decided_to:
        raise BadUserInput("decidedFrom is after decidedTo", argument="decidedFrom")
    if run_filter.assigned_to_me:
        raise BadUserInput(
            "assignedToMe lists calls still waiting, not decided ones",
            argument="filter.assignedToMe",
        )
    if run_filter.reviews is not None:
        raise BadUserInput("a review is of a waiting run", argument="filter.inReview")
    records = await context.storage.decisions.applied_between(
        context.principal.scope.narrow(run_filter), decided_from, decided_to, MAX_DECISIONS + 1
    )
    if len(records) > MAX_DECISIONS:
        raise BadUserInput(
            f"more than {MAX_DECISIONS} decisions in that window: ask a shorter one",
            argument="decidedFrom",
        )
    expired = [r for r in records if _expired(r)]
    by_people = [r for r in records if not _expired(r)]
    counted = Counter(r["action"] for r in by_people)
    return DecisionStats(
        approved=counted["approve"],
        declined=counted["decline"],
        resumed=counted["resume"],
        expired=len(expired),
        overall=_times("all", by_people),
        by_agent=_grouped(by_people, "agentId"),
        by_tool=_grouped(by_people, "toolName"),
    )


def _expired(record: Document) -> bool:
    reason = record.get("reason")
    return (
        record.get("by") == SYSTEM.subject
        and isinstance(reason, str)
        and reason.startswith(EXPIRY_REASON)
    )


def _seconds(records: list[Document]) -> list[float]:
    return sorted(
        max((r["at"] - r["suspendedAt"]).total_seconds(), 0.0)
        for r in records
        if isinstance(r.get("suspendedAt"), datetime) and isinstance(r.get("at"), datetime)
    )


def _times(key: str, records: list[Document]) -> DecisionTimes:
    seconds = _seconds(records)
    if not seconds:
        return DecisionTimes(key, len(records), None, None)
    p90 = seconds[math.ceil(0.9 * len(seconds)) - 1]
    return DecisionTimes(key, len(records), statistics.median(seconds), p90)


def _grouped(records: list[Document], field: str) -> list[DecisionTimes]:
    groups: dict[str, list[Document]] = defaultdict(list)
    for record in records:
        groups[str(record.get(field) or "")].append(record)
    return [_times(key, groups[key]) for key in sorted(groups)]
