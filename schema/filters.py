"""`SuspendedRunsFilter`: the filters of `suspendedRuns`, as `listSuspendedRuns` has them."""

from __future__ import annotations

from datetime import datetime

import strawberry

from suspended_runs import storage


@strawberry.input(description="Every field is optional; given fields must all match.")
class SuspendedRunsFilter:
    agent_id: strawberry.ID | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    from_date: datetime | None = strawberry.field(
        default=None, description="Runs created at or after this time."
    )
    to_date: datetime | None = strawberry.field(
        default=None, description="Runs created at or before this time."
    )

    def to_run_filter(self) -> storage.RunFilter:
        return storage.RunFilter(
            agent_id=self.agent_id,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            from_date=self.from_date,
            to_date=self.to_date,
        )
