"""Inputs of the mutations."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from suspended_runs.schema.agent_run import DecisionAction

_TOOL_CALL = "The pending call to decide; may be left out when the run has exactly one."
_KEY = "Repeating a request with the same key returns the first answer again."
_WAIT = "false: answer at once with the run RUNNING; it goes on in the background."
_EXPECTED = (
    "The call's argsHash as you saw it: when the call's arguments are no longer those, "
    "nothing is applied (StaleDecision)."
)
_FORCE = (
    "Decide although another person reviews the run (startReview); refused under a review "
    "policy with strictReviews."
)
_EDITED = (
    "Run the tool with these arguments instead of the model's, checked against the tool's "
    "parameters first (Python runs; a Mastra approval takes none)."
)


@strawberry.input
class ApproveToolCallInput:
    run_id: strawberry.ID
    tool_call_id: str | None = strawberry.field(default=None, description=_TOOL_CALL)
    edited_args: JSON | None = strawberry.field(default=None, description=_EDITED)
    idempotency_key: str | None = strawberry.field(default=None, description=_KEY)
    expected_args_hash: str | None = strawberry.field(default=None, description=_EXPECTED)
    wait: bool = strawberry.field(default=True, description=_WAIT)
    force: bool = strawberry.field(default=False, description=_FORCE)


@strawberry.input
class DeclineToolCallInput:
    run_id: strawberry.ID
    tool_call_id: str | None = strawberry.field(default=None, description=_TOOL_CALL)
    reason: str | None = strawberry.field(default=None, description="Told to the model.")
    idempotency_key: str | None = strawberry.field(default=None, description=_KEY)
    expected_args_hash: str | None = strawberry.field(default=None, description=_EXPECTED)
    wait: bool = strawberry.field(default=True, description=_WAIT)
    force: bool = strawberry.field(default=False, description=_FORCE)


@strawberry.input
class ResumeRunInput:
    run_id: strawberry.ID
    resume_data: JSON = strawberry.field(description="The suspended tool's result.")
    tool_call_id: str | None = strawberry.field(default=None, description=_TOOL_CALL)
    idempotency_key: str | None = strawberry.field(default=None, description=_KEY)
    expected_args_hash: str | None = strawberry.field(default=None, description=_EXPECTED)
    wait: bool = strawberry.field(default=True, description=_WAIT)
    force: bool = strawberry.field(default=False, description=_FORCE)


@strawberry.input
class StartRunInput:
    agent_id: strawberry.ID
    prompt: str
    thread_id: str | None = None
    resource_id: str | None = None


@strawberry.input
class ReleaseRunInput:
    run_id: strawberry.ID
    reason: str | None = strawberry.field(default=None, description="Kept in the audit log.")


@strawberry.input
class CancelRunInput:
    run_id: strawberry.ID
    reason: str | None = strawberry.field(
        default=None, description="Kept in the audit log; a Mastra run's declines carry it."
    )


@strawberry.input(description="One decision of `decideToolCalls`: the fields of its own mutation.")
class ToolCallDecisionInput:
    run_id: strawberry.ID
    action: DecisionAction  # type: ignore[valid-type]
    tool_call_id: str | None = strawberry.field(default=None, description=_TOOL_CALL)
    reason: str | None = strawberry.field(default=None, description="DECLINE: told to the model.")
    resume_data: JSON | None = strawberry.field(default=None, description="RESUME: the result.")
    edited_args: JSON | None = strawberry.field(default=None, description=_EDITED)
    idempotency_key: str | None = strawberry.field(default=None, description=_KEY)
    expected_args_hash: str | None = strawberry.field(default=None, description=_EXPECTED)
    force: bool = strawberry.field(default=False, description=_FORCE)
