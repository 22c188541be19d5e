"""The runtimes of this process, by kind, with the one claim keeper and one set of
background continuations that they share."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from suspended_runs.runtime.background import Background
from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.protocol import AgentRuntime
from suspended_runs.storage import RunEntry, Runtime

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Runtimes:
    claims: ClaimKeeper
    by_kind: dict[Runtime, AgentRuntime]
    background: Background = field(default_factory=Background)

    def for_run(self, entry: RunEntry) -> AgentRuntime:
        return self.by_kind[entry.runtime]

    def starting(self, agent_id: str) -> AgentRuntime | None:
        """The runtime that can start runs of `agent_id`, if any."""
        return next(
            (
                runtime
                for runtime in self.by_kind.values()
                if runtime.capabilities.starts_runs and runtime.serves(agent_id)
            ),
            None,
        )

    async def drain(self, within: float) -> None:
        await self.background.drain(within)
