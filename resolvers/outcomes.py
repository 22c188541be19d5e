"""What a mutation answers: where the run came to rest, or why nothing was done.

    Outcome
    ├── RunDecided            the decision is recorded; `run` is the run's next resting state
    ├── RunStarted            a run was started; `run` is where it came to rest
    └── (nothing was done, each with a `message`)
        ├── RunNotFound
        ├── RunNotSuspended       the run is RUNNING, COMPLETED, FAILED, ENDED or STALLED
        ├── ToolCallNotFound
        ├── WrongSuspensionKind   approve/decline on a suspend() call, or resume on an approval
        ├── AlreadyDecided
        ├── InvalidResumeData
        ├── ExecutorUnavailable   no runtime here can continue the run (or start the agent)
        └── Forbidden             the caller's role does not allow it

Outcomes are plain data, so an idempotency key can store one and answer it again.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, get_args

from suspended_runs.storage import Decision, Document, RunEntry, RunStatus


@dataclass(frozen=True, slots=True)
class RunDecided:
    run: RunEntry
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class RunStarted:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class RunNotFound:
    run_id: str
    message: str


@dataclass(frozen=True, slots=True)
class RunNotSuspended:
    run_id: str
    status: RunStatus
    message: str


@dataclass(frozen=True, slots=True)
class ToolCallNotFound:
    run_id: str
    tool_call_id: str
    message: str


@dataclass(frozen=True, slots=True)
class WrongSuspensionKind:
    run_id: str
    tool_call_id: str
    requires_approval: bool
    message: str


@dataclass(frozen=True, slots=True)
class AlreadyDecided:
    run_id: str
    tool_call_id: str
    decision: Decision
    message: str


@dataclass(frozen=True, slots=True)
class InvalidResumeData:
    run_id: str
    tool_call_id: str
    message: str


@dataclass(frozen=True, slots=True)
class ExecutorUnavailable:
    run_id: str | None
    agent_id: str
    message: str


@dataclass(frozen=True, slots=True)
class Forbidden:
    needed_role: str
    message: str


DecisionOutcome = (
    RunDecided
    | RunNotFound
    | RunNotSuspended
    | ToolCallNotFound
    | WrongSuspensionKind
    | AlreadyDecided
    | InvalidResumeData
    | ExecutorUnavailable
    | Forbidden
)

StartOutcome = RunStarted | ExecutorUnavailable | Forbidden

# Every stored answer is one of these; an idempotency record names its member by kind.
_KINDS: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (*get_args(DecisionOutcome), *get_args(StartOutcome))
}


def encode(outcome: Any) -> Document:
    """An outcome as a BSON document (for the idempotency record)."""
    values: Document = {}
    for f in fields(outcome):
        value = getattr(outcome, f.name)
        if isinstance(value, RunEntry | Decision):
            value = value.to_document()
        elif isinstance(value, RunStatus):
            value = value.value
        values[f.name] = value
    return {"kind": type(outcome).__name__, "values": values}


def decode(doc: Document) -> Any:
    cls = _KINDS[doc["kind"]]
    values = dict(doc["values"])
    if "run" in values:
        values["run"] = RunEntry.from_document(values["run"])
    if "decision" in values:
        values["decision"] = Decision.from_document(values["decision"])
    if "status" in values:
        values["status"] = RunStatus(values["status"])
    return cls(**values)


def kind(outcome: Any) -> str:
    return type(outcome).__name__
