"""Webhooks: where events are posted, which events, and the secrets that sign them.

Secrets are stored as they are, since the deliverer signs with them (Standard Webhooks'
HMAC needs the key itself): anyone who can read this collection can sign as this server.
A rotated secret keeps signing beside the new one until `previousUntil`.

Webhooks are capped per creator, per scope (a tenant: the creator's scope, which the
filter keeps) and in all. A new one is written disabled, counted with the others, then
enabled, or deleted when a count is over its cap: concurrent creations never pass a cap
together (each counts the others, so both may be refused), and none is posted to before
it is admitted. Webhooks already over a cap lowered since are kept; new ones are refused.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.types import DURABLE, Document

SECRET_PREFIX = "whsec_"
_CHANGES = "webhooks"
"""The `_id` of the document that counts changes to webhooks, in the state collection."""
BEING_MADE = "being made: counted against the caps"
"""The `disabledReason` of a webhook written but not yet admitted (one a crash left so is
listed disabled, counts against the caps, and is deleted as any other)."""


class WebhookCap(StrEnum):
    PER_CREATOR = "per_creator"
    PER_SCOPE = "per_scope"
    TOTAL = "total"


@dataclass(frozen=True, slots=True)
class WebhookCaps:
    """The most webhooks one creator, one scope, and all together may have."""

    per_creator: int = 20
    per_scope: int = 100
    total: int = 500


@dataclass(frozen=True, slots=True)
class CapReached:
    cap: WebhookCap
    limit: int


class WebhookFormat(StrEnum):
    STANDARD = "standard"
    SLACK = "slack"


def new_secret() -> str:
    """24 random bytes, base64, after `whsec_`: what Standard Webhooks' libraries decode."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


@dataclass(frozen=True, slots=True)
class WebhookFilter:
    """Which runs a webhook is told of: its filter, within its creator's scope."""

    agent_id: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    from_date: datetime | None = None
    to_date: datetime | None = None
    agent_ids: frozenset[str] | None = None
    resource_ids: frozenset[str] | None = None
    """The creator's scope (None: any)."""

    def matches(self, run: RunEntry) -> bool:
        checks = (
            (self.agent_id, run.agent_id),
            (self.thread_id, run.thread_id),
            (self.resource_id, run.resource_id),
        )
        if any(wanted is not None and wanted != value for wanted, value in checks):
            return False
        if self.agent_ids is not None and run.agent_id not in self.agent_ids:
            return False
        if self.resource_ids is not None and run.resource_id not in self.resource_ids:
            return False
        if self.from_date is not None and run.created_at < self.from_date:
            return False
        return self.to_date is None or run.created_at <= self.to_date

    def to_document(self) -> Document:
        return {
            "agentId": self.agent_id,
            "threadId": self.thread_id,
            "resourceId": self.resource_id,
            "fromDate": self.from_date,
            "toDate": self.to_date,
            "agentIds": None if self.agent_ids is None else sorted(self.agent_ids),
            "resourceIds": None if self.resource_ids is None else sorted(self.resource_ids),
        }

    @classmethod
    def from_document(cls, doc: Document) -> WebhookFilter:
        agents, resources = doc.get("agentIds"), doc.get("resourceIds")
        return cls(
            agent_id=doc.get("agentId"),
            thread_id=doc.get("threadId"),
            resource_id=doc.get("resourceId"),
            from_date=doc.get("fromDate"),
            to_date=doc.get("toDate"),
            agent_ids=None if agents is None else frozenset(agents),
            resource_ids=None if resources is None else frozenset(resources),
        )


@dataclass(frozen=True, slots=True)
class Webhook:
    webhook_id: str
    url: str
    events: tuple[str, ...]
    filter: WebhookFilter
    format: WebhookFormat
    secret: str
    created_by: str
    created_at: datetime
    description: str | None = None
    disabled: bool = False
    disabled_reason: str | None = None
    previous_secret: str | None = None
    previous_until: datetime | None = None

    def signing_secrets(self, now: datetime) -> list[str]:
        """The secret, and during a rotation the one before it."""
        previous, until = self.previous_secret, self.previous_until
        if previous is not None and until is not None and until > now:
            return [self.secret, previous]
        return [self.secret]

    def to_document(self) -> Document:
        return {
            "_id": self.webhook_id,
            "url": self.url,
            "events": list(self.events),
            "filter": self.filter.to_document(),
            "format": self.format.value,
            "secret": self.secret,
            "createdBy": self.created_by,
            "createdAt": self.created_at,
            "description": self.description,
            "disabled": self.disabled,
            "disabledReason": self.disabled_reason,
            "previousSecret": self.previous_secret,
            "previousUntil": self.previous_until,
        }

    @classmethod
    def from_document(cls, doc: Document) -> Webhook:
        return cls(
            webhook_id=doc["_id"],
            url=doc["url"],
            events=tuple(doc.get("events") or ()),
            filter=WebhookFilter.from_document(doc.get("filter") or {}),
            format=WebhookFormat(doc.get("format", WebhookFormat.STANDARD.value)),
            secret=doc["secret"],
            created_by=doc.get("createdBy", ""),
            created_at=doc["createdAt"],
            description=doc.get("description"),
            disabled=bool(doc.get("disabled")),
            disabled_reason=doc.get("disabledReason"),
            previous_secret=doc.get("previousSecret"),
            previous_until=doc.get("previousUntil"),
        )


