"""Taking over a webhook in GraphQL: `takeOverWebhook`'s result (resolvers/webhook_owners.py)."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry

from suspended_runs import resolvers
from suspended_runs.resolvers import webhook_owners as owners
from suspended_runs.resolvers import webhooks as hooks
from suspended_runs.schema.results import Forbidden
from suspended_runs.schema.webhooks import Webhook, WebhookNotFound


@strawberry.type(
    description="The caller owns the webhook now; one disabled because its owner was gone "
    "posts again."
)
class WebhookTakenOver:
    webhook: Webhook


TakeOverWebhookResult = Annotated[
    WebhookTakenOver | WebhookNotFound | Forbidden, strawberry.union("TakeOverWebhookResult")
]


def taken_over(outcome: Any) -> Any:
    """The GraphQL member for `take_over_webhook`'s outcome."""
    match outcome:
        case owners.WebhookTakenOver(webhook=webhook):
            return WebhookTakenOver(webhook=Webhook.from_stored(webhook))
        case hooks.WebhookNotFound(id=webhook_id, message=message):
            return WebhookNotFound(message=message, id=strawberry.ID(webhook_id))
        case resolvers.Forbidden(needed_role=role, message=message):
            return Forbidden(message=message, needed_role=role)
    raise TypeError(f"not an outcome of takeOverWebhook: {type(outcome).__name__}")
