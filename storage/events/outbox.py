"""The event outbox: what happened to runs, written once by the step that made it happen.

A step writes its events beside its change (the follower before it saves the resume token
past them, so a crash replays rather than loses), keyed by what changed: two instances
seeing one change write one event. The deliverer (runtime/webhooks) posts each to the
webhooks that want it. Nothing is written while no webhook exists, so a first start, a
reconcile or a rebuild announces nothing for runs already suspended.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.types import Document

_ACTIVE_FOR = 1.0
"""Seconds an answer to "does any webhook exist?" is used before it is asked again: a
webhook made on one instance is told of what other instances see from then on."""
DUPLICATE_KEY = 11000


class EventType(StrEnum):
    RUN_SUSPENDED = "run.suspended"
    TOOL_CALL_DECIDED = "toolcall.decided"
    RUN_SETTLED = "run.settled"
    RUN_STALLED = "run.stalled"
    APPROVAL_EXPIRING = "approval.expiring"
    APPROVAL_EXPIRED = "approval.expired"
    APPROVAL_ESCALATED = "approval.escalated"
    RUN_IN_REVIEW = "run.in_review"
    RUN_ASSIGNED = "run.assigned"


@dataclass(frozen=True, slots=True)
class RunEvent:
    type: EventType
    run: RunEntry
    """The run as it was when this happened."""
    key: str
    """What changed, so that every writer of one change names it alike."""
    at: datetime
    tool_call_id: str | None = None

    @property
    def event_id(self) -> str:
        """Opaque and without dots, as Standard Webhooks' `webhook-id` must be."""
        return "evt_" + hashlib.sha256(self.key.encode()).hexdigest()[:32]

    def to_document(self, retention: timedelta) -> Document:
        return {
            "_id": self.event_id,
            "key": self.key,
            "type": self.type.value,
            "runId": self.run.run_id,
            "toolCallId": self.tool_call_id,
            "run": self.run.to_document() | self.run.marks_document(),
            "at": self.at,
            "fannedOut": False,
            "expiresAt": self.at + retention,
        }


def suspended(run: RunEntry, at: datetime) -> RunEvent:
    """A run became suspended. One suspension is its pending calls: Mastra writes a
    snapshot twice as it suspends, with two `updatedAt`s and the same calls."""
    calls = sorted(c.tool_call_id or "" for c in run.pending_calls())
    moment = run.suspended_at.isoformat() if run.suspended_at else ""
    what = ",".join(calls) if any(calls) else moment
    return RunEvent(EventType.RUN_SUSPENDED, run, f"suspended|{run.run_id}|{what}", at)


def decided(run: RunEntry, tool_call_id: str | None, at: datetime) -> RunEvent:
    key = f"decided|{run.run_id}|{tool_call_id}"
    return RunEvent(EventType.TOOL_CALL_DECIDED, run, key, at, tool_call_id)


def settled(run: RunEntry, at: datetime) -> RunEvent:
    """A run ended (COMPLETED, FAILED, ENDED, CANCELLED): once per suspension it ends."""
    moment = run.suspended_at.isoformat() if run.suspended_at else ""
    return RunEvent(EventType.RUN_SETTLED, run, f"settled|{run.run_id}|{moment}", at)


def stalled(run: RunEntry, at: datetime) -> RunEvent:
    """A continued run's process stopped renewing its claim: once per claim."""
    claimed = run.claim.at.isoformat() if run.claim else ""
    return RunEvent(EventType.RUN_STALLED, run, f"stalled|{run.run_id}|{claimed}", at)


def expiring(run: RunEntry, at: datetime) -> RunEvent:
    """A pending approval expires soon: once per suspension."""
    moment = run.suspended_at.isoformat() if run.suspended_at else ""
    return RunEvent(EventType.APPROVAL_EXPIRING, run, f"expiring|{run.run_id}|{moment}", at)


