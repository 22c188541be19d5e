"""Query and mutation resolvers: GraphQL arguments -> storage and runtime calls."""

from resolvers.access import OPEN_ACCESS, ForbiddenQuery, Principal, Role, Scope
from resolvers.agents import AgentSummary, agents, decision_log, reconcile, start_run
from resolvers.context import Context
from resolvers.decisions import DecisionRequest, decide
from resolvers.errors import PUBLIC_CODES, BadUserInput
from resolvers.outcomes import (
    AlreadyDecided,
    DecisionOutcome,
    ExecutorUnavailable,
    Forbidden,
    InvalidResumeData,
    RunDecided,
    RunNotFound,
    RunNotSuspended,
    RunsReconciled,
    RunStarted,
    ToolCallNotFound,
    WrongSuspensionKind,
)
from resolvers.runs import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    Paging,
    RunsPage,
    agent_run,
    paging_from_arguments,
    suspended_runs,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "OPEN_ACCESS",
    "PUBLIC_CODES",
    "AgentSummary",
    "AlreadyDecided",
    "BadUserInput",
    "Context",
    "DecisionOutcome",
    "DecisionRequest",
    "ExecutorUnavailable",
    "Forbidden",
    "ForbiddenQuery",
    "InvalidResumeData",
    "Paging",
    "Principal",
    "Role",
    "RunDecided",
    "RunNotFound",
    "RunNotSuspended",
    "RunStarted",
    "RunsPage",
    "RunsReconciled",
    "Scope",
    "ToolCallNotFound",
    "WrongSuspensionKind",
    "agent_run",
    "agents",
    "decide",
    "decision_log",
    "paging_from_arguments",
    "reconcile",
    "start_run",
    "suspended_runs",
]
