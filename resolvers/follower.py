"""`sync`: whether the lists are caught up with what Mastra wrote, for a dashboard's
"updating" sign; an instance stays ready (`/readyz`) however far behind it falls."""

from __future__ import annotations

from dataclasses import dataclass

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context


@dataclass(frozen=True, slots=True)
class FollowerStatus:
    caught_up: bool
    """Every change the follower has read is applied (polling: as of its last poll)."""
    behind_seconds: float | None
    """0 when caught up; else the age of the newest change applied; None when not known."""


def follower_status(context: Context) -> FollowerStatus:
    require(context.principal, Role.VIEWER)
    follower = context.storage.follower
    return FollowerStatus(caught_up=follower.caught_up, behind_seconds=follower.behind_seconds)
