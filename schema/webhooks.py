"""Webhooks in GraphQL: `Webhook`, its deliveries, the inputs and results of managing them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry

from suspended_runs import resolvers
from suspended_runs.resolvers import webhooks as hooks
from suspended_runs.schema.filters import SuspendedRunsFilter
from suspended_runs.schema.results import Forbidden, Problem
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from suspended_runs.storage.events.outbox import EventType
from suspended_runs.storage.events.webhooks import Webhook as StoredWebhook
from suspended_runs.storage.events.webhooks import WebhookCap, WebhookFormat

strawberry.enum(
    EventType,
    name="RunEventType",
    description="What happened to a run: the events webhooks are sent.",
)
strawberry.enum(
    WebhookFormat,
    name="WebhookFormat",
    description="STANDARD: Standard Webhooks' signed JSON; SLACK: a Slack incoming webhook's "
    "Block Kit message.",
)
strawberry.enum(DeliveryStatus, name="DeliveryStatus")
strawberry.enum(
    WebhookCap,
    name="WebhookCap",
    description="PER_CREATOR: webhooks one admin made (WEBHOOK_MAX_PER_CREATOR); PER_SCOPE: "
    "of admins of one scope (WEBHOOK_MAX_PER_SCOPE); TOTAL: all (WEBHOOK_MAX_TOTAL).",
)
_EVENT_NAMES = {event.value: event for event in EventType}


@strawberry.type(description="Which runs a webhook is told of (within its creator's scope).")
class WebhookFilter:
    agent_id: strawberry.ID | None
    thread_id: str | None
    resource_id: str | None
    from_date: datetime | None
    to_date: datetime | None


@strawberry.type(description="Where events are posted.")
class Webhook:
    id: strawberry.ID
    url: str
    events: list[EventType]
    filter: WebhookFilter
    format: WebhookFormat
    description: str | None
    disabled: bool = strawberry.field(
        description="Set when its receiver answered 410 Gone, or its owner is gone "
        "(disabledReason says which)."
    )
    disabled_reason: str | None = strawberry.field(
        description="Why it is disabled: a receiver's 410, or an owner whose key is gone, "
        "who holds admin over its scope no longer, or who presented no admin token for "
        "WEBHOOK_OWNER_TOKEN_DAYS (takeOverWebhook enables one disabled for its owner)."
    )
    created_by: str = strawberry.field(
        description="Its owner: who made it, or took it over (key:<name>, jwt:<sub>)."
    )
    created_at: datetime

    @classmethod
    def from_stored(cls, webhook: StoredWebhook) -> Webhook:
        f = webhook.filter
        return cls(
            id=strawberry.ID(webhook.webhook_id),
            url=webhook.url,
            events=[_EVENT_NAMES[e] for e in webhook.events if e in _EVENT_NAMES],
            filter=WebhookFilter(
                agent_id=strawberry.ID(f.agent_id) if f.agent_id is not None else None,
                thread_id=f.thread_id,
                resource_id=f.resource_id,
                from_date=f.from_date,
                to_date=f.to_date,
            ),
            format=webhook.format,
            description=webhook.description,
            disabled=webhook.disabled,
            disabled_reason=webhook.disabled_reason if webhook.disabled else None,
            created_by=webhook.created_by,
            created_at=webhook.created_at,
        )


@strawberry.type(description="One event posted to one webhook, attempted until answered 2xx.")
class WebhookDelivery:
    id: strawberry.ID
    event: EventType | None
    run_id: strawberry.ID
    status: DeliveryStatus
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    created_at: datetime

    @classmethod
    def from_stored(cls, delivery: Delivery) -> WebhookDelivery:
        return cls(
            id=strawberry.ID(delivery.delivery_id),
            event=_EVENT_NAMES.get(delivery.event),
            run_id=strawberry.ID(delivery.run_id),
            status=delivery.status,
            attempts=delivery.attempts,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            next_attempt_at=delivery.next_attempt_at
            if delivery.status is DeliveryStatus.PENDING
            else None,
            delivered_at=delivery.delivered_at,
            created_at=delivery.created_at,
        )


@strawberry.type
class WebhookDeliveriesPage:
    deliveries: list[WebhookDelivery]
    has_more: bool
    next_cursor: str | None


@strawberry.input
class CreateWebhookInput:
    url: str
    events: list[EventType]
    filter: SuspendedRunsFilter | None = None
    format: WebhookFormat = WebhookFormat.STANDARD
    description: str | None = None


@strawberry.input
class WebhookInput:
    id: strawberry.ID


@strawberry.input
class RedeliverWebhookEventInput:
    delivery_id: strawberry.ID


@strawberry.type(description="The webhook is made; `secret` (whsec_...) is shown this once.")
class WebhookCreated:
    webhook: Webhook
    secret: str


@strawberry.type(description="A new secret, shown this once; the old one signs for a while yet.")
class WebhookSecretRotated:
    webhook: Webhook
    secret: str


@strawberry.type
class InvalidWebhook(Problem):
    field: str


@strawberry.type(
    description="Nothing was made: as many webhooks as `cap` allows exist (`limit`). Those made "
    "before a cap was lowered are kept; delete one to make another."
)
class TooManyWebhooks(Problem):
    cap: WebhookCap
    limit: int


@strawberry.type
class WebhookDeleted:
    id: strawberry.ID


@strawberry.type
class WebhookNotFound(Problem):
    id: strawberry.ID


@strawberry.type(description="The delivery is PENDING again, attempted from the schedule's start.")
class WebhookRedelivered:
    delivery: WebhookDelivery


@strawberry.type
class WebhookDeliveryNotFound(Problem):
    delivery_id: strawberry.ID


CreateWebhookResult = Annotated[
    WebhookCreated | InvalidWebhook | TooManyWebhooks | Forbidden,
    strawberry.union("CreateWebhookResult"),
]
DeleteWebhookResult = Annotated[
    WebhookDeleted | WebhookNotFound | Forbidden, strawberry.union("DeleteWebhookResult")
]
RotateWebhookSecretResult = Annotated[
    WebhookSecretRotated | WebhookNotFound | Forbidden,
    strawberry.union("RotateWebhookSecretResult"),
]
RedeliverWebhookEventResult = Annotated[
    WebhookRedelivered | WebhookDeliveryNotFound | Forbidden,
    strawberry.union("RedeliverWebhookEventResult"),
]


def shown(outcome: Any) -> Any:
    """The GraphQL member for a webhook resolver's outcome."""
    match outcome:
        case hooks.WebhookCreated(webhook=webhook, secret=secret):
            return WebhookCreated(webhook=Webhook.from_stored(webhook), secret=secret)
        case hooks.WebhookSecretRotated(webhook=webhook, secret=secret):
            return WebhookSecretRotated(webhook=Webhook.from_stored(webhook), secret=secret)
        case hooks.WebhookRedelivered(delivery=delivery):
            return WebhookRedelivered(delivery=WebhookDelivery.from_stored(delivery))
        case hooks.InvalidWebhook(message=message, field=field):
            return InvalidWebhook(message=message, field=field)
        case hooks.TooManyWebhooks(message=message, cap=cap, limit=limit):
            return TooManyWebhooks(message=message, cap=cap, limit=limit)
        case hooks.WebhookDeleted(id=webhook_id):
            return WebhookDeleted(id=strawberry.ID(webhook_id))
        case hooks.WebhookNotFound(id=webhook_id, message=message):
            return WebhookNotFound(message=message, id=strawberry.ID(webhook_id))
        case hooks.WebhookDeliveryNotFound(delivery_id=delivery_id, message=message):
            return WebhookDeliveryNotFound(message=message, delivery_id=strawberry.ID(delivery_id))
        case resolvers.Forbidden(needed_role=role, message=message):
            return Forbidden(message=message, needed_role=role)
    raise TypeError(f"not a webhook outcome: {type(outcome).__name__}")


def page(result: hooks.DeliveriesPage) -> WebhookDeliveriesPage:
    return WebhookDeliveriesPage(
        deliveries=[WebhookDelivery.from_stored(d) for d in result.deliveries],
        has_more=result.has_more,
        next_cursor=result.next_cursor,
    )
