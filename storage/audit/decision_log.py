"""The decision log: an audit record of every decision asked of this server, and the
first answer to each idempotency key, so a repeated request gets that answer again.

A record is written when the decision is applied (or refused), with the decision's time;
its outcome is added when the continuation ends, so a crash in between loses no record.
Records and keys expire after the retention period (TTL indexes on `expiresAt`).
A key is held by its first caller under a lease that the caller renews while it works:
a twin waits for the answer, and takes the key over once the lease ran out (its holder died).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from suspended_runs.storage import deadlines
from suspended_runs.storage.index.filters import RunFilter
from suspended_runs.storage.types import Document

APPLIED_OUTCOMES = ["Applied", "RunDecided", "OutcomeUnknown"]
"""The outcomes of a record whose decision was applied (or may have been)."""
_BATCH_BYTES = 4 << 20
"""How much the ids of one lookup may hold: a key is as long as a request may be
(MAX_REQUEST_BYTES), and a command at most 16 MiB."""
_PENDING = "pending"
_ANSWERED = "answered"


@dataclass(frozen=True, slots=True)
class RunFacts:
    """The run a decision was about, as decisionStats filters and times it."""

    agent_id: str
    tool_name: str | None
    thread_id: str | None
    resource_id: str | None
    created_at: datetime
    suspended_at: datetime | None

    def to_document(self) -> Document:
        return {
            "agentId": self.agent_id,
            "toolName": self.tool_name,
            "threadId": self.thread_id,
            "resourceId": self.resource_id,
            "runCreatedAt": self.created_at,
            "suspendedAt": self.suspended_at,
        }


@dataclass(frozen=True, slots=True)
class AuditRecord:
    run_id: str
    tool_call_id: str | None
    action: str
    by: str
    at: datetime
    outcome: str
    """The answer's kind: `RunDecided`, `AlreadyDecided`, ..."""
    reason: str | None = None
    resume_data: Any = None
    idempotency_key: str | None = None
    edited_args: Any = None
    run_status: str | None = None
    """Where the run came to rest after this decision, once known."""
    record_id: Any = None
    """The record's `_id` once stored: its paging cursor."""
    run: RunFacts | None = None
    """What the run was when decided: for decisionStats (its scope, filter and times)."""
    person: str | None = None
    """The person behind `by` (the credential) when it was recorded; None in records
    written before people were recorded (read as `by`'s person now)."""

    def to_document(self) -> Document:
        return {
            "runId": self.run_id,
            "toolCallId": self.tool_call_id,
            "action": self.action,
            "by": self.by,
            "at": self.at,
            "outcome": self.outcome,
            "reason": self.reason,
            "resumeData": self.resume_data,
            "idempotencyKey": self.idempotency_key,
            "editedArgs": self.edited_args,
            "runStatus": self.run_status,
            "person": self.person,
            **(self.run.to_document() if self.run else {}),
        }

    @classmethod
    def from_document(cls, doc: Document) -> AuditRecord:
        return cls(
            run_id=doc["runId"],
            tool_call_id=doc.get("toolCallId"),
            action=doc["action"],
            by=doc["by"],
            at=doc["at"],
            outcome=doc["outcome"],
            reason=doc.get("reason"),
            resume_data=doc.get("resumeData"),
            idempotency_key=doc.get("idempotencyKey"),
            edited_args=doc.get("editedArgs"),
            run_status=doc.get("runStatus"),
            record_id=doc.get("_id"),
            person=doc.get("person"),
        )


@dataclass(frozen=True, slots=True)
class KeyUse:
    """What an idempotency key holds when a caller finds it taken."""

    request_hash: str
    answer: Document | None
    """None while the first caller is still answering."""


