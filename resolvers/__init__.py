"""Query and mutation resolvers: GraphQL arguments -> storage and runtime calls."""

from suspended_runs.resolvers.access import (
    OPEN_ACCESS,
    ForbiddenQuery,
    Principal,
    Role,
    Scope,
    require,
)
from suspended_runs.resolvers.agents import AgentSummary, agents, reconcile, start_run
from suspended_runs.resolvers.audit import (
    DEFAULT_LOG_PAGE,
    MAX_LOG_PAGE,
    decision_log,
    record_cursor,
)
from suspended_runs.resolvers.budget import CostLimit, RequestBudget, RequestLimits
from suspended_runs.resolvers.bulk import decide_many
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.decisions import DecisionRequest, decide
from suspended_runs.resolvers.errors import (
    PUBLIC_CODES,
    BadUserInput,
    DecisionContention,
    SubscriptionLimit,
)
from suspended_runs.resolvers.expiry import expire_forever
from suspended_runs.resolvers.follower import FollowerStatus, follower_status
from suspended_runs.resolvers.live_pages import LivePages
from suspended_runs.resolvers.operators import cancel_run, release_run
from suspended_runs.resolvers.outcomes import (
    AlreadyDecided,
    ArgsNotEditable,
    CancelOutcome,
    DecisionInProgress,
    DecisionOutcome,
    ExecutorUnavailable,
    Forbidden,
    InvalidArgs,
    InvalidResumeData,
    OutcomeUnknown,
    ReleaseOutcome,
    RunCancelled,
    RunDecided,
    RunNotFound,
    RunNotSuspended,
    RunReleased,
    RunStarted,
    StartOutcome,
    ToolCallNotFound,
    WrongRunStatus,
    WrongSuspensionKind,
)
from suspended_runs.resolvers.policy import DecisionPolicy
from suspended_runs.resolvers.runs import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    Paging,
    RunsPage,
    agent_run,
    paging_from_arguments,
    runs,
    suspended_runs,
)
from suspended_runs.resolvers.viewer import Caller, viewer

__all__ = [
    "DEFAULT_LOG_PAGE",
    "DEFAULT_PAGE_SIZE",
    "MAX_LOG_PAGE",
    "MAX_PAGE_SIZE",
    "OPEN_ACCESS",
    "PUBLIC_CODES",
    "AgentSummary",
    "AlreadyDecided",
    "ArgsNotEditable",
    "BadUserInput",
    "Caller",
    "CancelOutcome",
    "Context",
    "CostLimit",
    "DecisionContention",
    "DecisionInProgress",
    "DecisionOutcome",
    "DecisionPolicy",
    "DecisionRequest",
    "ExecutorUnavailable",
    "FollowerStatus",
    "Forbidden",
    "ForbiddenQuery",
    "InvalidArgs",
    "InvalidResumeData",
    "LivePages",
    "OutcomeUnknown",
    "Paging",
    "Principal",
    "ReleaseOutcome",
    "RequestBudget",
    "RequestLimits",
    "Role",
    "RunCancelled",
    "RunDecided",
    "RunNotFound",
    "RunNotSuspended",
    "RunReleased",
    "RunStarted",
    "RunsPage",
    "Scope",
    "StartOutcome",
    "SubscriptionLimit",
    "ToolCallNotFound",
    "WrongRunStatus",
    "WrongSuspensionKind",
    "agent_run",
    "agents",
    "cancel_run",
    "decide",
    "decide_many",
    "decision_log",
    "expire_forever",
    "follower_status",
    "paging_from_arguments",
    "reconcile",
    "record_cursor",
    "release_run",
    "require",
    "runs",
    "start_run",
    "suspended_runs",
    "viewer",
]
