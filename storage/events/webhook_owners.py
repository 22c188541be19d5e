"""Webhooks and their owners: a webhook whose owner is gone is disabled, saying why, until
an admin takes it over.

A webhook keeps posting what its owner (`createdBy`) may see for as long as it exists; an
owner whose key was revoked, or who no longer holds admin over the webhook's scope, must
not keep a feed of a tenant's runs. Who is gone is decided above (resolvers/
webhook_owners.py); here, the writes on the webhooks' collection beside WebhookStore's:
disabled for their owner (`disabledFor: "owner"`, apart from a receiver's 410, which a
take-over does not undo), when a token owner was last seen (`ownerSeenAt`), and a new
owner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.events.webhooks import Webhook
from suspended_runs.storage.types import Document

OWNER_GONE = "owner"
"""`disabledFor` of a webhook disabled because its owner is gone."""


class WebhookOwners:
    def __init__(
        self, collection: AsyncCollection[Document], changed: Callable[[], Awaitable[None]]
    ) -> None:
        self.collection = collection
        """The webhooks' (WebhookStore.collection, durable writes)."""
        self._changed = changed
        """Counts a change the deliverer must see (WebhookStore.count_change)."""

    async def disable(self, webhook_ids: Sequence[str], reason: str) -> int:
        """Disable these webhooks, enabled until now, for their owner; how many were."""
        if not webhook_ids:
            return 0
        result = await self.collection.update_many(
            {"_id": {"$in": list(webhook_ids)}, "disabled": {"$ne": True}},
            {"$set": {"disabled": True, "disabledReason": reason, "disabledFor": OWNER_GONE}},
        )
        if result.modified_count:
            await self._changed()
        return result.modified_count

    async def made_by(self, created_by: str) -> list[Webhook]:
        cursor = self.collection.find({"createdBy": created_by})
        return [Webhook.from_document(doc) async for doc in cursor]

    async def seen(self, webhook_ids: Sequence[str], now: datetime) -> None:
        """Their owner presented itself as one who may own them, `now`."""
        if webhook_ids:
            await self.collection.update_many(
                {"_id": {"$in": list(webhook_ids)}}, {"$set": {"ownerSeenAt": now}}
            )

    async def last_seen(self, prefix: str, now: datetime) -> dict[str, datetime]:
        """When the owners of the enabled webhooks made by `prefix` credentials (`jwt:`)
        were last seen, by webhook id. A webhook of none yet (made before this was kept,
        or not seen since it was made) is taken as seen `now`: its wait starts here."""
        found: dict[str, datetime] = {}
        unseen: list[str] = []
        query = {"disabled": {"$ne": True}}
        async for doc in self.collection.find(query, {"createdBy": 1, "ownerSeenAt": 1}):
            if not str(doc.get("createdBy", "")).startswith(prefix):
                continue
            seen_at = doc.get("ownerSeenAt")
            if seen_at is None:
                unseen.append(doc["_id"])
            found[doc["_id"]] = seen_at or now
        await self.seen(unseen, now)
        return found

    async def take_over(self, webhook: Webhook, by: str, now: datetime) -> Webhook | None:
        """Make `by` the owner of `webhook` as it was read, enabled again when it was
        disabled for its owner; None when it changed meanwhile (or is gone)."""
        update: Document = {"$set": {"createdBy": by, "ownerSeenAt": now}}
        current = await self.collection.find_one({"_id": webhook.webhook_id}, {"disabledFor": 1})
        query: Document = {"_id": webhook.webhook_id, "createdBy": webhook.created_by}
        if current is not None and current.get("disabledFor") == OWNER_GONE:
            query["disabledFor"] = OWNER_GONE
            update["$set"] |= {"disabled": False, "disabledReason": None}
            update["$unset"] = {"disabledFor": ""}
        doc = await self.collection.find_one_and_update(
            query, update, return_document=ReturnDocument.AFTER
        )
        if doc is None:
            return None
        await self._changed()  # enabled again, or another creator's share of the slots
        return Webhook.from_document(doc)
