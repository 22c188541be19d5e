"""Deliveries: one per event and webhook, attempted until the webhook answers 2xx.

A delivery is PENDING until an attempt is answered with 2xx (DELIVERED) or the retry
schedule runs out (FAILED, redeliverable). An attempt is recorded before it is made
(`attemptingUntil`), so an attempt cut short by a crash is made again once that passes;
one recorded DELIVERED is never attempted again but by `redeliver`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from suspended_runs.storage.events.outbox import DUPLICATE_KEY
from suspended_runs.storage.types import Document

_REDELIVERY_TRIES = 5


class DeliveryStatus(StrEnum):
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class Delivery:
    delivery_id: str
    webhook_id: str
    event_id: str
    event: str
    run_id: str
    status: DeliveryStatus
    attempts: int
    created_at: datetime
    event_at: datetime
    run: Document
    """The run as the event captured it."""
    tool_call_id: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    delivered_at: datetime | None = None
    retry_base: int = 0
    """`attempts` when the schedule last started (a redelivery starts it again)."""

    @classmethod
    def from_document(cls, doc: Document) -> Delivery:
        return cls(
            delivery_id=doc["_id"],
            webhook_id=doc["webhookId"],
            event_id=doc["eventId"],
            event=doc["event"],
            run_id=doc["runId"],
            status=DeliveryStatus(doc["status"]),
            attempts=int(doc.get("attempts", 0)),
            created_at=doc["createdAt"],
            event_at=doc["eventAt"],
            run=doc.get("run") or {},
            tool_call_id=doc.get("toolCallId"),
            last_status_code=doc.get("lastStatusCode"),
            last_error=doc.get("lastError"),
            next_attempt_at=doc.get("nextAttemptAt"),
            delivered_at=doc.get("deliveredAt"),
            retry_base=int(doc.get("retryBase", 0)),
        )


def delivery_id(event: Document, webhook_id: str) -> str:
    """Sortable by the event's time, and the same for every writer of one delivery."""
    at: datetime = event["at"]
    digest = hashlib.sha256(f"{event['_id']}|{webhook_id}".encode()).hexdigest()[:16]
    return f"dlv_{int(at.timestamp() * 1000):013d}_{digest}"