async def count_change(state: AsyncCollection[Document]) -> None:
    """After the change: a reader that sees the new count reads the change with it."""
    await state.update_one({"_id": _CHANGES}, {"$inc": {"changes": 1}}, upsert=True)


class WebhookStore:
    def __init__(
        self, collection: AsyncCollection[Document], state: AsyncCollection[Document]
    ) -> None:
        self.collection = collection.with_options(write_concern=DURABLE)
        self._state = state
        """Where the count of changes to webhooks is kept (`changes`)."""

    async def create(
        self,
        *,
        url: str,
        events: list[str],
        run_filter: WebhookFilter,
        format: WebhookFormat,
        description: str | None,
        created_by: str,
        now: datetime,
        caps: WebhookCaps,
    ) -> Webhook | CapReached:
        """A new webhook, or the first cap it would pass (then nothing is kept)."""
        webhook = Webhook(
            webhook_id="wh_" + uuid.uuid4().hex,
            url=url,
            events=tuple(events),
            filter=run_filter,
            format=format,
            secret=new_secret(),
            created_by=created_by,
            created_at=now,
            description=description,
        )
        made = replace(webhook, disabled=True, disabled_reason=BEING_MADE)
        await self.collection.insert_one(made.to_document())
        reached = await self._cap_passed(webhook, caps)
        if reached is not None:
            await self.collection.delete_one({"_id": webhook.webhook_id})
            return reached
        await self.collection.update_one(
            {"_id": webhook.webhook_id}, {"$set": {"disabled": False, "disabledReason": None}}
        )
        await self.count_change()
        return webhook

    async def _cap_passed(self, webhook: Webhook, caps: WebhookCaps) -> CapReached | None:
        """The first cap that the webhooks there now (`webhook` among them) pass."""
        scope = webhook.filter.to_document()
        groups = [
            (WebhookCap.PER_CREATOR, caps.per_creator, {"createdBy": webhook.created_by}),
            (
                WebhookCap.PER_SCOPE,
                caps.per_scope,
                {"filter.agentIds": scope["agentIds"], "filter.resourceIds": scope["resourceIds"]},
            ),
            (WebhookCap.TOTAL, caps.total, {}),
        ]
        for cap, limit, query in groups:
            if await self.collection.count_documents(query) > limit:
                return CapReached(cap, limit)
        return None

    async def changes(self) -> int:
        """How many times an admin changed what the deliverer keeps (a webhook made,
        deleted, rotated or disabled; a delivery redelivered): it reads again when this
        moves."""
        doc = await self._state.find_one({"_id": _CHANGES})
        return int(doc.get("changes", 0)) if doc else 0

    async def count_change(self) -> None:
        """After a change to webhooks written elsewhere (their owners'): the deliverer reads
        them again."""
        await count_change(self._state)

    async def all(self) -> list[Webhook]:
        cursor = self.collection.find({}, sort=[("createdAt", 1)])
        return [Webhook.from_document(doc) async for doc in cursor]

    async def get(self, webhook_id: str) -> Webhook | None:
        doc = await self.collection.find_one({"_id": webhook_id})
        return Webhook.from_document(doc) if doc else None

    async def delete(self, webhook_id: str) -> bool:
        deleted = (await self.collection.delete_one({"_id": webhook_id})).deleted_count == 1
        await self.count_change()
        return deleted

    async def rotate(self, webhook_id: str, until: datetime) -> Webhook | None:
        """A new secret; the one it replaces keeps signing until `until`."""
        current = await self.get(webhook_id)
        if current is None:
            return None
        doc = await self.collection.find_one_and_update(
            {"_id": webhook_id, "secret": current.secret},
            {
                "$set": {
                    "secret": new_secret(),
                    "previousSecret": current.secret,
                    "previousUntil": until,
                }
            },
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            return await self.rotate(webhook_id, until)
        await self.count_change()
        return Webhook.from_document(doc)

    async def disable(self, webhook_id: str, reason: str) -> None:
        await self.collection.update_one(
            {"_id": webhook_id}, {"$set": {"disabled": True, "disabledReason": reason}}
        )
        await self.count_change()
