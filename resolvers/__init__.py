"""Query and mutation resolvers: GraphQL arguments -> storage (and, later, runtime) calls."""

from resolvers.context import Context
from resolvers.errors import PUBLIC_CODES, BadUserInput
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
    "PUBLIC_CODES",
    "BadUserInput",
    "Context",
    "Paging",
    "RunsPage",
    "agent_run",
    "paging_from_arguments",
    "suspended_runs",
]
