"""Review policies: who may decide a pending approval, and how many must approve it.

REVIEW_POLICIES (a JSON list) or REVIEW_POLICIES_FILE (a path to one) holds them, each
matched by `agentId` and `toolName` (either may be `*`); the first match applies to a
call. A call no policy matches is decided as ever: any approver in scope, alone.

Reviewers are credentials (`key:<name>`, `jwt:<sub>`: that key, that token's subject),
people (`person:<name>`: every credential of that person, resolvers/people.py) and
`group:<name>` for a caller's groups (the JWT claim JWT_GROUPS_CLAIM, or an API key's
`groups`); names compare folded, groups as written. Any other spelling stops the start.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from suspended_runs.resolvers.people import GROUP_PREFIX, SUBJECT_PREFIXES, canonical, refusal

_SPELLINGS = (*SUBJECT_PREFIXES, GROUP_PREFIX)


class _PolicyText(BaseModel):
    """A policy as written: unknown keys are refused, so a typo never weakens one."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(None, min_length=1, max_length=200)
    agentId: str = Field("*", min_length=1)
    toolName: str = Field("*", min_length=1)
    approvals: int = Field(1, ge=1, le=100)
    reviewers: list[str] | None = Field(None, min_length=1)
    forbidSelfApproval: bool = False
    escalateAfterSeconds: float | None = Field(None, gt=0)
    escalateTo: list[str] = Field(default_factory=list)
    decisionTimeoutSeconds: float | None = Field(None, gt=0)
    requireArgsHash: bool | None = None
    strictReviews: bool = False
    destructive: bool = False

    @model_validator(mode="after")
    def _escalation_whole(self) -> _PolicyText:
        if bool(self.escalateTo) != (self.escalateAfterSeconds is not None):
            raise ValueError("escalateAfterSeconds and escalateTo go together")
        for name in [*(self.reviewers or ()), *self.escalateTo]:
            check_reviewer(name)
        return self


def check_reviewer(name: str) -> None:
    """A reviewer is spelt `key:`, `jwt:`, `person:` or `group:`, then a name: a policy
    naming no one (`token:bob`) would let no one decide, and say nothing of it."""
    prefix = next((p for p in _SPELLINGS if name.startswith(p)), None)
    if prefix is None:
        raise ValueError(
            f"{name!r} is not a reviewer: key:<name>, jwt:<sub>, person:<name> or group:<name>"
        )
    if (why := refusal(name[len(prefix) :])) is not None:
        raise ValueError(f"reviewer {why}")


@dataclass(frozen=True, slots=True)
class ReviewPolicy:
    place: str
    """Where it is written and what it matches: for start errors and this process's logs,
    never for callers (it may name a file)."""
    name: str | None = None
    """Its `name`, which callers' messages name it by."""
    agent_id: str = "*"
    tool_name: str = "*"
    approvals: int = 1
    reviewers: tuple[str, ...] | None = None
    """None: any approver in scope."""
    forbid_self_approval: bool = False
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()
    decision_timeout: timedelta | None = None
    require_args_hash: bool | None = None
    """None: under a quorum, yes."""
    strict_reviews: bool = False
    """While another person reviews the run, no decision on its calls, `force` or not."""
    destructive: bool = False
    """Its calls change what cannot be changed back: clients confirm before approving one."""

    def matches(self, agent_id: str, tool_name: str | None) -> bool:
        return self.agent_id in ("*", agent_id) and self.tool_name in ("*", tool_name or "")

    @property
    def label(self) -> str:
        """How a caller's message names it: by its `name`, else by its place in no file."""
        return f"review policy {self.name!r}" if self.name else "a review policy"

    @property
    def requires_args_hash(self) -> bool:
        """Whether an approval of edited arguments must say which (expectedArgsHash)."""
        wanted = self.require_args_hash
        return wanted if wanted is not None else self.approvals > 1

    @property
    def needs_authentication(self) -> bool:
        """Whether it means anything only when callers are who they say (an open server
        lets anyone claim any name)."""
        return self.approvals > 1 or self.reviewers is not None

    def escalated(self, suspended_at: datetime | None, now: datetime) -> bool:
        after = self.escalate_after
        return after is not None and suspended_at is not None and now >= suspended_at + after

    def assigned_to(self, suspended_at: datetime | None, now: datetime) -> list[str]:
        """The reviewers of a call waiting since `suspended_at`, escalation included."""
        names = list(self.reviewers or ())
        if self.escalated(suspended_at, now):
            names += [name for name in self.escalate_to if name not in names]
        return names

    def allows(self, names: frozenset[str], suspended_at: datetime | None, now: datetime) -> bool:
        """Whether a caller of these `names` (Principal.names) is among the reviewers now."""
        if self.reviewers is None:
            return True
        return bool(names & compared(tuple(self.assigned_to(suspended_at, now))))


