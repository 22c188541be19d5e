"""`SuspendedRunsFilter`: the filters of `suspendedRuns`, as `listSuspendedRuns` has them;
`RunsFilter`: the same, and the states to list, for `runs`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import strawberry

from suspended_runs import storage

# RunStatus as GraphQL shows it, registered before a filter names it.
from suspended_runs.schema import agent_run  # noqa: F401


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
    assigned_to_me: bool | None = strawberry.field(
        default=None,
        description="true: only SUSPENDED runs with a pending call whose `assignedTo` names "
        "the caller (its subject, or group:<name> of one of its groups), by a review policy "
        "or a hand-over (assignRun); false or unset: any caller's.",
    )

    in_review: bool | None = strawberry.field(
        default=None,
        description="true: only runs someone reviews now (startReview); false: only runs "
        "nobody reviews.",
    )
    in_review_by_me: bool | None = strawberry.field(
        default=None,
        description="true: only runs the caller's person reviews now; false: all others.",
    )

    def to_run_filter(self) -> storage.RunFilter:
        return storage.RunFilter(
            agent_id=self.agent_id,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            from_date=self.from_date,
            to_date=self.to_date,
            assigned_to_me=bool(self.assigned_to_me),
            reviews=storage.ReviewState.wanted(self.in_review, self.in_review_by_me),
        )


@strawberry.input(description="Every field is optional; given fields must all match.")
class RunsFilter(SuspendedRunsFilter):
    status: list[storage.RunStatus] | None = strawberry.field(
        default=None, description="The states to list; unset: every state."
    )
    has_problems: bool | None = strawberry.field(
        default=None,
        description="Only runs whose snapshot had fields that could not be read (`problems`); "
        "false: only the others.",
    )

    def to_run_filter(self) -> storage.RunFilter:
        statuses = (
            frozenset(self.status) if self.status is not None else frozenset(storage.RunStatus)
        )
        return dataclasses.replace(
            super().to_run_filter(), statuses=statuses, has_problems=self.has_problems
        )
