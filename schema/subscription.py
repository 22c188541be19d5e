"""The `Subscription` root: lists pushed again whenever what the caller may see changes.

Served over WebSocket (graphql-transport-ws, server/websocket.py). A subscription's pages
come from a feed shared by every subscriber of the same page (resolvers/live_pages.py):
one evaluation per change of the run index per distinct selection, arguments and scope.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import strawberry
from graphql import print_ast

from suspended_runs import resolvers
from suspended_runs.schema.agent_run import AgentRun
from suspended_runs.schema.connections import Connection, runs_connection
from suspended_runs.schema.filters import SuspendedRunsFilter
from suspended_runs.schema.page import SuspendedRunsPage
from suspended_runs.schema.selections import ContextInfo, selects

_Shown = TypeVar("_Shown")


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description=(
            "The first page of suspended runs (newest first, as `suspendedRuns` lists "
            "them), sent at once and again whenever it changes for this caller. "
            f"Page size defaults to {resolvers.DEFAULT_PAGE_SIZE}, at most "
            f"{resolvers.MAX_PAGE_SIZE}."
        )
    )
    async def suspended_runs(
        self,
        info: ContextInfo,
        filter: SuspendedRunsFilter | None = None,
        first: int | None = None,
    ) -> AsyncIterator[SuspendedRunsPage]:
        return _feed(info, filter, first, "total", SuspendedRunsPage.from_page, _same)

    @strawberry.subscription(
        description="The first page of suspended runs as a Relay connection "
        "(`suspendedRunsConnection`), sent at once and again whenever it changes for this "
        "caller."
    )
    async def suspended_runs_connection(
        self,
        info: ContextInfo,
        filter: SuspendedRunsFilter | None = None,
        first: int | None = None,
    ) -> AsyncIterator[Connection[AgentRun]]:
        return _feed(info, filter, first, "totalCount", runs_connection, _same_connection)


def _feed(
    info: ContextInfo,
    filter: SuspendedRunsFilter | None,
    first: int | None,
    total: str,
    shown: Callable[[resolvers.RunsPage], _Shown],
    same: Callable[[Any, Any], bool],
) -> AsyncIterator[_Shown]:
    """The shared feed of this page: `shown` of each evaluation that `same` tells apart
    from the last; `total` names the field that asks for the count."""
    context = info.context
    if context.live is None:
        raise RuntimeError("subscriptions are served over WebSocket only")
    paging = resolvers.paging_from_arguments(page=None, per_page=None, first=first, after=None)
    run_filter = (filter or SuspendedRunsFilter()).to_run_filter()
    with_total = selects(info.selected_fields[0].selections, total)
    # A feed is evaluated with its first subscriber's context: the key holds all that
    # changes an answer (the operation, its variables, the role, the scope, the groups,
    # and for `assignedToMe` who asks: credential, person and groups; for reviews, whose).
    resolvers.require(context.principal, resolvers.Role.VIEWER)
    principal = context.principal
    key = (
        print_ast(info._raw_info.operation),
        json.dumps(info.variable_values, sort_keys=True, default=str),
        principal.role,
        principal.scope,
        principal.groups,
        principal.names if run_filter.assigned_to_me else None,
        context.person if run_filter.reviews is not None else None,
    )

    async def evaluate() -> _Shown:
        budget = resolvers.RequestBudget(context.budget.limits)
        fresh = dataclasses.replace(context, budget=budget, shared={}, loaders={})
        page = await resolvers.suspended_runs(fresh, run_filter, paging, with_total=with_total)
        return shown(page)

    # An escalation changes who a list is assigned to with no write: read every second.
    ticking = run_filter.assigned_to_me and context.policy.reviews.escalating
    return context.live.subscribe(key, principal.subject, evaluate, same, ticking=ticking)


def _same(old: SuspendedRunsPage, new: SuspendedRunsPage) -> bool:
    return (old.runs, old.has_more, old.next_cursor, old.page.total) == (
        new.runs,
        new.has_more,
        new.next_cursor,
        new.page.total,
    )


def _same_connection(old: Connection[AgentRun], new: Connection[AgentRun]) -> bool:
    return (old.edges, old.page_info, old.counted) == (new.edges, new.page_info, new.counted)
