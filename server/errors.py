"""The errors the process raises: credentials refused, an embedded MongoDB that would not
start or stop.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations

from suspended_runs.storage import SuspendedRunsError


class Unauthenticated(SuspendedRunsError):
    """Credentials were given but are not valid, or none were given where they are needed."""


class EmbeddedMongoDBError(SuspendedRunsError):
    """The embedded MongoDB could not be started or stopped."""
