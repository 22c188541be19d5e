"""`agents`, `startRun` and `decisionLog`: what a dashboard filters by, starts, and audits."""

from __future__ import annotations

from dataclasses import dataclass

from resolvers.context import Context
from resolvers.outcomes import ExecutorUnavailable, RunStarted
from storage import AuditRecord, Runtime


@dataclass(frozen=True, slots=True)
class AgentSummary:
    agent_id: str
    runtime: Runtime
    suspended_runs: int


async def agents(context: Context) -> list[AgentSummary]:
    """The registered Python agents, and every agent seen in the run index."""
    counts = await context.storage.runs.suspended_by_agent()
    for agent_id in context.runtime.agents:
        counts.setdefault((agent_id, Runtime.PYTHON.value), 0)
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
) -> RunStarted | ExecutorUnavailable:
    if not context.runtime.has_agent(agent_id):
        return ExecutorUnavailable(None, agent_id, f"no Python agent {agent_id!r} is registered")
    entry = await context.runtime.start(agent_id, prompt, thread_id, resource_id)
    return RunStarted(entry)


async def decision_log(context: Context, run_id: str) -> list[AuditRecord]:
    return await context.storage.decisions.for_run(run_id)
