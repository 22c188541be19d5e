"""The errors storage raises, and the root every layer's errors share (`SuspendedRunsError`),
here in the bottom layer so that every layer can raise under it.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations

from pymongo.errors import ConnectionFailure, OperationFailure


class SuspendedRunsError(Exception):
    """The root of every exception this package raises on purpose."""


class MalformedSnapshot(SuspendedRunsError, ValueError):
    """A snapshot document that cannot be read; callers skip it and log why."""


class InvalidCursor(SuspendedRunsError, ValueError):
    """An `after` cursor this server did not write."""


_UNAVAILABLE_CODES = frozenset({91, 189, 10107, 11600, 11602, 13435, 13436})
"""Server answers that mean "not now" (shutting down, stepped down, not primary)."""


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database could not be reached or could not serve now (a
    client's cue to try again), as opposed to refusing what it was asked."""
    if isinstance(exc, ConnectionFailure):  # AutoReconnect, timeouts, no server selected
        return True
    return isinstance(exc, OperationFailure) and exc.code in _UNAVAILABLE_CODES
