"""LangGraph threads' runs: listed from the saver's documents by the follower; continued
here only through a graph registered to resume them.

Without a registered graph (this version registers none) no decision reaches a thread:
its runs are `continuable: false`, and a decision answers `ExecutorUnavailable` before
anything is claimed or written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.errors import ArgsRejected, NotApplied
from suspended_runs.runtime.protocol import Capabilities, Continuation
from suspended_runs.storage import RunEntry, RunStatus, Runtime, ToolCall


class LangGraphRuntime:
    kind = Runtime.LANGGRAPH
    capabilities = Capabilities(starts_runs=False, continues_each_decision=False, edits_args=False)

    def __init__(self, claims: ClaimKeeper) -> None:
        self.claims = claims

    def serves(self, agent_id: str) -> bool:
        return False

    def agent_ids(self) -> Iterable[str]:
        return ()

    async def start(
        self,
        agent_id: str,
        prompt: str,
        thread_id: str | None,
        resource_id: str | None,
        started_by: str | None = None,
    ) -> RunEntry:
        raise NotApplied(f"no LangGraph graph is registered for agent {agent_id!r}")

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        return None

    def check_edited_args(self, entry: RunEntry, call: ToolCall, args: Any) -> None:
        raise ArgsRejected("no LangGraph graph is registered to check these arguments")

    async def record_decision(self, decided: RunEntry) -> None:
        return None

    async def continue_run(self, continuation: Continuation) -> RunEntry:
        raise NotApplied("no LangGraph graph is registered to resume this thread")

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        return None

    async def release(self, entry: RunEntry) -> RunEntry:
        return entry.finished(RunStatus.ENDED, None, self.claims.clock())

    async def cancel(self, claimed: RunEntry, reason: str) -> RunEntry:
        return claimed.finished(RunStatus.CANCELLED, None, self.claims.clock())
