"""What a reviewer reads beside a pending call: the run's conversation (why the agent
asks), and whether a decision on the run can be carried out here at all."""

from __future__ import annotations

from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.storage import RunEntry, Runtime
from suspended_runs.storage.snapshots.messages import RunMessage

MAX_MESSAGES = 100


async def run_messages(context: Context, entry: RunEntry, last: int) -> list[RunMessage]:
    """The run's last `last` messages, oldest first: one snapshot read, charged as a row."""
    if not 1 <= last <= MAX_MESSAGES:
        raise BadUserInput(f"last must be 1 to {MAX_MESSAGES}", argument="last")
    context.budget.take_rows(1)
    return await context.storage.messages(entry, last)


def not_continuable_reason(context: Context, entry: RunEntry) -> str | None:
    """Why no runtime here can continue the run (None: one can)."""
    if context.runtimes.for_run(entry).serves(entry.agent_id):
        return None
    if entry.runtime is Runtime.MASTRA:
        return (
            f"no Mastra server is configured for agent {entry.agent_id!r} (MASTRA_URL or "
            "MASTRA_AGENT_URLS): decide it on Mastra itself"
        )
    if entry.runtime is Runtime.LANGGRAPH:
        return f"no LangGraph graph is registered for agent {entry.agent_id!r} on this server"
    return f"no Python agent {entry.agent_id!r} is registered on this server (AGENTS)"
