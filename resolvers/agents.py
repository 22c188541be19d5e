"""`agents`, `startRun`, `reconcileRuns`: what a dashboard filters by, starts, and rebuilds."""

from __future__ import annotations

from dataclasses import dataclass

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.outcomes import (
    ExecutorUnavailable,
    Forbidden,
    RunStarted,
)
from suspended_runs.runtime import NotApplied
from suspended_runs.storage import ReconcileReport, RunFilter, Runtime, deadlines


@dataclass(frozen=True, slots=True)
class AgentSummary:
    agent_id: str
    runtime: Runtime
    suspended_runs: int


async def agents(context: Context) -> list[AgentSummary]:
    """The registered Python agents, and every agent seen in the run index (in scope).
    Read once per request, however many aliases ask (the counts come from the tallies in
    memory once they are read); each alias costs a row per agent it lists."""
    require(context.principal, Role.VIEWER)
    listed: list[AgentSummary] = await context.once("agents", lambda: _summaries(context))
    context.budget.take_rows(len(listed))
    return listed


async def _summaries(context: Context) -> list[AgentSummary]:
    scope = context.principal.scope
    counts = await context.storage.runs.suspended_by_agent(
        RunFilter(resource_ids=scope.resource_ids, agent_ids=scope.agent_ids)
    )
    for kind, runtime in context.runtimes.by_kind.items():
        for agent_id in runtime.agent_ids():
            if scope.allows_agent(agent_id):
                counts.setdefault((agent_id, kind.value), 0)
    return [
        AgentSummary(agent_id, Runtime(runtime), count)
        for (agent_id, runtime), count in sorted(counts.items())
    ]


async def start_run(
    context: Context,
    agent_id: str,
    prompt: str,
    thread_id: str | None,
    resource_id: str | None,
) -> RunStarted | ExecutorUnavailable | Forbidden:
    context.budget.limits.check_text(prompt, "prompt")
    principal = context.principal
    if not principal.may(Role.ADMIN):
        return Forbidden(Role.ADMIN.value, "starting runs needs the admin role")
    if not (
        principal.scope.allows_agent(agent_id) and principal.scope.allows_resource(resource_id)
    ):
        return Forbidden(Role.ADMIN.value, "that agent or resource is outside your scope")
    runtime = context.runtimes.starting(agent_id)
    if runtime is None:
        message = f"no agent {agent_id!r} can be started here (AGENTS, LANGGRAPH_GRAPHS)"
        return ExecutorUnavailable(None, agent_id, message)
    # Recorded for review policies' forbidSelfApproval (an open server's caller is anonymous).
    starter = principal.subject if principal.authenticated else None
    try:
        entry = await runtime.start(agent_id, prompt, thread_id, resource_id, starter)
    except NotApplied as exc:  # a graph that takes no message list, or wrote nothing
        return ExecutorUnavailable(None, agent_id, str(exc))
    return RunStarted(entry)


async def reconcile(context: Context) -> ReconcileReport | Forbidden:
    """Rebuilds the whole index, every tenant's runs: only for an admin who sees them all."""
    if not context.principal.may(Role.ADMIN):
        return Forbidden(Role.ADMIN.value, "reconciling needs the admin role")
    if not context.principal.scope.unrestricted:
        return Forbidden(Role.ADMIN.value, 'reconciling needs an admin whose scope is "all"')
    # The follower's work, with its limits: a large index takes longer than a request's deadline.
    return await deadlines.handed_on(context.storage.follower.reconcile())
