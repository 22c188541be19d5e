"""How this server treats decisions, from its settings: when pending approvals expire,
who must approve what (resolvers/review_policies.py), and how many decisions one
`decideToolCalls` may carry and continue at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from suspended_runs.resolvers.review_policies import ReviewPolicies


@dataclass(frozen=True, slots=True)
class DecisionPolicy:
    timeout: timedelta | None = None
    """How long an approval may wait before it is declined; None: for ever."""
    agent_timeouts: Mapping[str, timedelta] = field(default_factory=dict)
    """Per agent id, over `timeout`."""
    bulk_max: int = 100
    bulk_concurrency: int = 8
    reviews: ReviewPolicies = field(default_factory=ReviewPolicies)
    review_max: timedelta = timedelta(minutes=60)
    """The longest review one `startReview` starts (REVIEW_MAX_MINUTES)."""
    confirm_every_approval: bool = False
    """CONFIRM_EVERY_APPROVAL: clients confirm every approval, not only destructive ones."""

    def confirms(self, agent_id: str, tool_name: str | None) -> bool:
        """Whether a client asks the person to confirm before approving such a call."""
        policy = self.reviews.match(agent_id, tool_name)
        return self.confirm_every_approval or (policy is not None and policy.destructive)

    def timeout_of(self, agent_id: str, tool_name: str | None = None) -> timedelta | None:
        """A review policy's decisionTimeoutSeconds, over DECISION_TIMEOUTS, over
        DECISION_TIMEOUT_SECONDS."""
        policy = self.reviews.match(agent_id, tool_name)
        if policy is not None and policy.decision_timeout is not None:
            return policy.decision_timeout
        return self.agent_timeouts.get(agent_id, self.timeout)

    def deadline(
        self, agent_id: str, suspended_at: datetime | None, tool_name: str | None = None
    ) -> datetime | None:
        """When an approval of `agent_id`'s run, pending since `suspended_at`, expires."""
        timeout = self.timeout_of(agent_id, tool_name)
        return suspended_at + timeout if timeout is not None and suspended_at else None

    def timeouts_asked(self) -> list[TimeoutAsk]:
        """Every timeout a pending call may have, with the agents it may apply to: what the
        expiry asks for, one query each, so that no call's own deadline is missed."""
        asked = [
            TimeoutAsk(
                policy.decision_timeout, None if policy.agent_id == "*" else [policy.agent_id]
            )
            for policy in self.reviews.policies
            if policy.decision_timeout is not None
        ]
        asked += [TimeoutAsk(timeout, [agent]) for agent, timeout in self.agent_timeouts.items()]
        if self.timeout is not None:  # not the agents DECISION_TIMEOUTS names: theirs is theirs
            asked.append(TimeoutAsk(self.timeout, None, sorted(self.agent_timeouts)))
        return asked


@dataclass(frozen=True, slots=True)
class TimeoutAsk:
    timeout: timedelta
    agent_ids: list[str] | None = None
    """None: any agent."""
    excluded_agent_ids: list[str] | None = None
