"""How errors leave the server: each with an `extensions.code`, internal ones masked.

    GraphQL error
    ├── GRAPHQL_PARSE_FAILED       the document is not GraphQL
    ├── GRAPHQL_VALIDATION_FAILED  unknown field, over a depth/token/alias limit, ...
    ├── BAD_USER_INPUT             an argument or variable of the wrong kind or value
    ├── DATABASE_UNAVAILABLE       MongoDB could not be reached or could not serve: try
    │                              again after extensions.retryAfterSeconds (a GET: 503)
    ├── STORAGE_FULL               MongoDB has no room to write: a decision it could not
    │                              record is not continued; heals once space is freed
    └── INTERNAL_SERVER_ERROR      anything else: message masked, details only in the log,
                                   found by the request id in extensions.requestId

Expected outcomes of mutations are not errors: they are members of result unions.
The HTTP view applies `classify` to every error of every response, parse errors included
(they never reach a schema extension).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from graphql import GraphQLError

from suspended_runs.resolvers import PUBLIC_CODES
from suspended_runs.storage import database_unavailable, storage_full

log = logging.getLogger(__name__)

MASKED_MESSAGE = "Internal server error."
UNAVAILABLE = "DATABASE_UNAVAILABLE"
FULL = "STORAGE_FULL"
RETRY_AFTER_SECONDS = 5
"""What a client told DATABASE_UNAVAILABLE should wait: about one server selection."""

# graphql-core's words for an argument or variable value that does not fit its type.
_INPUT_MARKERS = (
    "got invalid value",
    "cannot represent",
    "Expected value of type",
    "of required type",
    "is not defined by type",
)


def classify(
    error: GraphQLError,
    *,
    request_id: str | None = None,
    full: Callable[[BaseException | None], bool] = storage_full,
) -> GraphQLError:
    """The error as the client reads it; `full` tells a failure a full disk caused (one
    may have no path: a subscription's first page). A masked one carries `request_id`."""
    if (error.extensions or {}).get("code") in PUBLIC_CODES:
        return error
    if full(error.original_error):
        log.warning("the database's storage is full", extra={"path": error.path})
        return _retry(error, FULL, "the database's storage is full; try again once space is freed")
    if database_unavailable(error.original_error):
        log.warning(
            "the database is unavailable",
            extra={"path": error.path, "errorType": type(error.original_error).__name__},
        )
        return _retry(error, UNAVAILABLE, "the database is unavailable; try again")
    if error.path is not None:
        # Raised while executing: nothing the client did wrong, and nothing it should read.
        log.error("internal error", exc_info=error.original_error, extra={"path": error.path})
        extensions: dict[str, object] = {"code": "INTERNAL_SERVER_ERROR"}
        if request_id is not None:
            extensions["requestId"] = request_id
        return GraphQLError(
            MASKED_MESSAGE, nodes=error.nodes, path=error.path, extensions=extensions
        )
    # No path: the request itself failed to parse, validate or coerce its variables.
    if error.message.startswith("Syntax Error"):
        code = "GRAPHQL_PARSE_FAILED"
    elif any(marker in error.message for marker in _INPUT_MARKERS):
        code = "BAD_USER_INPUT"
    else:
        code = "GRAPHQL_VALIDATION_FAILED"
    return GraphQLError(
        error.message,
        nodes=error.nodes,
        extensions={**(error.extensions or {}), "code": code},
    )


def _retry(error: GraphQLError, code: str, message: str) -> GraphQLError:
    """An error a client answers by trying again, after `retryAfterSeconds`."""
    extensions = {"code": code, "retryAfterSeconds": RETRY_AFTER_SECONDS}
    return GraphQLError(message, nodes=error.nodes, path=error.path, extensions=extensions)
