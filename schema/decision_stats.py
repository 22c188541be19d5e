"""`DecisionStats`: how many decisions of each kind, and how long people took."""

from __future__ import annotations

import strawberry

from suspended_runs import resolvers


@strawberry.type(description="Times from a run's suspension to its decisions, in seconds.")
class DecisionTimes:
    key: str = strawberry.field(description="The agent id or tool name ('all' overall).")
    decisions: int
    median_seconds: float | None
    p90_seconds: float | None = strawberry.field(description="By nearest rank.")

    @classmethod
    def from_times(cls, times: resolvers.DecisionTimes) -> DecisionTimes:
        return cls(
            key=times.key,
            decisions=times.decisions,
            median_seconds=times.median_seconds,
            p90_seconds=times.p90_seconds,
        )


@strawberry.type(
    description="Decisions applied in a window, by action, and the time people took to "
    "make them (an expiry is counted apart and timed with no one)."
)
class DecisionStats:
    approved: int
    declined: int = strawberry.field(description="By people: expiries are `expired`.")
    resumed: int
    expired: int
    times: DecisionTimes = strawberry.field(description="Every decision by a person.")
    by_agent: list[DecisionTimes]
    by_tool: list[DecisionTimes]

    @classmethod
    def from_stats(cls, stats: resolvers.DecisionStats) -> DecisionStats:
        return cls(
            approved=stats.approved,
            declined=stats.declined,
            resumed=stats.resumed,
            expired=stats.expired,
            times=DecisionTimes.from_times(stats.overall),
            by_agent=[DecisionTimes.from_times(t) for t in stats.by_agent],
            by_tool=[DecisionTimes.from_times(t) for t in stats.by_tool],
        )
