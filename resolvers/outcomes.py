"""What a mutation answers: where the run came to rest, or why nothing was done.

    Outcome
    ├── RunDecided            the decision is recorded; `run` is the run's next resting state
    ├── ApprovalRecorded      an approval before a review policy's Nth: recorded, not applied
    ├── RunStarted            a run was started; `run` is where it came to rest
    ├── RunReleased           an operator put a STALLED (or in-doubt) run back to SUSPENDED
    ├── RunCancelled          an operator ended a run; its pending tools never run
    ├── ReviewStarted         a person reviews a waiting run until `inReviewUntil`
    ├── ReviewEnded           nobody reviews the run any more
    ├── RunAssigned           a run was handed to more people (`assignedTo`)
    ├── NoteAdded, NoteDeleted
    ├── OutcomeUnknown        the decision may have been applied; the run stays claimed
    │                         until its snapshot shows where it went (or it turns STALLED)
    └── (nothing was done, each with a `message`)
        ├── RunNotFound
        ├── RunNotSuspended       the run is RUNNING, COMPLETED, FAILED, ENDED, STALLED, ...
        ├── WrongRunStatus        an operator action on a run in a state it does not apply to
        ├── ToolCallNotFound
        ├── WrongSuspensionKind   approve/decline on a suspend() call, or resume on an approval
        ├── AlreadyDecided
        ├── InvalidResumeData
        ├── InvalidArgs           edited arguments the tool's parameters refuse
        ├── ArgsNotEditable       edited arguments for a runtime whose approval takes none
        ├── ExecutorUnavailable   no runtime here can continue the run, or it certainly
        │                         did not receive the decision (the run was put back)
        ├── DecisionInProgress    a twin request under the same idempotency key still works
        ├── StaleDecision         expectedArgsHash is not the call's argsHash now
        ├── SelfApproval          a review policy forbids approving a run one started
        ├── NotAReviewer          a review policy names other reviewers
        ├── InReviewByOther       another person reviews the run (who, until when)
        ├── NoteNotFound          no such note, or one on a run the caller cannot see
        └── Forbidden             the caller's role does not allow it

A refusal about a run carries it (`run`, as read when refused), so a client's cache
corrects its entry after a lost race without asking again; but ExecutorUnavailable, which
applied nothing and may name no run (startRun's).
Outcomes are plain data, so an idempotency key can store one and answer it again.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, get_args

from suspended_runs.storage import Decision, Document, RunEntry, RunNote, RunStatus


@dataclass(frozen=True, slots=True)
class RunDecided:
    run: RunEntry
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class ApprovalRecorded:
    run: RunEntry
    tool_call_id: str
    approvals_needed: int
    """How many more distinct approvals continue the run."""


@dataclass(frozen=True, slots=True)
class StaleDecision:
    run_id: str
    tool_call_id: str
    args_hash: str
    """The call's argsHash now."""
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class SelfApproval:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class NotAReviewer:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


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
    run: RunEntry


@dataclass(frozen=True, slots=True)
class ToolCallNotFound:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class WrongSuspensionKind:
    run_id: str
    tool_call_id: str
    requires_approval: bool
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class AlreadyDecided:
    run_id: str
    tool_call_id: str
    decision: Decision
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class InvalidResumeData:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class InvalidArgs:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class ArgsNotEditable:
    run_id: str
    tool_call_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class ExecutorUnavailable:
    run_id: str | None
    agent_id: str
    message: str


@dataclass(frozen=True, slots=True)
class Forbidden:
    needed_role: str
    message: str


@dataclass(frozen=True, slots=True)
class OutcomeUnknown:
    run: RunEntry
    message: str


@dataclass(frozen=True, slots=True)
class DecisionInProgress:
    run_id: str
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class RunReleased:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class RunCancelled:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class WrongRunStatus:
    run_id: str
    status: RunStatus
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class InReviewByOther:
    run_id: str
    in_review_by: str
    """The person reviewing it."""
    in_review_until: datetime
    message: str
    run: RunEntry


@dataclass(frozen=True, slots=True)
class ReviewStarted:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class ReviewEnded:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class RunAssigned:
    run: RunEntry


@dataclass(frozen=True, slots=True)
class NoteAdded:
    note: RunNote
    run: RunEntry


@dataclass(frozen=True, slots=True)
class NoteDeleted:
    note_id: str
    run_id: str


@dataclass(frozen=True, slots=True)
class NoteNotFound:
    note_id: str
    message: str


DecisionOutcome = (
    RunDecided
    | RunNotFound
    | RunNotSuspended
    | ToolCallNotFound
    | WrongSuspensionKind
    | AlreadyDecided
    | InvalidResumeData
    | InvalidArgs
    | ArgsNotEditable
    | ExecutorUnavailable
    | OutcomeUnknown
    | DecisionInProgress
    | Forbidden
    | ApprovalRecorded
    | StaleDecision
    | SelfApproval
    | NotAReviewer
    | InReviewByOther
)

StartOutcome = RunStarted | ExecutorUnavailable | Forbidden

ReleaseOutcome = RunReleased | RunNotFound | WrongRunStatus | Forbidden

CancelOutcome = (
    RunCancelled
    | RunNotFound
    | WrongRunStatus
    | ExecutorUnavailable
    | OutcomeUnknown
    | Forbidden
    | InReviewByOther
)

ReviewOutcome = (
    ReviewStarted | RunNotFound | RunNotSuspended | InReviewByOther | NotAReviewer | Forbidden
)

EndReviewOutcome = ReviewEnded | RunNotFound | InReviewByOther | Forbidden

AssignOutcome = RunAssigned | RunNotFound | RunNotSuspended | NotAReviewer | Forbidden

NoteOutcome = NoteAdded | RunNotFound | Forbidden

DeleteNoteOutcome = NoteDeleted | NoteNotFound | Forbidden

# Every stored answer is one of these; an idempotency record names its member by kind.
_KINDS: dict[str, type[Any]] = {
    cls.__name__: cls
    for union in (DecisionOutcome, StartOutcome, ReleaseOutcome, CancelOutcome)
    for cls in get_args(union)
}

APPLIED_NOTHING = (
    InvalidResumeData,
    InvalidArgs,
    ArgsNotEditable,
    ExecutorUnavailable,
    Forbidden,
    DecisionInProgress,
    StaleDecision,
    SelfApproval,
    NotAReviewer,
    InReviewByOther,
)
"""Answers after which a retry under the same idempotency key may still succeed: they are
not stored (ExecutorUnavailable means the decision certainly never reached the runtime)."""


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
    if "run" in cls.__dataclass_fields__:  # None in a refusal kept before it carried one
        values["run"] = RunEntry.from_document(values["run"]) if values.get("run") else None
    if "decision" in values:
        values["decision"] = Decision.from_document(values["decision"])
    if "status" in values:
        values["status"] = RunStatus(values["status"])
    return cls(**values)


def kind(outcome: Any) -> str:
    return type(outcome).__name__