class DeliveryStore:
    def __init__(self, collection: AsyncCollection[Document], retention: timedelta) -> None:
        # MongoDB's default acknowledgement: a write lost with the database is an attempt
        # made again, which at least once allows.
        self.collection = collection
        self.retention = retention

    async def ensure_indexes(self) -> None:
        await self.collection.create_index(
            [("webhookId", ASCENDING), ("status", ASCENDING), ("_id", ASCENDING)]
        )
        await self.collection.create_index([("status", ASCENDING), ("_id", ASCENDING)])
        await self.collection.create_index([("webhookId", ASCENDING), ("_id", DESCENDING)])
        await self.collection.create_index("expiresAt", expireAfterSeconds=0)

    async def add(self, targets: list[tuple[Document, list[str]]], now: datetime) -> None:
        """The deliveries of each event to its webhooks, in one write (those already there,
        written before a crash, are kept)."""
        docs = [
            {
                "_id": delivery_id(event, webhook_id),
                "webhookId": webhook_id,
                "eventId": event["_id"],
                "event": event["type"],
                "runId": event["runId"],
                "toolCallId": event.get("toolCallId"),
                "run": event["run"],
                "eventAt": event["at"],
                "status": DeliveryStatus.PENDING.value,
                "attempts": 0,
                "createdAt": now,
                "nextAttemptAt": now,
                "expiresAt": now + self.retention,
            }
            for event, webhook_ids in targets
            for webhook_id in webhook_ids
        ]
        if not docs:
            return
        try:
            await self.collection.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(error.get("code") != DUPLICATE_KEY for error in errors):
                raise

    async def pending(
        self, webhook_id: str, limit: int, after: str | None = None
    ) -> list[Delivery]:
        """A webhook's oldest PENDING deliveries (after the delivery `after`), in the order
        of their events, without their runs (asked often): `begin_attempt` reads one whole."""
        query: Document = {"webhookId": webhook_id, "status": DeliveryStatus.PENDING.value}
        if after is not None:
            query["_id"] = {"$gt": after}
        cursor = self.collection.find(
            query,
            {"run": 0},
            sort=[("_id", 1)],
            limit=limit,
        )
        return [Delivery.from_document(doc) async for doc in cursor]

    async def give_up_all_but(self, webhook_ids: list[str], now: datetime) -> int:
        """FAILED: the PENDING deliveries of webhooks deleted or disabled since."""
        result = await self.collection.update_many(
            {"status": DeliveryStatus.PENDING.value, "webhookId": {"$nin": webhook_ids}},
            {
                "$set": {
                    "status": DeliveryStatus.FAILED.value,
                    "lastError": "the webhook was deleted or disabled",
                    "nextAttemptAt": None,
                    "attemptingUntil": None,
                }
            },
        )
        return result.modified_count

    async def begin_attempt(
        self, delivery: Delivery, now: datetime, until: datetime
    ) -> Delivery | None:
        """Record an attempt before it is made; the delivery whole, as it was before this
        attempt (None: another has it under way, or it changed meanwhile)."""
        doc = await self.collection.find_one_and_update(
            {
                "_id": delivery.delivery_id,
                "status": DeliveryStatus.PENDING.value,
                "attempts": delivery.attempts,
                # None, or passed: no top-level $or, which the embedded server scans.
                "attemptingUntil": {"$not": {"$gt": now}},
            },
            {"$inc": {"attempts": 1}, "$set": {"attemptingUntil": until, "lastAttemptAt": now}},
            return_document=ReturnDocument.BEFORE,
        )
        return Delivery.from_document(doc) if doc else None

    async def finish_attempt(
        self,
        delivery_id: str,
        status: DeliveryStatus,
        *,
        status_code: int | None,
        error: str | None,
        next_attempt_at: datetime | None,
        now: datetime,
        until: datetime,
    ) -> None:
        """Where the attempt that `begin_attempt` recorded with `until` left the delivery:
        unless it was redelivered meanwhile (then the redelivery stands)."""
        update: dict[str, Any] = {
            "status": status.value,
            "lastStatusCode": status_code,
            "lastError": error,
            "nextAttemptAt": next_attempt_at,
            "attemptingUntil": None,
        }
        if status is DeliveryStatus.DELIVERED:
            update["deliveredAt"] = now
        await self.collection.update_one(
            {"_id": delivery_id, "attemptingUntil": until}, {"$set": update}
        )

    async def page(self, webhook_id: str, first: int, after: str | None) -> list[Delivery]:
        """Newest first; `after` is the id of the last delivery of the page before."""
        query: Document = {"webhookId": webhook_id}
        if after is not None:
            query["_id"] = {"$lt": after}
        cursor = self.collection.find(query, sort=[("_id", -1)], limit=first)
        return [Delivery.from_document(doc) async for doc in cursor]

    async def count(self, webhook_id: str) -> int:
        return await self.collection.count_documents({"webhookId": webhook_id})

    async def get(self, delivery_id: str) -> Delivery | None:
        doc = await self.collection.find_one({"_id": delivery_id})
        return Delivery.from_document(doc) if doc else None

    async def redeliver(self, delivery_id: str, now: datetime) -> Delivery | None:
        """Attempt again from the start of the schedule, whatever became of it."""
        for _ in range(_REDELIVERY_TRIES):
            current = await self.get(delivery_id)
            if current is None:
                return None
            doc = await self.collection.find_one_and_update(
                # The attempts as read: one begun meanwhile would leave the schedule short.
                {"_id": delivery_id, "attempts": current.attempts},
                {
                    "$set": {
                        "status": DeliveryStatus.PENDING.value,
                        "nextAttemptAt": now,
                        "retryBase": current.attempts,
                        "attemptingUntil": None,
                        "expiresAt": now + self.retention,
                    }
                },
                return_document=ReturnDocument.AFTER,
            )
            if doc is not None:
                return Delivery.from_document(doc)
        return await self.get(delivery_id)

    async def oldest_pending(self) -> datetime | None:
        """When the event of the oldest PENDING delivery happened."""
        doc = await self.collection.find_one(
            {"status": DeliveryStatus.PENDING.value}, {"eventAt": 1}, sort=[("_id", 1)]
        )
        return doc.get("eventAt") if doc else None

    async def outcomes(self) -> dict[str, int]:
        """Deliveries by status."""
        pipeline = [{"$group": {"_id": "$status", "n": {"$sum": 1}}}]
        return {doc["_id"]: doc["n"] async for doc in await self.collection.aggregate(pipeline)}
