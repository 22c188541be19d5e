"""Query and mutation resolvers: GraphQL arguments -> storage and runtime calls."""

from suspended_runs.resolvers.access import OPEN_ACCESS, ForbiddenQuery, Principal, Role, Scope
from suspended_runs.resolvers.agents import AgentSummary, agents, decision_log, reconcile, start_run
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.decisions import DecisionRequest, decide
from suspended_runs.resolvers.errors import PUBLIC_CODES, BadUserInput
from suspended_runs.resolvers.outcomes import (
    AlreadyDecided,
    DecisionOutcome,
    ExecutorUnavailable,
    Forbidden,
    InvalidResumeData,
    RunDecided,
    RunNotFound,
    RunNotSuspended,
    RunStarted,
    StartOutcome,
    ToolCallNotFound,
    WrongSuspensionKind,
)
from suspended_runs.resolvers.runs import (
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
    "Scope",
    "StartOutcome",
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