class DecisionLog:
    def __init__(
        self,
        records: AsyncCollection[Document],
        keys: AsyncCollection[Document],
        retention: timedelta,
    ) -> None:
        self.records = records
        self.keys = keys
        self.retention = retention

    async def ensure_indexes(self) -> None:
        await self.records.create_index([("runId", ASCENDING), ("at", ASCENDING)])
        await self.records.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)
        await self.records.create_index([("at", ASCENDING)])  # decisionStats' window
        await self.keys.create_index([("expiresAt", ASCENDING)], expireAfterSeconds=0)

    async def record(self, record: AuditRecord) -> Any:
        """Store a record; its `_id`, to add the outcome to later."""
        doc = {**record.to_document(), "expiresAt": record.at + self.retention}
        return (await self.records.insert_one(doc)).inserted_id

    async def add_outcome(self, record_id: Any, outcome: str, run_status: str | None) -> None:
        """The answer's kind, and the state the run came to rest in, once known."""
        await self.records.update_one(
            {"_id": record_id}, {"$set": {"outcome": outcome, "runStatus": run_status}}
        )

    async def for_run(
        self, run_id: str, *, limit: int, after: tuple[datetime, Any] | None = None
    ) -> list[AuditRecord]:
        """A run's records, oldest first, from after the record `after` names."""
        query: Document = {"runId": run_id}
        if after is not None:
            # Not an $or of (at > a) and (at == a, _id > i): the embedded server scans for one.
            query["at"] = {"$gte": after[0]}
        cursor = self.records.find(query, sort=[("at", ASCENDING), ("_id", 1)])
        found: list[AuditRecord] = []
        async for doc in cursor:
            if after is not None and (doc["at"], doc["_id"]) <= after:
                continue
            found.append(AuditRecord.from_document(doc))
            if len(found) == limit:
                break
        return found

    async def count_for_run(self, run_id: str) -> int:
        return await self.records.count_documents({"runId": run_id})

    async def get_many(self, record_ids: list[Any]) -> dict[Any, AuditRecord]:
        """The records of `record_ids` (their `_id`s) that exist: one query."""
        if not record_ids:
            return {}
        found = self.records.find({"_id": {"$in": record_ids}}, limit=len(record_ids))
        return {doc["_id"]: AuditRecord.from_document(doc) async for doc in found}

    async def applied_between(
        self, run_filter: RunFilter, decided_from: datetime, decided_to: datetime, limit: int
    ) -> list[Document]:
        """The records of decisions applied in [decided_from, decided_to] on runs the filter
        holds (its run fields and creation dates; not its states: a decision is about a
        run that was SUSPENDED): their action, who, reason and times (what decisionStats
        counts)."""
        query: Document = {
            "at": {"$gte": decided_from, "$lte": decided_to},
            "outcome": {"$in": APPLIED_OUTCOMES},
            **run_filter.run_fields_query(),
        }
        created = {
            op: moment
            for op, moment in (("$gte", run_filter.from_date), ("$lte", run_filter.to_date))
            if moment is not None
        }
        if created:
            query["runCreatedAt"] = created
        fields = ["action", "by", "reason", "at", "suspendedAt", "agentId", "toolName"]
        cursor = self.records.find(query, dict.fromkeys(fields, 1), limit=limit)
        return [doc async for doc in cursor]

    async def take_key(
        self, key: str, request_hash: str, now: datetime, lease: timedelta
    ) -> KeyUse | None:
        """None when this caller took the key and must answer; else what the key holds.

        A key whose holder's lease ran out (its process died) is taken over.
        """
        try:
            await self.keys.insert_one(
                {
                    "_id": key,
                    "requestHash": request_hash,
                    "state": _PENDING,
                    "at": now,
                    "leaseExpiresAt": now + lease,
                    "expiresAt": now + self.retention,
                }
            )
            return None
        except DuplicateKeyError:
            pass
        taken = await self.keys.update_one(
            {
                "_id": key,
                "state": _PENDING,
                "requestHash": request_hash,
                "leaseExpiresAt": {"$lt": now},
            },
            {"$set": {"leaseExpiresAt": now + lease, "at": now}},
        )
        if taken.modified_count == 1:
            return None
        return await self.key_use(key) or KeyUse(request_hash="", answer=None)

    async def key_use(self, key: str) -> KeyUse | None:
        """What a key holds, without taking it (None: no such key)."""
        doc = await self.keys.find_one({"_id": key})
        if doc is None:
            return None
        answer = doc.get("answer") if doc.get("state") == _ANSWERED else None
        return KeyUse(request_hash=doc.get("requestHash", ""), answer=answer)

    async def answers_kept(self, keys: Sequence[str]) -> list[tuple[str, KeyUse]]:
        """The answered ones of `keys` (exact `_id`s), as (key, what it holds), oldest
        first: one query by `_id` whatever else is kept (more only for keys that together
        outgrow a command)."""
        fields = {"state": 1, "requestHash": 1, "answer": 1, "at": 1}
        found: list[tuple[datetime, str, KeyUse]] = []
        for batch in _batches(keys):
            # By `_id` alone: asked for `state` too, the embedded server plans a collection scan.
            cursor = self.keys.find({"_id": {"$in": batch}}, fields, limit=len(batch))
            async for doc in cursor:
                if doc.get("state") == _ANSWERED:
                    use = KeyUse(request_hash=doc.get("requestHash", ""), answer=doc["answer"])
                    found.append((doc["at"], doc["_id"], use))
        found.sort(key=lambda held: held[0])
        return [(key, use) for _, key, use in found]

    async def renew_key(self, key: str, until: datetime) -> None:
        await self.keys.update_one(
            {"_id": key, "state": _PENDING}, {"$set": {"leaseExpiresAt": until}}
        )

    async def wait_for_answer(self, key: str, within: float) -> Document | None:
        """The first caller's answer, once it has one; None if the key was let go, or
        its holder's lease ran out, or `within` seconds passed. It waits on another
        request, not on the database: each look has the request's whole deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            deadlines.restart()
            doc = await self.keys.find_one({"_id": key})
            if doc is None:
                return None  # the first caller failed and let the key go
            if doc.get("state") == _ANSWERED:
                answer: Document = doc["answer"]
                return answer
            if doc["leaseExpiresAt"].replace(tzinfo=None) < _utc_naive():
                return None  # its holder died: the caller may take it over
            await asyncio.sleep(0.05)
        return None

    async def store_answer(self, key: str, answer: Document) -> None:
        await self.keys.update_one({"_id": key}, {"$set": {"state": _ANSWERED, "answer": answer}})

    async def release_key(self, key: str) -> None:
        """Let a key go whose first caller applied nothing, so a retry under it may answer."""
        await self.keys.delete_one({"_id": key, "state": _PENDING})


def _batches(keys: Sequence[str]) -> Iterator[list[str]]:
    """`keys` in lists of at most `_BATCH_BYTES` each (a key alone may be longer)."""
    batch: list[str] = []
    size = 0
    for key in keys:
        if batch and size + len(key.encode()) > _BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(key)
        size += len(key.encode())
    if batch:
        yield batch


def _utc_naive() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
