"""`SyncStatus`: how far the run index is behind the snapshots, as `Query.sync` shows it."""

from __future__ import annotations

import strawberry

from suspended_runs import resolvers


@strawberry.type(
    description="Whether the lists show everything Mastra wrote: false while the follower "
    "applies a burst or a downtime's writes (the lists are then behind, never wrong)."
)
class SyncStatus:
    caught_up: bool = strawberry.field(
        description="Every change read from the snapshots is applied (polling: as of the "
        "last poll)."
    )
    behind_seconds: float | None = strawberry.field(
        description="0 when caught up; else the age of the newest change applied; null "
        "when not known yet."
    )

    @classmethod
    def from_status(cls, status: resolvers.FollowerStatus) -> SyncStatus:
        return cls(caught_up=status.caught_up, behind_seconds=status.behind_seconds)
