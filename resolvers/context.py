"""What every resolver gets from the server, per request."""

from __future__ import annotations

from dataclasses import dataclass, field

from suspended_runs.resolvers.access import Principal
from suspended_runs.resolvers.budget import RequestBudget
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.runtime import Runtimes
from suspended_runs.storage import Storage


@dataclass(frozen=True, slots=True)
class Context:
    storage: Storage
    runtimes: Runtimes
    principal: Principal
    actor: str
    """Who is asking, as the audit log records it: the authenticated subject, else a header."""
    policy: DecisionPolicy = field(default_factory=DecisionPolicy)
    budget: RequestBudget = field(default_factory=RequestBudget)
    """What this request may still cost (rows, mutations) and how large its texts may be."""
