"""Review policies: who may decide a pending approval, and how many must approve it.

REVIEW_POLICIES (a JSON list) or REVIEW_POLICIES_FILE (a path to one) holds them, each
matched by `agentId` and `toolName` (either may be `*`); the first match applies to a
call. A call no policy matches is decided as ever: any approver in scope, alone.

Reviewers are subjects, as `viewer.subject` spells them, and `group:<name>` for a
caller's groups (the JWT claim JWT_GROUPS_CLAIM, or an API key's `groups`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

GROUP_PREFIX = "group:"


class _PolicyText(BaseModel):
    """A policy as written: unknown keys are refused, so a typo never weakens one."""

    model_config = ConfigDict(extra="forbid", strict=True)

    agentId: str = Field("*", min_length=1)
    toolName: str = Field("*", min_length=1)
    approvals: int = Field(1, ge=1, le=100)
    reviewers: list[str] | None = Field(None, min_length=1)
    forbidSelfApproval: bool = False
    escalateAfterSeconds: float | None = Field(None, gt=0)
    escalateTo: list[str] = Field(default_factory=list)
    decisionTimeoutSeconds: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _escalation_whole(self) -> _PolicyText:
        if bool(self.escalateTo) != (self.escalateAfterSeconds is not None):
            raise ValueError("escalateAfterSeconds and escalateTo go together")
        for name in [*(self.reviewers or ()), *self.escalateTo]:
            if not name.strip() or name == GROUP_PREFIX:
                raise ValueError(f"{name!r} is not a reviewer: a subject or group:<name>")
        return self


@dataclass(frozen=True, slots=True)
class ReviewPolicy:
    name: str
    """How messages name it: its place in the list and what it matches."""
    agent_id: str = "*"
    tool_name: str = "*"
    approvals: int = 1
    reviewers: tuple[str, ...] | None = None
    """None: any approver in scope."""
    forbid_self_approval: bool = False
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()
    decision_timeout: timedelta | None = None

    def matches(self, agent_id: str, tool_name: str | None) -> bool:
        return self.agent_id in ("*", agent_id) and self.tool_name in ("*", tool_name or "")

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

    def allows(
        self, subject: str, groups: Iterable[str], suspended_at: datetime | None, now: datetime
    ) -> bool:
        """Whether `subject` (with `groups`) is among the reviewers now."""
        if self.reviewers is None:
            return True
        names = set(self.assigned_to(suspended_at, now))
        return subject in names or any(GROUP_PREFIX + group in names for group in groups)


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
        raise ValueError(f"{where}{'.' + field if field else ''}: {error['msg']}") from None
    seconds = text.escalateAfterSeconds
    timeout = text.decisionTimeoutSeconds
    return ReviewPolicy(
        name=f"{where} (agentId {text.agentId}, toolName {text.toolName})",
        agent_id=text.agentId,
        tool_name=text.toolName,
        approvals=text.approvals,
        reviewers=tuple(text.reviewers) if text.reviewers is not None else None,
        forbid_self_approval=text.forbidSelfApproval,
        escalate_after=timedelta(seconds=seconds) if seconds is not None else None,
        escalate_to=tuple(text.escalateTo),
        decision_timeout=timedelta(seconds=timeout) if timeout is not None else None,
    )
