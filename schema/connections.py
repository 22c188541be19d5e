"""Relay connections beside the pages: `suspendedRunsConnection`, `runsConnection`,
`decisionLogConnection` and `webhookDeliveriesConnection`, each
`{ edges { cursor node } pageInfo totalCount }`.

The shape that Apollo's `relayStylePagination`, urql's `relayPagination` and Relay's
`@connection` page through. Same filters, order, limits and cursors as the pages beside
them (a run's cursor is its keyset cursor, so any edge's cursor pages on from it);
`totalCount` costs what `total` costs, counted only when selected. They page forward
(`first`/`after`), so `hasPreviousPage` is false.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import strawberry

from suspended_runs import resolvers, storage
from suspended_runs.resolvers import webhooks as hooks
from suspended_runs.schema.agent import DecisionRecord
from suspended_runs.schema.agent_run import AgentRun
from suspended_runs.schema.filters import RunsFilter, SuspendedRunsFilter
from suspended_runs.schema.selections import ContextInfo, selects
from suspended_runs.schema.webhooks import WebhookDelivery

T = TypeVar("T")


@strawberry.type(description="Where a connection's page stands.")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool = strawberry.field(
        description="Always false: connections here page forward (first/after)."
    )
    start_cursor: str | None
    end_cursor: str | None = strawberry.field(description="Pass as `after` for the next page.")


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo
    count: strawberry.Private[Callable[[], Awaitable[int]]]
    counted: strawberry.Private[int | None] = None
    """The count, where it was counted with the page (what a subscription compares)."""

    @strawberry.field(description="Every match before paging; counted only when selected.")
    async def total_count(self) -> int:
        return await self.count()


def connection(
    edges: list[Edge[T]],
    has_more: bool,
    count: Callable[[], Awaitable[int]],
    counted: int | None = None,
) -> Connection[T]:
    start, end = (edges[0].cursor, edges[-1].cursor) if edges else (None, None)
    info = PageInfo(
        has_next_page=has_more, has_previous_page=False, start_cursor=start, end_cursor=end
    )
    return Connection(edges=edges, page_info=info, count=count, counted=counted)


def runs_connection(page: resolvers.RunsPage) -> Connection[AgentRun]:
    edges = [
        Edge(cursor=storage.Cursor(e.created_at, e.run_id).encode(), node=AgentRun.from_entry(e))
        for e in page.runs
    ]
    return connection(edges, page.has_more, page.get_total, page.total)


@strawberry.type
class Connections:
    @strawberry.field(
        description="suspendedRuns as a Relay connection: the same filter, order and limits, "
        "paged by first/after."
    )
    async def suspended_runs_connection(
        self,
        info: ContextInfo,
        filter: SuspendedRunsFilter | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[AgentRun]:
        paging = resolvers.paging_from_arguments(page=None, per_page=None, first=first, after=after)
        result = await resolvers.suspended_runs(
            info.context,
            (filter or SuspendedRunsFilter()).to_run_filter(),
            paging,
            with_total=selects(info.selected_fields[0].selections, "totalCount"),
        )
        return runs_connection(result)

    @strawberry.field(
        description="runs as a Relay connection: the same filter, order and limits, paged by "
        "first/after."
    )
    async def runs_connection(
        self,
        info: ContextInfo,
        filter: RunsFilter | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[AgentRun]:
        paging = resolvers.paging_from_arguments(page=None, per_page=None, first=first, after=after)
        result = await resolvers.runs(
            info.context,
            (filter or RunsFilter()).to_run_filter(),
            paging,
            with_total=selects(info.selected_fields[0].selections, "totalCount"),
        )
        return runs_connection(result)

    @strawberry.field(
        description="decisionLog as a Relay connection: a run's records, oldest first, the "
        "same limits."
    )
    async def decision_log_connection(
        self,
        info: ContextInfo,
        run_id: strawberry.ID,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[DecisionRecord]:
        page = await resolvers.decision_log_page(info.context, run_id, first, after)
        edges = [
            Edge(cursor=resolvers.record_cursor(r), node=DecisionRecord.from_record(r))
            for r in page.records
        ]
        return connection(edges, page.has_more, page.count)

    @strawberry.field(
        description="webhookDeliveries as a Relay connection: newest first, the same limits "
        "(admin)."
    )
    async def webhook_deliveries_connection(
        self,
        info: ContextInfo,
        webhook_id: strawberry.ID,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[WebhookDelivery]:
        page = await hooks.webhook_deliveries(info.context, webhook_id, first, after)
        edges = [
            Edge(cursor=d.delivery_id, node=WebhookDelivery.from_stored(d)) for d in page.deliveries
        ]
        return connection(edges, page.has_more, page.count)
