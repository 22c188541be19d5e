"""The errors the runtimes raise: a setting they cannot use, a run they could not continue,
an answer a tool refuses.

The whole tree of this project's errors is drawn once, in docs/design.md ("Errors").
"""

from __future__ import annotations

from suspended_runs.storage import SuspendedRunsError


class ConfigurationError(SuspendedRunsError):
    """A setting is missing, malformed or contradictory; the message names the setting."""


class AgentsNotLoadable(ConfigurationError):
    """AGENTS names no mapping of agent ids to pydantic-ai agents."""


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
