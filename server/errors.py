"""The errors the process raises: credentials refused, an embedded MongoDB that would not
start or stop, a GraphQL request refused before it is executed.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations

from cross_web import HTTPException

from suspended_runs.storage import SuspendedRunsError


class Unauthenticated(SuspendedRunsError):
    """Credentials were given but are not valid, or none were given where they are needed."""


class EmbeddedMongoDBError(SuspendedRunsError):
    """The embedded MongoDB could not be started or stopped."""


class RequestRefused(HTTPException):
    """A GraphQL request refused before execution, with an HTTP status and the
    `extensions.code` of its answer (server/graphql_view.py writes it as GraphQL JSON)."""

    def __init__(self, status_code: int, code: str, reason: str) -> None:
        super().__init__(status_code, reason)
        self.code = code
