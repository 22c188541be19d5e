"""Deliveries: one per event and webhook, attempted until the webhook answers 2xx.

A delivery is PENDING until an attempt is answered with 2xx (DELIVERED) or the retry
schedule runs out (FAILED, redeliverable). An attempt is recorded before it is made
(`attemptingUntil`), so an attempt cut short by a crash is made again once that passes;
one recorded DELIVERED is never attempted again but by `redeliver`.

`nextAttemptAt` is when a PENDING delivery is next due: at once when it is made, at a
retry's time, at its attempt's hold while one is under way, or at the retry of an earlier
delivery of its run that it waits behind. So the deliverer finds what is due with one
query on `{status, nextAttemptAt}`, whatever waits, and begins and finishes attempts a
batch at a time (docs/webhooks.md, "Delivery").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument, UpdateMany
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from suspended_runs.storage.events.outbox import DUPLICATE_KEY
from suspended_runs.storage.events.webhooks import count_change
from suspended_runs.storage.types import Document

_REDELIVERY_TRIES = 5
_OLD_INDEX = "webhookId_1_status_1__id_1"
"""Each webhook's pending deliveries, asked webhook by webhook by an older deliverer."""
_INSERTED_AT_ONCE = 500
"""Deliveries per insert: a write's share of the database stays short beside requests'."""


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


@dataclass(frozen=True, slots=True)
class Waiting:
    """A PENDING delivery not yet due: under way, waiting for a retry, or held back."""

    delivery_id: str
    webhook_id: str
    run_id: str
    until: datetime


@dataclass(frozen=True, slots=True)
class Finished:
    """Where an attempt begun with hold `until` left its delivery."""

    delivery_id: str
    until: datetime
    status: DeliveryStatus
    status_code: int | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None
    made: bool = True
    """False: begun ahead but never posted; its attempt is taken back, due at once."""


def delivery_id(event: Document, webhook_id: str) -> str:
    """Sortable by the event's time, and the same for every writer of one delivery."""
    at: datetime = event["at"]
    digest = hashlib.sha256(f"{event['_id']}|{webhook_id}".encode()).hexdigest()[:16]
    return f"dlv_{int(at.timestamp() * 1000):013d}_{digest}"


def _document(delivery: Delivery, retention: timedelta, begun: datetime | None) -> Document:
    """A new delivery as stored; `begun`: with its first attempt recorded, held until then."""
    d, now = delivery, delivery.created_at
    doc: Document = {
        "_id": d.delivery_id,
        "webhookId": d.webhook_id,
        "eventId": d.event_id,
        "event": d.event,
        "runId": d.run_id,
        "toolCallId": d.tool_call_id,
        "run": d.run,
        "eventAt": d.event_at,
        "status": d.status.value,
        "attempts": 0,
        "createdAt": now,
        "nextAttemptAt": now,
        "expiresAt": now + retention,
    }
    if begun is not None:
        doc |= {
            "attempts": 1,
            "attemptingUntil": begun,
            "lastAttemptAt": now,
            "nextAttemptAt": begun,
        }
    return doc