@functools.lru_cache(maxsize=1024)
def compared(reviewers: tuple[str, ...]) -> frozenset[str]:
    """Reviewers as a caller's names are compared with them (read for every list that
    asks `assignedToMe`: folded once)."""
    return frozenset(canonical(name) for name in reviewers)


@dataclass(frozen=True, slots=True)
class ReviewPolicies:
    policies: tuple[ReviewPolicy, ...] = ()

    def match(self, agent_id: str, tool_name: str | None) -> ReviewPolicy | None:
        return next((p for p in self.policies if p.matches(agent_id, tool_name)), None)

    @property
    def escalating(self) -> bool:
        """Whether a call's reviewers may change with time alone."""
        return any(p.escalate_after is not None for p in self.policies)

    @property
    def needing_authentication(self) -> list[ReviewPolicy]:
        return [p for p in self.policies if p.needs_authentication]

    @classmethod
    def parse(cls, raw: Any, where: str = "REVIEW_POLICIES") -> ReviewPolicies:
        """Policies from their JSON text (or data); raises ValueError naming the first that
        cannot be used, in one line."""
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else []
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not JSON ({exc.msg} at {exc.pos})") from None
        if not isinstance(raw, list):
            raise ValueError(f"{where}: a JSON list of policies")
        return cls(tuple(_policy(item, f"{where}[{i}]") for i, item in enumerate(raw)))

    @classmethod
    def load(cls, text: str | None, path: Path | None) -> ReviewPolicies:
        """From REVIEW_POLICIES or REVIEW_POLICIES_FILE (not both)."""
        if text and path:
            raise ValueError("set REVIEW_POLICIES or REVIEW_POLICIES_FILE, not both")
        if path is None:
            return cls.parse(text or "[]")
        try:
            content = path.read_text()
        except OSError as exc:
            raise ValueError(f"REVIEW_POLICIES_FILE: {path}: {exc.strerror}") from None
        return cls.parse(content, f"REVIEW_POLICIES_FILE {path}")


def _policy(item: Any, where: str) -> ReviewPolicy:
    try:
        text = _PolicyText.model_validate(item)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}{'.' + field if field else ''}: {message}") from None
    seconds = text.escalateAfterSeconds
    timeout = text.decisionTimeoutSeconds
    return ReviewPolicy(
        place=f"{where} (agentId {text.agentId}, toolName {text.toolName})",
        name=text.name,
        agent_id=text.agentId,
        tool_name=text.toolName,
        approvals=text.approvals,
        reviewers=tuple(text.reviewers) if text.reviewers is not None else None,
        forbid_self_approval=text.forbidSelfApproval,
        escalate_after=timedelta(seconds=seconds) if seconds is not None else None,
        escalate_to=tuple(text.escalateTo),
        decision_timeout=timedelta(seconds=timeout) if timeout is not None else None,
        require_args_hash=text.requireArgsHash,
        strict_reviews=text.strictReviews,
        destructive=text.destructive,
    )
