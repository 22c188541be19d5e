"""Errors as a client may read them, over HTTP and WebSocket alike: internal ones masked
(schema/errors.py), a database failure on a full disk told apart as STORAGE_FULL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import GraphQLError

from suspended_runs.schema import classify
from suspended_runs.server.logs import current_request_id
from suspended_runs.server.persisted_queries import NOT_FOUND
from suspended_runs.storage import database_fault, storage_full


def classified(state: Any, errors: list[GraphQLError]) -> list[GraphQLError]:
    """`errors` as a client may read them (schema/errors.py masks the internal ones);
    a database failure while the embedded MongoDB's disk is full is STORAGE_FULL. `state`
    is the app's (its `low_on_space`)."""
    request_id = current_request_id()
    low_on_space: Callable[[], bool] = state.low_on_space

    def full(exc: BaseException | None) -> bool:
        return storage_full(exc) or (database_fault(exc) and low_on_space())

    return [
        error
        if (error.extensions or {}).get("code") == NOT_FOUND
        else classify(error, request_id=request_id, full=full)
        for error in errors
    ]