class DeliveryStore:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        retention: timedelta,
        state: AsyncCollection[Document],
    ) -> None:
        # MongoDB's default acknowledgement: a write lost with the database is an attempt
        # made again, which at least once allows.
        self.collection = collection
        self.retention = retention
        self._state = state
        """Where a redelivery is counted, which the deliverer looks for (webhooks.py)."""

    async def ensure_indexes(self) -> None:
        await self.collection.create_index([("status", ASCENDING), ("nextAttemptAt", ASCENDING)])
        await self.collection.create_index([("status", ASCENDING), ("_id", ASCENDING)])
        await self.collection.create_index([("webhookId", ASCENDING), ("_id", DESCENDING)])
        await self.collection.create_index("expiresAt", expireAfterSeconds=0)
        if _OLD_INDEX in await self.collection.index_information():
            await self.collection.drop_index(_OLD_INDEX)  # every write paid for it

    def of(self, targets: list[tuple[Document, list[str]]], now: datetime) -> list[Delivery]:
        """The deliveries of each event to its webhooks, made `now` (not yet written)."""
        return [
            Delivery(
                delivery_id=delivery_id(event, webhook_id),
                webhook_id=webhook_id,
                event_id=event["_id"],
                event=event["type"],
                run_id=event["runId"],
                status=DeliveryStatus.PENDING,
                attempts=0,
                created_at=now,
                event_at=event["at"],
                run=event["run"],
                tool_call_id=event.get("toolCallId"),
                next_attempt_at=now,
            )
            for event, webhook_ids in targets
            for webhook_id in webhook_ids
        ]

    async def add(
        self,
        deliveries: list[Delivery],
        begun: set[str] | None = None,
        until: datetime | None = None,
    ) -> list[Delivery]:
        """Write `deliveries`, a write per `_INSERTED_AT_ONCE`; those made (one already
        there, written before a crash, is kept as it is). Those `begun` are written with
        their first attempt recorded, held until `until`, as `begin` would: a burst's
        deliveries that can be posted at once cost one write, not two."""
        docs = [_document(d, self.retention, until if d.delivery_id in (begun or ()) else None)
                for d in deliveries]  # fmt: skip
        made: list[Delivery] = []
        for i in range(0, len(docs), _INSERTED_AT_ONCE):
            some, there = docs[i : i + _INSERTED_AT_ONCE], set[int]()
            try:
                await self.collection.insert_many(some, ordered=False)
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors", [])
                if any(error.get("code") != DUPLICATE_KEY for error in errors):
                    raise
                there = {error["index"] for error in errors}
            made += [deliveries[i + k] for k in range(len(some)) if k not in there]
        return made

    async def due(self, now: datetime, since: datetime | None = None) -> list[Delivery]:
        """PENDING deliveries due by `now`: all of them, or those that came due `since`
        (a range of the `{status, nextAttemptAt}` index: what came due, not what waits)."""
        due: Document = {"$lte": now} | ({"$gte": since} if since is not None else {})
        cursor = self.collection.find(
            {"status": DeliveryStatus.PENDING.value, "nextAttemptAt": due}
        )
        return [Delivery.from_document(doc) async for doc in cursor]

    async def waiting(self, now: datetime) -> list[Waiting]:
        """PENDING deliveries not due by `now` (read when an instance starts delivering)."""
        cursor = self.collection.find(
            {"status": DeliveryStatus.PENDING.value, "nextAttemptAt": {"$gt": now}},
            {"webhookId": 1, "runId": 1, "nextAttemptAt": 1},
        )
        return [
            Waiting(doc["_id"], doc["webhookId"], doc["runId"], doc["nextAttemptAt"])
            async for doc in cursor
        ]

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

    async def begin(self, deliveries: list[Delivery], now: datetime, until: datetime) -> set[str]:
        """Record an attempt of each delivery before it is made, held until `until` (unique
        to this call): no step finds it due before. The ids of those begun: one that
        changed since it was read (another attempt, a redelivery) or is under way elsewhere
        is left."""
        if not deliveries:
            return set()
        begin = {
            "$inc": {"attempts": 1},
            "$set": {"attemptingUntil": until, "lastAttemptAt": now, "nextAttemptAt": until},
        }
        by_attempts: dict[int, list[str]] = {}
        for d in deliveries:
            by_attempts.setdefault(d.attempts, []).append(d.delivery_id)
        # One statement per count of attempts, not per delivery: the embedded server's
        # cost is per statement, and a burst's deliveries all have the same count.
        ops = [
            UpdateMany(
                {
                    "_id": {"$in": some},
                    "status": DeliveryStatus.PENDING.value,
                    "attempts": attempts,
                    # None, or passed: no top-level $or, which the embedded server scans.
                    "attemptingUntil": {"$not": {"$gt": now}},
                },
                begin,
            )
            for attempts, some in by_attempts.items()
        ]
        ids = [d.delivery_id for d in deliveries]
        if (await self.collection.bulk_write(ops, ordered=False)).modified_count == len(ids):
            return set(ids)
        cursor = self.collection.find({"_id": {"$in": ids}, "attemptingUntil": until}, {"_id": 1})
        return {doc["_id"] async for doc in cursor}

    async def hold_back(self, ids: list[str], until: datetime) -> None:
        """Make `ids` due no sooner than `until`: each waits behind an earlier delivery of
        its run and webhook, whose retry is then."""
        await self.collection.update_many(
            {"_id": {"$in": ids}, "status": DeliveryStatus.PENDING.value},
            {"$max": {"nextAttemptAt": until}},
        )

    async def finish(self, finished: list[Finished], released: list[str], now: datetime) -> None:
        """In one write: where each attempt left its delivery (unless it was redelivered
        meanwhile: then the redelivery stands), and the deliveries `released` (held back
        behind one now done) due at once."""
        alike: dict[tuple[datetime, tuple[tuple[str, Any], ...]], list[str]] = {}
        for f in finished:  # a statement per batch begun and result, not per delivery
            key = (f.until, tuple(_result(f, now).items()))
            alike.setdefault(key, []).append(f.delivery_id)
        ops = [
            UpdateMany({"_id": {"$in": ids}, "attemptingUntil": until}, {"$set": dict(result)})
            for (until, result), ids in alike.items()
        ]
        if released:
            ops.append(
                UpdateMany(
                    {
                        "_id": {"$in": released},
                        "status": DeliveryStatus.PENDING.value,
                        "attemptingUntil": {"$not": {"$gt": now}},
                    },
                    {"$set": {"nextAttemptAt": now}},
                )
            )
        if ops:
            await self.collection.bulk_write(ops, ordered=False)

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
                await count_change(self._state)
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


def _result(finished: Finished, now: datetime) -> Document:
    update: dict[str, Any] = {
        "status": finished.status.value,
        "lastStatusCode": finished.status_code,
        "lastError": finished.error,
        "nextAttemptAt": finished.next_attempt_at,
        "attemptingUntil": None,
    }
    if finished.status is DeliveryStatus.DELIVERED:
        update["deliveredAt"] = now
    if not finished.made:  # only first attempts are begun ahead
        update |= {"attempts": 0, "lastAttemptAt": None, "nextAttemptAt": now}
    return update
