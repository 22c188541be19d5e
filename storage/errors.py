"""The errors storage raises, and the root every layer's errors share (`SuspendedRunsError`),
here in the bottom layer so that every layer can raise under it.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations


class SuspendedRunsError(Exception):
    """The root of every exception this package raises on purpose."""


class MalformedSnapshot(SuspendedRunsError, ValueError):
    """A snapshot document that cannot be read; callers skip it and log why."""


class InvalidCursor(SuspendedRunsError, ValueError):
    """An `after` cursor this server did not write."""
