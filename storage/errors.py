"""The errors storage raises, and the root every layer's errors share (`SuspendedRunsError`),
here in the bottom layer so that every layer can raise under it.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations

from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError


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
    client's cue to try again), as opposed to refusing what it was asked. A deadline that
    passed (storage/deadlines.py) is one, whichever step it cut: the server's own limit
    (MaxTimeMSExpired), a checkout, a reply."""
    if isinstance(exc, ConnectionFailure):  # AutoReconnect, timeouts, no server selected
        return True
    if isinstance(exc, PyMongoError) and exc.timeout:
        return True
    return isinstance(exc, OperationFailure) and exc.code in _UNAVAILABLE_CODES


_FULL_CODES = frozenset({14031})
"""OutOfDiskSpace: MongoDB refused a write for want of disk space."""
_FULL_WORDS = ("No space left on device", "over your space quota")
"""The same from the operating system, and from Atlas (code 8000) at its storage quota."""


def storage_full(exc: BaseException | None) -> bool:
    """Whether the database refused a write for want of space: nothing of it was written."""
    if not isinstance(exc, OperationFailure):
        return False
    return exc.code in _FULL_CODES or any(words in str(exc) for words in _FULL_WORDS)


def database_fault(exc: BaseException | None) -> bool:
    """Whether `exc` is the database failing, not refusing what it was asked: unreachable,
    not serving now, out of space, or failing inside itself (InternalError, which the
    embedded server answers to everything once its storage failed)."""
    internal = isinstance(exc, OperationFailure) and exc.code == 1
    return database_unavailable(exc) or storage_full(exc) or internal
