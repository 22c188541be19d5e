"""Webhooks, managed by admins: made, listed, rotated, deleted, and their deliveries.

A webhook is told only of runs its creator may see: its filter is stored with the
creator's scope. An admin whose scope is not every run sees and manages only the
webhooks they made (with any credential of theirs: the same person); any other caller is
`Forbidden`. A new webhook past a cap (per creator, per scope, in all: WEBHOOK_MAX_*) is
refused as `TooManyWebhooks`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from suspended_runs.resolvers.access import Role, require
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.resolvers.outcomes import Forbidden
from suspended_runs.storage import RunFilter
from suspended_runs.storage.events.deliveries import Delivery
from suspended_runs.storage.events.outbox import EventType
from suspended_runs.storage.events.webhooks import (
    CapReached,
    Webhook,
    WebhookCap,
    WebhookFilter,
    WebhookFormat,
)

MAX_DELIVERIES_PAGE = 100
DEFAULT_DELIVERIES_PAGE = 20
_MAX_URL = 2048
_MAX_DESCRIPTION = 1000


@dataclass(frozen=True, slots=True)
class WebhookCreated:
    webhook: Webhook
    secret: str


@dataclass(frozen=True, slots=True)
class InvalidWebhook:
    message: str
    field: str


@dataclass(frozen=True, slots=True)
class TooManyWebhooks:
    message: str
    cap: WebhookCap
    limit: int


@dataclass(frozen=True, slots=True)
class WebhookDeleted:
    id: str


@dataclass(frozen=True, slots=True)
class WebhookNotFound:
    id: str
    message: str


@dataclass(frozen=True, slots=True)
class WebhookSecretRotated:
    webhook: Webhook
    secret: str


@dataclass(frozen=True, slots=True)
class WebhookRedelivered:
    delivery: Delivery


@dataclass(frozen=True, slots=True)
class WebhookDeliveryNotFound:
    delivery_id: str
    message: str


async def _none() -> int:
    return 0


@dataclass(frozen=True, slots=True)
class DeliveriesPage:
    deliveries: list[Delivery]
    has_more: bool
    next_cursor: str | None
    count: Callable[[], Awaitable[int]] = field(default=_none)
    """All of the webhook's deliveries (the caller's to see), counted when asked."""


async def create_webhook(
    context: Context,
    url: str,
    events: list[EventType],
    run_filter: RunFilter,
    format: WebhookFormat,
    description: str | None,
) -> WebhookCreated | InvalidWebhook | TooManyWebhooks | Forbidden:
    if (refused := _admin(context, "making a webhook")) is not None:
        return refused
    if (invalid := _invalid(context, url, events, run_filter, description)) is not None:
        return invalid
    scope = context.principal.scope
    made = await context.storage.webhooks.create(
        url=url,
        events=sorted({event.value for event in events}),
        run_filter=WebhookFilter(
            agent_id=run_filter.agent_id,
            thread_id=run_filter.thread_id,
            resource_id=run_filter.resource_id,
            from_date=run_filter.from_date,
            to_date=run_filter.to_date,
            agent_ids=scope.agent_ids,
            resource_ids=scope.resource_ids,
        ),
        format=format,
        description=description,
        created_by=context.actor,
        now=datetime.now(UTC),
        caps=context.webhooks.caps,
    )
    if isinstance(made, CapReached):
        return _too_many(made)
    context.storage.outbox.webhook_added()
    return WebhookCreated(made, made.secret)


def _too_many(reached: CapReached) -> TooManyWebhooks:
    whose = {
        WebhookCap.PER_CREATOR: "you have",
        WebhookCap.PER_SCOPE: "your scope has",
        WebhookCap.TOTAL: "this server has",
    }[reached.cap]
    message = f"{whose} {reached.limit} webhooks, the most allowed: delete one to make another"
    return TooManyWebhooks(message, reached.cap, reached.limit)


async def webhooks(context: Context) -> list[Webhook]:
    require(context.principal, Role.ADMIN)
    return [w for w in await context.storage.webhooks.all() if _manages(context, w)]


async def delete_webhook(
    context: Context, webhook_id: str
) -> WebhookDeleted | WebhookNotFound | Forbidden:
    found = await _webhook(context, webhook_id, "deleting a webhook")
    if not isinstance(found, Webhook):
        return found
    if not await context.storage.webhooks.delete(webhook_id):
        return _not_found(webhook_id)
    return WebhookDeleted(webhook_id)


async def rotate_webhook_secret(
    context: Context, webhook_id: str
) -> WebhookSecretRotated | WebhookNotFound | Forbidden:
    found = await _webhook(context, webhook_id, "rotating a webhook's secret")
    if not isinstance(found, Webhook):
        return found
    until = datetime.now(UTC) + context.webhooks.rotation
    rotated = await context.storage.webhooks.rotate(webhook_id, until)
    if rotated is None:
        return _not_found(webhook_id)
    return WebhookSecretRotated(rotated, rotated.secret)


async def webhook_deliveries(
    context: Context, webhook_id: str, first: int | None, after: str | None
) -> DeliveriesPage:
    require(context.principal, Role.ADMIN)
    size = DEFAULT_DELIVERIES_PAGE if first is None else first
    if not 1 <= size <= MAX_DELIVERIES_PAGE:
        raise BadUserInput(f"first must be between 1 and {MAX_DELIVERIES_PAGE}", argument="first")
    context.budget.take_rows(size)
    webhook = await context.storage.webhooks.get(webhook_id)
    if webhook is None or not _manages(context, webhook):
        return DeliveriesPage([], False, None)
    deliveries = context.storage.deliveries
    found = await deliveries.page(webhook_id, size + 1, after)
    page = found[:size]
    more = len(found) > size
    cursor = page[-1].delivery_id if more and page else None
    return DeliveriesPage(page, more, cursor, lambda: deliveries.count(webhook_id))


async def redeliver(
    context: Context, delivery_id: str
) -> WebhookRedelivered | WebhookDeliveryNotFound | Forbidden:
    if (refused := _admin(context, "redelivering an event")) is not None:
        return refused
    deliveries = context.storage.deliveries
    delivery = await deliveries.get(delivery_id)
    webhook = await context.storage.webhooks.get(delivery.webhook_id) if delivery else None
    if delivery is None or webhook is None or not _manages(context, webhook):
        return WebhookDeliveryNotFound(delivery_id, f"no delivery {delivery_id}")
    if webhook.disabled:
        message = f"delivery {delivery_id}'s webhook is disabled: {webhook.disabled_reason}"
        return WebhookDeliveryNotFound(delivery_id, message)
    again = await deliveries.redeliver(delivery_id, datetime.now(UTC))
    if again is None:
        return WebhookDeliveryNotFound(delivery_id, f"no delivery {delivery_id}")
    return WebhookRedelivered(again)


def _admin(context: Context, doing: str) -> Forbidden | None:
    if context.principal.may(Role.ADMIN):
        return None
    return Forbidden(Role.ADMIN.value, f"{doing} needs the {Role.ADMIN.value} role")


def _manages(context: Context, webhook: Webhook) -> bool:
    return context.principal.scope.unrestricted or context.is_caller(webhook.created_by)


async def _webhook(
    context: Context, webhook_id: str, doing: str
) -> Webhook | WebhookNotFound | Forbidden:
    if (refused := _admin(context, doing)) is not None:
        return refused
    webhook = await context.storage.webhooks.get(webhook_id)
    if webhook is None or not _manages(context, webhook):
        return _not_found(webhook_id)
    return webhook


def _not_found(webhook_id: str) -> WebhookNotFound:
    return WebhookNotFound(webhook_id, f"no webhook {webhook_id}")


def _invalid(
    context: Context,
    url: str,
    events: list[EventType],
    run_filter: RunFilter,
    description: str | None,
) -> InvalidWebhook | None:
    """What of a new webhook's input cannot be used, named by its field."""
    problem = _url_problem(context, url)
    if problem is not None:
        return InvalidWebhook(problem, "url")
    if not events:
        return InvalidWebhook("name at least one event", "events")
    if run_filter.assigned_to_me:
        return InvalidWebhook("a webhook has no caller to be assigned to", "filter.assignedToMe")
    if run_filter.reviews is not None:
        return InvalidWebhook("a webhook is told of runs whoever reviews them", "filter.inReview")
    if description is not None and len(description) > _MAX_DESCRIPTION:
        return InvalidWebhook(
            f"a description is at most {_MAX_DESCRIPTION} characters", "description"
        )
    return None


def _url_problem(context: Context, url: str) -> str | None:
    if len(url) > _MAX_URL:
        return f"a webhook URL is at most {_MAX_URL} characters"
    return context.webhooks.outbound.shape_problem(url)
