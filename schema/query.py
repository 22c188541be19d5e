"""The `Query` root: reads of the run index."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry

from suspended_runs import resolvers, storage
from suspended_runs.schema.agent import Agent, DecisionRecord
from suspended_runs.schema.agent_run import AgentRun, AgentRunToolCall
from suspended_runs.schema.connections import Connections
from suspended_runs.schema.decision_stats import DecisionStats
from suspended_runs.schema.filters import RunsFilter, SuspendedRunsFilter
from suspended_runs.schema.follower import SyncStatus
from suspended_runs.schema.node import Node
from suspended_runs.schema.page import RunsPage, SuspendedRunsPage
from suspended_runs.schema.selections import ContextInfo, selects
from suspended_runs.schema.viewer import Viewer
from suspended_runs.schema.webhooks import Webhook, WebhookDeliveriesPage
from suspended_runs.schema.webhooks import page as deliveries_page


@strawberry.type
class Query(Connections):
    @strawberry.field(
        description=(
            "Suspended runs, newest first (createdAt desc, runId). Page with page/perPage "
            "(offset, zero-based) or first/after (keyset: stable while runs come and go). "
            f"Page size defaults to {resolvers.DEFAULT_PAGE_SIZE}, "
            f"at most {resolvers.MAX_PAGE_SIZE}."
        )
    )
    async def suspended_runs(
        self,
        info: ContextInfo,
        filter: SuspendedRunsFilter | None = None,
        page: int | None = None,
        per_page: int | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> SuspendedRunsPage:
        paging = resolvers.paging_from_arguments(
            page=page, per_page=per_page, first=first, after=after
        )
        result = await resolvers.suspended_runs(
            info.context,
            (filter or SuspendedRunsFilter()).to_run_filter(),
            paging,
            with_total=selects(info.selected_fields[0].selections, "total"),
        )
        return SuspendedRunsPage.from_page(result)

    @strawberry.field(
        description=(
            "Runs in any state (the filter's `status`; unset: all), newest first, paged as "
            "suspendedRuns: for views of recently decided, failed or stalled runs."
        )
    )
    async def runs(
        self,
        info: ContextInfo,
        filter: RunsFilter | None = None,
        page: int | None = None,
        per_page: int | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> RunsPage:
        paging = resolvers.paging_from_arguments(
            page=page, per_page=per_page, first=first, after=after
        )
        result = await resolvers.runs(
            info.context,
            (filter or RunsFilter()).to_run_filter(),
            paging,
            with_total=selects(info.selected_fields[0].selections, "total"),
        )
        return RunsPage.from_page(result)

    @strawberry.field(
        description="Decisions applied between decidedFrom and decidedTo (unset: all kept, "
        "up to now) on runs the filter and the caller's scope hold (the filter's states are "
        "not asked), by action, with median and p90 seconds from suspension to decision, "
        "by agent and by tool."
    )
    async def decision_stats(
        self,
        info: ContextInfo,
        filter: RunsFilter | None = None,
        decided_from: datetime | None = None,
        decided_to: datetime | None = None,
    ) -> DecisionStats:
        stats = await resolvers.decision_stats(
            info.context,
            (filter or RunsFilter()).to_run_filter(),
            decided_from or datetime(1970, 1, 1, tzinfo=UTC),
            decided_to or datetime.now(UTC),
        )
        return DecisionStats.from_stats(stats)

    @strawberry.field(description="One run by id, in any state; null when unknown.")
    async def agent_run(self, info: ContextInfo, run_id: strawberry.ID) -> AgentRun | None:
        entry = await resolvers.agent_run(info.context, run_id)
        return AgentRun.from_entry(entry) if entry else None

    @strawberry.field(
        description="The object with this global id (a run, a tool call, a decision record), "
        "as `agentRun` would answer it: null when unknown, outside the caller's scope, or "
        "not an id this server wrote."
    )
    async def node(self, info: ContextInfo, id: strawberry.ID) -> Node | None:
        [found] = await resolvers.nodes(info.context, [id])
        return shown(found)

    @strawberry.field(
        description="The objects of these global ids, in their order, each as `node` would "
        "answer it; one read of the run index for every run and call. Each id costs a row "
        "of MAX_ROWS_PER_REQUEST."
    )
    async def nodes(self, info: ContextInfo, ids: list[strawberry.ID]) -> list[Node | None]:
        return [shown(found) for found in await resolvers.nodes(info.context, list(ids))]

    @strawberry.field(
        description="Registered Python agents and every agent seen in Mastra's snapshots."
    )
    async def agents(self, info: ContextInfo) -> list[Agent]:
        return [Agent.from_summary(s) for s in await resolvers.agents(info.context)]

    @strawberry.field(
        description="Decisions asked about a run and operator actions on it, oldest first: "
        f"`first` records (default {resolvers.DEFAULT_LOG_PAGE}, at most "
        f"{resolvers.MAX_LOG_PAGE}) after the record whose `cursor` is `after`."
    )
    async def decision_log(
        self,
        info: ContextInfo,
        run_id: strawberry.ID,
        first: int | None = None,
        after: str | None = None,
    ) -> list[DecisionRecord]:
        records = await resolvers.decision_log(info.context, run_id, first, after)
        return [DecisionRecord.from_record(r) for r in records]

    @strawberry.field(
        description="Who is asking: the name decisions are recorded under, and the role (any "
        "caller may ask, whatever its role)."
    )
    def viewer(self, info: ContextInfo) -> Viewer:
        return Viewer.from_caller(resolvers.viewer(info.context))

    @strawberry.field(description="Every webhook (admin; a scoped admin: those they made).")
    async def webhooks(self, info: ContextInfo) -> list[Webhook]:
        return [Webhook.from_stored(w) for w in await resolvers.webhooks.webhooks(info.context)]

    @strawberry.field(
        description="A webhook's deliveries, newest first: `first` (default "
        f"{resolvers.webhooks.DEFAULT_DELIVERIES_PAGE}, at most "
        f"{resolvers.webhooks.MAX_DELIVERIES_PAGE}) after the delivery `after` names (admin)."
    )
    async def webhook_deliveries(
        self,
        info: ContextInfo,
        webhook_id: strawberry.ID,
        first: int | None = None,
        after: str | None = None,
    ) -> WebhookDeliveriesPage:
        found = await resolvers.webhooks.webhook_deliveries(info.context, webhook_id, first, after)
        return deliveries_page(found)

    @strawberry.field(
        description="Whether the lists are caught up with the snapshots (a dashboard's "
        "'updating' sign); any role that may read runs may ask."
    )
    def sync(self, info: ContextInfo) -> SyncStatus:
        return SyncStatus.from_status(resolvers.follower_status(info.context))


def shown(found: resolvers.Found) -> Node | None:
    """The GraphQL object of what a global id names."""
    if isinstance(found, storage.RunEntry):
        return AgentRun.from_entry(found)
    if isinstance(found, resolvers.FoundCall):
        return AgentRunToolCall.from_entry(found.call, found.entry, found.position)
    if isinstance(found, storage.AuditRecord):
        return DecisionRecord.from_record(found)
    return None
