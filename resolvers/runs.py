"""Run queries: `suspendedRuns` and `runs` (offset or keyset paging), and `agentRun`.

Arguments are checked here, where the client's words are still known; storage only
ever sees a valid filter, a bounded limit and a decoded cursor.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from suspended_runs.resolvers import assignment
from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.storage import (
    Cursor,
    InvalidCursor,
    RunEntry,
    RunFilter,
    RunIndex,
    RunStatus,
)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(slots=True)
class RunsPage:
    runs: list[RunEntry]
    has_more: bool
    next_cursor: str | None
    runs_index: RunIndex
    run_filter: RunFilter
    total: int | None = None
    """Counted with the page when the query selects it, else on first request."""

    async def get_total(self) -> int:
        if self.total is None:
            self.total = await self.runs_index.count(self.run_filter)
        return self.total


@dataclass(frozen=True, slots=True)
class Paging:
    limit: int
    skip: int = 0
    after: Cursor | None = None


def paging_from_arguments(
    *, page: int | None, per_page: int | None, first: int | None, after: str | None
) -> Paging:
    """Offset paging (`page`/`perPage`, the seed's) or keyset paging (`first`/`after`)."""
    offset = page is not None or per_page is not None
    if offset and (first is not None or after is not None):
        raise BadUserInput(
            "use either page/perPage (offset paging) or first/after (keyset paging), not both",
            argument="first" if first is not None else "after",
        )
    if offset:
        if per_page is not None and per_page < 1:
            raise BadUserInput("perPage must be a positive integer", argument="perPage")
        if page is not None and page < 0:
            raise BadUserInput("page must be a non-negative integer", argument="page")
        size = _bounded(per_page, "perPage")
        return Paging(limit=size, skip=(page or 0) * size)
    if first is not None and first < 1:
        raise BadUserInput("first must be a positive integer", argument="first")
    cursor = None
    if after is not None:
        try:
            cursor = Cursor.decode(after)
        except InvalidCursor as exc:
            raise BadUserInput(str(exc), argument="after") from None
    return Paging(limit=_bounded(first, "first"), after=cursor)


def _bounded(size: int | None, argument: str) -> int:
    if size is None:
        return DEFAULT_PAGE_SIZE
    if size > MAX_PAGE_SIZE:
        raise BadUserInput(f"{argument} must be at most {MAX_PAGE_SIZE}", argument=argument)
    return size


def check_filter(run_filter: RunFilter) -> RunFilter:
    if not run_filter.statuses:
        raise BadUserInput("status must name at least one state", argument="filter.status")
    if run_filter.from_date and run_filter.to_date and run_filter.from_date > run_filter.to_date:
        raise BadUserInput("fromDate must not be after toDate", argument="filter.fromDate")
    return run_filter


async def suspended_runs(
    context: Context, run_filter: RunFilter, paging: Paging, *, with_total: bool
) -> RunsPage:
    """Runs waiting for decisions: the filter's states are SUSPENDED only."""
    only_suspended = replace(run_filter, statuses=frozenset({RunStatus.SUSPENDED}))
    return await runs(context, only_suspended, paging, with_total=with_total)


async def runs(
    context: Context, run_filter: RunFilter, paging: Paging, *, with_total: bool
) -> RunsPage:
    """Runs in the filter's states (recently decided, failed, stalled, ...), newest first."""
    require(context.principal, Role.VIEWER)
    check_filter(run_filter)
    context.budget.take_rows(paging.skip + paging.limit)  # the rows skipped are read too
    index = context.storage.runs
    run_filter = await assignment.narrowed(context, context.principal.scope.narrow(run_filter))
    # One more than the page tells whether there is a next page without counting.
    fetch = index.page(run_filter, limit=paging.limit + 1, skip=paging.skip, after=paging.after)
    if with_total:
        entries, total = await asyncio.gather(fetch, index.count(run_filter))
    else:
        entries, total = await fetch, None
    has_more = len(entries) > paging.limit
    entries = entries[: paging.limit]
    last = entries[-1] if has_more and entries else None
    return RunsPage(
        runs=entries,
        has_more=has_more,
        next_cursor=Cursor(last.created_at, last.run_id).encode() if last else None,
        runs_index=index,
        run_filter=run_filter,
        total=total,
    )


async def agent_run(context: Context, run_id: str) -> RunEntry | None:
    """The run, or None when it is unknown or outside the caller's scope (the same answer)."""
    require(context.principal, Role.VIEWER)
    context.budget.take_rows(1)
    entry = await context.storage.runs.get(run_id)
    return entry if entry is not None and context.principal.scope.allows(entry) else None
