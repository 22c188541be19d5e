"""How this server treats decisions, from its settings: when pending approvals expire,
and how many decisions one `decideToolCalls` may carry and continue at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class DecisionPolicy:
    timeout: timedelta | None = None
    """How long an approval may wait before it is declined; None: for ever."""
    agent_timeouts: Mapping[str, timedelta] = field(default_factory=dict)
    """Per agent id, over `timeout`."""
    bulk_max: int = 100
    bulk_concurrency: int = 8

    def timeout_of(self, agent_id: str) -> timedelta | None:
        return self.agent_timeouts.get(agent_id, self.timeout)

    def deadline(self, agent_id: str, suspended_at: datetime | None) -> datetime | None:
        """When an approval of `agent_id`'s run, pending since `suspended_at`, expires."""
        timeout = self.timeout_of(agent_id)
        return suspended_at + timeout if timeout is not None and suspended_at else None
