"""Every exception this package raises on purpose, as one tree.

    SuspendedRunsError                  the root: catch it to catch any of ours
    ├── ConfigurationError              a setting is missing, malformed or contradictory;
    │   │                               the CLI prints its message as one line, exit 2
    │   └── AgentsNotLoadable           AGENTS names no mapping of pydantic-ai agents
    ├── MalformedSnapshot               a snapshot document that cannot be read (skipped, logged)
    ├── InvalidCursor                   an `after` cursor this server did not write
    ├── DecisionContention              a run's decisions kept changing under this one
    ├── ContinuationError               a runtime could not continue a decided run
    │   ├── NotApplied                  certainly not applied: the request never left
    │   ├── OutcomeUncertain            may have been applied: the request may have arrived
    │   └── SnapshotMissing             a Python run's snapshot is gone
    ├── ResumeDataRejected              resume data that the tool's result type refuses
    ├── ArgsRejected                    edited arguments that the tool's parameters refuse
    ├── Unauthenticated                 credentials missing or not valid (server/auth.py)
    └── EmbeddedMongoDBError            the embedded MongoDB could not be started or stopped

The root lives here, in the bottom layer, so that every layer can raise under it. The
GraphQL errors a client reads (`BadUserInput`, `ForbiddenQuery`) are GraphQLErrors and
live in resolvers/errors.py; result-union members are data, not exceptions.
"""

from __future__ import annotations


class SuspendedRunsError(Exception):
    """The root of every exception this package raises on purpose."""


class ConfigurationError(SuspendedRunsError):
    """A setting is missing, malformed or contradictory; the message names the setting."""


class AgentsNotLoadable(ConfigurationError):
    """AGENTS names no mapping of agent ids to pydantic-ai agents."""


class MalformedSnapshot(SuspendedRunsError, ValueError):
    """A snapshot document that cannot be read; callers skip it and log why."""


class InvalidCursor(SuspendedRunsError, ValueError):
    """An `after` cursor this server did not write."""


class DecisionContention(SuspendedRunsError):
    """Other decisions on a run kept winning the conditional update; nothing was applied."""


class ContinuationError(SuspendedRunsError):
    """A runtime could not continue a decided run."""


class NotApplied(ContinuationError):
    """The decision certainly did not reach the runtime (refused, or failed before sending)."""


class OutcomeUncertain(ContinuationError):
    """The decision may have reached the runtime: applied or not, nobody here can tell."""


class SnapshotMissing(ContinuationError):
    """A Python run's snapshot is gone, so it cannot be continued."""


class ResumeDataRejected(SuspendedRunsError, ValueError):
    """Resume data that the suspended tool's return type does not accept."""


class ArgsRejected(SuspendedRunsError, ValueError):
    """Edited arguments that the tool's parameters do not accept."""


class Unauthenticated(SuspendedRunsError):
    """Credentials were given but are not valid, or none were given where they are needed."""


class EmbeddedMongoDBError(SuspendedRunsError):
    """The embedded MongoDB could not be started or stopped."""
