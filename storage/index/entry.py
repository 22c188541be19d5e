"""Run-index entries: the compact, query-ready form of one run.

Plain slotted dataclasses rather than pydantic models: a page of 50 runs with 10 tool
calls each is built on every poll, and construction cost is the hot path.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import rfc8785

from suspended_runs.storage.types import Document, RunStatus, Runtime, json_kind

log = logging.getLogger(__name__)


class Action(StrEnum):
    """What a person decided about a pending call."""

    APPROVE = "approve"
    DECLINE = "decline"
    RESUME = "resume"


@dataclass(frozen=True, slots=True)
class Decision:
    """What a person decided about one pending tool call."""

    action: Action
    by: str
    at: datetime
    reason: str | None = None
    resume_data: Any = None
    edited_args: Any = None
    """Arguments a person approved instead of the model's (the call keeps the model's)."""

    def to_document(self) -> Document:
        return {
            "action": self.action.value,
            "by": self.by,
            "at": self.at,
            "reason": self.reason,
            "resumeData": self.resume_data,
            "editedArgs": self.edited_args,
        }

    @classmethod
    def from_document(cls, doc: Document) -> Decision:
        return cls(
            action=Action(doc["action"]),
            by=doc.get("by", "anonymous"),
            at=doc["at"],
            reason=doc.get("reason"),
            resume_data=doc.get("resumeData"),
            edited_args=doc.get("editedArgs"),
        )


def args_hash(args: Any) -> str:
    """Lower-case hex SHA-256 of `args` in RFC 8785 canonical JSON (of `null` where there
    are none): what an approver saw, named so a decision can say it."""
    try:
        canonical = rfc8785.dumps(args)
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        canonical = rfc8785.dumps(_as_json(args))
    return hashlib.sha256(canonical).hexdigest()


def _as_json(value: Any) -> Any:
    """What JSON (and RFC 8785) cannot hold, as its text: a date a snapshot kept as BSON,
    a NaN, an integer past 2**53."""
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int) and abs(value) <= 2**53:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool_call_id: str | None
    tool_name: str | None
    requires_approval: bool
    args: Any = None
    suspend_payload: Any = None
    decision: Decision | None = None
    interrupt_id: str | None = None
    """The LangGraph interrupt this call answers (its decision is sent as that interrupt's
    answer); None for other runtimes' calls."""

    def to_document(self) -> Document:
        doc = {
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "args": self.args,
            "requiresApproval": self.requires_approval,
            "suspendPayload": self.suspend_payload,
            "decision": self.decision.to_document() if self.decision else None,
        }
        return doc | ({"interruptId": self.interrupt_id} if self.interrupt_id else {})

    @classmethod
    def from_document(cls, doc: Document) -> ToolCall:
        decision = doc.get("decision")
        return cls(
            tool_call_id=doc.get("toolCallId"),
            tool_name=doc.get("toolName"),
            requires_approval=bool(doc.get("requiresApproval")),
            args=doc.get("args"),
            suspend_payload=doc.get("suspendPayload"),
            decision=Decision.from_document(decision) if decision else None,
            interrupt_id=iid if isinstance(iid := doc.get("interruptId"), str) else None,
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """Who is continuing a run, and until when its lease holds without renewal."""

    by: str
    at: datetime
    expires_at: datetime
    outcome_unknown: bool = False
    """The decision may have reached the runtime, and its answer was lost: the claim stays
    (no other decision is forwarded) until the snapshot shows where the run went."""

    def to_document(self) -> Document:
        return {
            "by": self.by,
            "at": self.at,
            "expiresAt": self.expires_at,
            "outcomeUnknown": self.outcome_unknown,
        }

    @classmethod
    def from_document(cls, doc: Document) -> Claim:
        return cls(
            by=doc["by"],
            at=doc["at"],
            expires_at=doc["expiresAt"],
            outcome_unknown=bool(doc.get("outcomeUnknown")),
        )


@dataclass(frozen=True, slots=True)
class Review:
    """A person looking at a waiting run, until `until` (docs/reviews.md, "Reviewing
    together"). Never a claim: a review holds nothing; a decision by someone else while
    it lasts is refused unless it says `force`."""

    by: str
    """The credential it was started with."""
    person: str
    """The person reviewing (`person:<name>`, as compared)."""
    at: datetime
    until: datetime

    def to_document(self) -> Document:
        return {"by": self.by, "person": self.person, "at": self.at, "until": self.until}

    @classmethod
    def from_document(cls, doc: Document) -> Review | None:
        """A stored review, or None for one that is not (a malformed field is no review)."""
        by, person, at, until = (doc.get(k) for k in ("by", "person", "at", "until"))
        if not (isinstance(by, str) and isinstance(person, str)):
            return None
        if not (isinstance(at, datetime) and isinstance(until, datetime)):
            return None
        return cls(by, person, at, until)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished run ended: its output, or its error."""

    output: Any = None
    error: str | None = None

    def to_document(self) -> Document:
        return {"output": self.output, "error": self.error}

    @classmethod
    def from_document(cls, doc: Document) -> Outcome:
        return cls(output=doc.get("output"), error=doc.get("error"))


@dataclass(frozen=True, slots=True)
class RunEntry:
    run_id: str
    workflow_name: str
    runtime: Runtime
    agent_id: str
    status: RunStatus
    created_at: datetime
    suspended_at: datetime | None
    thread_id: str | None = None
    resource_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = field(default=())
    snapshot_id: Any = None
    """The snapshot document's `_id`: a delete event carries only that."""
    version: int = 0
    ended_at: datetime | None = None
    claim: Claim | None = None
    outcome: Outcome | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None
    """When and by whom the run's last decision was made (kept as the run moves on)."""
    problems: tuple[str, ...] = ()
    """What of its snapshot could not be read (each read as null): the run is listed with
    the rest (storage/snapshots/fields.py)."""
    started_by: str | None = None
    """Who started the run: `startRun`'s caller, or a Mastra run's request context value
    (REVIEW_STARTER_CONTEXT_KEY); None: not known."""
    review: Review | None = None
    """The last review started (it may have ended: `reviewed_at`)."""
    assignees: tuple[str, ...] = ()
    """Who the run was handed to (`assignRun`), beside what its review policy names."""
    note_count: int = 0
    """How many notes the run has (storage/notes.py): a page shows a note as a change."""

    def status_at(self, now: datetime) -> RunStatus:
        """The status to show: a RUNNING run whose lease ran out (its process died) is STALLED."""
        if self.status is RunStatus.RUNNING and self.claim and self.claim.expires_at <= now:
            return RunStatus.STALLED
        return self.status

    def reviewed_at(self, now: datetime) -> Review | None:
        """The review that lasts at `now`: only a waiting run is reviewed."""
        review = self.review
        if review is None or self.status is not RunStatus.SUSPENDED or review.until <= now:
            return None
        return review

    @property
    def outcome_unknown(self) -> bool:
        return self.claim is not None and self.claim.outcome_unknown

    def pending_calls(self) -> list[ToolCall]:
        return [call for call in self.tool_calls if call.decision is None]

    def with_decision(self, tool_call_id: str, decision: Decision) -> RunEntry:
        calls = tuple(
            replace(call, decision=decision) if call.tool_call_id == tool_call_id else call
            for call in self.tool_calls
        )
        return replace(self, tool_calls=calls, decided_at=decision.at, decided_by=decision.by)

    def decided_as(self, other: RunEntry) -> RunEntry:
        """This entry, with `other`'s last decision (a snapshot does not know it)."""
        return replace(self, decided_at=other.decided_at, decided_by=other.decided_by)

    def finished(self, status: RunStatus, outcome: Outcome | None, at: datetime) -> RunEntry:
        """This run come to an end (COMPLETED, FAILED, ENDED, CANCELLED), its claim let go."""
        return replace(self, status=status, outcome=outcome, claim=None, ended_at=at)

    def to_document(self) -> Document:
        """Every field but `review`, `assignees` and `noteCount`: only their own writes
        write them (storage/index/reviews.py), so a writer that puts an entry whole (a
        settled run, the follower) never undoes a review, a hand-over or a note."""
        return {
            "runId": self.run_id,
            "workflowName": self.workflow_name,
            "runtime": self.runtime.value,
            "agentId": self.agent_id,
            "status": self.status.value,
            "createdAt": self.created_at,
            "suspendedAt": self.suspended_at,
            "threadId": self.thread_id,
            "resourceId": self.resource_id,
            "toolCalls": [call.to_document() for call in self.tool_calls],
            "snapshotId": self.snapshot_id,
            "version": self.version,
            "endedAt": self.ended_at,
            "claim": self.claim.to_document() if self.claim else None,
            "outcome": self.outcome.to_document() if self.outcome else None,
            "decidedAt": self.decided_at,
            "decidedBy": self.decided_by,
            "problems": list(self.problems),
            "hasProblems": bool(self.problems),
            "startedBy": self.started_by,
        }

    def marks_document(self) -> Document:
        """What reviewers wrote on the entry, which `to_document` leaves out."""
        review = self.review.to_document() if self.review else None
        return {"review": review, "assignees": list(self.assignees), "noteCount": self.note_count}

    @classmethod
    def from_document(cls, doc: Document) -> RunEntry:
        claim, outcome, review = doc.get("claim"), doc.get("outcome"), doc.get("review")
        problems = [p for p in doc.get("problems") or () if isinstance(p, str)]
        calls = tuple(_read_call(c, i, problems) for i, c in enumerate(doc.get("toolCalls") or ()))
        return cls(
            run_id=doc["runId"],
            workflow_name=doc.get("workflowName", ""),
            runtime=Runtime(doc.get("runtime", Runtime.MASTRA.value)),
            agent_id=doc["agentId"],
            status=RunStatus(doc["status"]),
            created_at=doc["createdAt"],
            suspended_at=doc.get("suspendedAt"),
            thread_id=_text(doc, "threadId", "", problems),
            resource_id=_text(doc, "resourceId", "", problems),
            tool_calls=calls,
            snapshot_id=doc.get("snapshotId"),
            version=int(doc.get("version", 0)),
            ended_at=doc.get("endedAt"),
            claim=Claim.from_document(claim) if claim else None,
            outcome=Outcome.from_document(outcome) if outcome else None,
            decided_at=doc.get("decidedAt"),
            decided_by=doc.get("decidedBy"),
            problems=tuple(problems),
            started_by=_text(doc, "startedBy", "", problems),
            review=Review.from_document(review) if isinstance(review, dict) else None,
            assignees=tuple(a for a in doc.get("assignees") or () if isinstance(a, str)),
            note_count=count if isinstance(count := doc.get("noteCount"), int) else 0,
        )


def _text(doc: Document, name: str, where: str, problems: list[str]) -> str | None:
    """A string field of an entry written before its snapshot's fields were validated
    (storage/snapshots/fields.py): another type is read as null, and named."""
    value = doc.get(name)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{where}{name}: {json_kind(value)}, not a string")
    return None


def _read_call(doc: Document, index: int, problems: list[str]) -> ToolCall:
    call = ToolCall.from_document(doc)
    where = f"toolCalls[{index}]."
    return replace(
        call,
        tool_call_id=_text(doc, "toolCallId", where, problems),
        tool_name=_text(doc, "toolName", where, problems),
    )


def read_entry(doc: Document) -> RunEntry | None:
    """An entry, or None (logged) for a document that is not one: a bad entry never fails a page."""
    try:
        return RunEntry.from_document(doc)
    except (KeyError, ValueError, TypeError) as exc:
        log.warning(
            "skipped a malformed run-index entry",
            extra={"runId": str(doc.get("runId")), "reason": f"{type(exc).__name__}: {exc}"},
        )
        return None