def escalated(run: RunEntry, tool_call_id: str | None, at: datetime) -> RunEvent:
    """A pending approval waited past its review policy's escalateAfterSeconds: once per
    suspension and call."""
    moment = run.suspended_at.isoformat() if run.suspended_at else ""
    key = f"escalated|{run.run_id}|{tool_call_id}|{moment}"
    return RunEvent(EventType.APPROVAL_ESCALATED, run, key, at, tool_call_id)


def in_review(run: RunEntry, at: datetime) -> RunEvent:
    """A person began to review a waiting run (`run.review`): once per review, not as its
    reviewer extends it."""
    review = run.review
    who = f"{review.person}|{review.at.isoformat()}" if review else ""
    return RunEvent(EventType.RUN_IN_REVIEW, run, f"in_review|{run.run_id}|{who}", at)


def assigned(run: RunEntry, at: datetime) -> RunEvent:
    """A waiting run was handed to more people (`run.assignees`): once per hand-over."""
    key = f"assigned|{run.run_id}|{','.join(run.assignees)}|{at.isoformat()}"
    return RunEvent(EventType.RUN_ASSIGNED, run, key, at)


def expired(run: RunEntry, tool_call_id: str | None, at: datetime) -> RunEvent:
    key = f"expired|{run.run_id}|{tool_call_id}"
    return RunEvent(EventType.APPROVAL_EXPIRED, run, key, at, tool_call_id)


class EventOutbox:
    def __init__(
        self,
        events: AsyncCollection[Document],
        webhooks: AsyncCollection[Document],
        retention: timedelta,
    ) -> None:
        # The acknowledgement the follower's token is saved with, written before it.
        self.events = events
        self._webhooks = webhooks
        self.retention = retention
        self._active: tuple[float, bool] | None = None
        self.listeners: list[Callable[[], None]] = []
        """Told when this process writes events (the deliverer, which wakes for them)."""

    async def ensure_indexes(self) -> None:
        await self.events.create_index([("fannedOut", ASCENDING), ("at", ASCENDING)])
        await self.events.create_index("expiresAt", expireAfterSeconds=0)

    async def active(self) -> bool:
        """Whether any webhook exists (asked every few seconds): events start with one."""
        now = time.monotonic()
        if self._active is None or now - self._active[0] >= _ACTIVE_FOR:
            exists = await self._webhooks.find_one({"disabled": {"$ne": True}}, {"_id": 1})
            self._active = (now, exists is not None)
        return self._active[1]

    def webhook_added(self) -> None:
        """This instance made a webhook: events start now, not at the next ask."""
        self._active = (time.monotonic(), True)

    async def add(self, events: Iterable[RunEvent]) -> int:
        """Write `events` (those already written, by this step before a crash or by another
        instance, are left as they are); how many were new."""
        if not await self.active():
            return 0
        return await self.add_documents([event.to_document(self.retention) for event in events])

    async def add_documents(self, docs: list[Document]) -> int:
        """Write events as `RunEvent.to_document` made them, whether or not a webhook exists
        now (the step that made them asked); how many were new."""
        if not docs:
            return 0
        try:
            result = await self.events.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(error.get("code") != DUPLICATE_KEY for error in errors):
                raise
            return self._written(int(exc.details.get("nInserted", 0)))
        return self._written(len(result.inserted_ids))

    def _written(self, new: int) -> int:
        if new:
            for listener in self.listeners:
                listener()
        return new

    async def not_fanned_out(self, limit: int) -> list[Document]:
        """The oldest events not yet turned into deliveries."""
        cursor = self.events.find({"fannedOut": False}, sort=[("at", 1)], limit=limit)
        return [doc async for doc in cursor]

    async def fanned_out(self, event_ids: list[str]) -> None:
        await self.events.update_many({"_id": {"$in": event_ids}}, {"$set": {"fannedOut": True}})

    async def depth(self) -> int:
        return await self.events.count_documents({"fannedOut": False})

    async def oldest(self) -> datetime | None:
        """When the oldest event not yet turned into deliveries happened."""
        doc = await self.events.find_one({"fannedOut": False}, {"at": 1}, sort=[("at", 1)])
        return doc.get("at") if doc else None
