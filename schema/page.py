"""`SuspendedRunsPage` and `RunsPage`: one page of runs, with what a client needs to ask
for the next."""

from __future__ import annotations

from typing import Self

import strawberry

from suspended_runs import resolvers
from suspended_runs.schema.agent_run import AgentRun


async def _total(root: SuspendedRunsPage | RunsPage) -> int:
    return await root.page.get_total()


@strawberry.type
class SuspendedRunsPage:
    runs: list[AgentRun]
    total: int = strawberry.field(
        resolver=_total, description="Matching runs before paging; counted only when selected."
    )
    has_more: bool
    next_cursor: str | None = strawberry.field(
        description="Pass as `after` for the next page (keyset paging); null on the last page."
    )
    page: strawberry.Private[resolvers.RunsPage]

    @classmethod
    def from_page(cls, page: resolvers.RunsPage) -> Self:
        return cls(
            runs=[AgentRun.from_entry(entry) for entry in page.runs],
            has_more=page.has_more,
            next_cursor=page.next_cursor,
            page=page,
        )


@strawberry.type
class RunsPage(SuspendedRunsPage):
    pass
