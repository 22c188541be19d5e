"""The decision log: an audit record of every decision asked of this server, and the
first answer to each idempotency key, so a repeated request gets that answer again."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from suspended_runs.storage.types import Document

_PENDING = "pending"
_ANSWERED = "answered"


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
        )


@dataclass(frozen=True, slots=True)
class KeyUse:
    """What an idempotency key holds when a caller finds it taken."""

    request_hash: str
    answer: Document | None
    """None while the first caller is still answering."""


class DecisionLog:
    def __init__(self, records: AsyncCollection[Document], keys: AsyncCollection[Document]) -> None:
        self.records = records
        self.keys = keys

    async def ensure_indexes(self) -> None:
        await self.records.create_index([("runId", ASCENDING), ("at", ASCENDING)])

    async def record(self, record: AuditRecord) -> None:
        await self.records.insert_one(record.to_document())

    async def for_run(self, run_id: str) -> list[AuditRecord]:
        cursor = self.records.find({"runId": run_id}, sort=[("at", ASCENDING), ("_id", 1)])
        return [AuditRecord.from_document(doc) async for doc in cursor]

    async def take_key(self, key: str, request_hash: str, now: datetime) -> KeyUse | None:
        """None when this caller took the key and must answer; else what the key holds."""
        try:
            await self.keys.insert_one(
                {"_id": key, "requestHash": request_hash, "state": _PENDING, "at": now}
            )
            return None
        except DuplicateKeyError:
            doc = await self.keys.find_one({"_id": key}) or {}
            answer = doc.get("answer") if doc.get("state") == _ANSWERED else None
            return KeyUse(request_hash=doc.get("requestHash", ""), answer=answer)

    async def wait_for_answer(self, key: str, within: float) -> Document | None:
        """The first caller's answer, once it has one (it is answering concurrently)."""
        async with asyncio.timeout(within):
            while True:
                doc = await self.keys.find_one({"_id": key})
                if doc is None:
                    return None  # the first caller failed and let the key go
                if doc.get("state") == _ANSWERED:
                    answer: Document = doc["answer"]
                    return answer
                await asyncio.sleep(0.05)

    async def store_answer(self, key: str, answer: Document) -> None:
        await self.keys.update_one({"_id": key}, {"$set": {"state": _ANSWERED, "answer": answer}})

    async def release_key(self, key: str) -> None:
        """Let a key go whose first caller failed before answering, so a retry may answer."""
        await self.keys.delete_one({"_id": key, "state": _PENDING})
