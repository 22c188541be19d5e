"""Webhooks follow their owner: a webhook posts what its owner may see, so when its owner
is gone, it stops (docs/security.md).

- Made with an API key (`createdBy: key:<name>`): at each reload of API_KEYS_FILE (and at
  start), a webhook whose key is no longer in the file, or no longer holds admin over the
  webhook's scope (role or scope changed), is disabled with its reason.
- Made with a token (`jwt:<sub>`): no directory tells whether its subject still exists,
  so a webhook is disabled when its owner has presented no admin token holding the
  webhook's scope for WEBHOOK_OWNER_TOKEN_DAYS (the wait starts when it was made, or
  when this server first kept it).
- `takeOverWebhook`: an admin who manages a webhook and holds its scope becomes its owner,
  and a webhook disabled for its owner posts again (not one its receiver answered 410).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from suspended_runs.resolvers.access import Principal, Role, Scope
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.outcomes import Forbidden
from suspended_runs.resolvers.people import KEY_PREFIX, TOKEN_PREFIX
from suspended_runs.resolvers.webhooks import WebhookNotFound
from suspended_runs.storage import Storage, database_fault
from suspended_runs.storage.events.webhook_owners import WebhookOwners
from suspended_runs.storage.events.webhooks import Webhook
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

OWNERS_EVERY = 3600.0
"""Seconds between two looks at token owners' webhooks (their wait is counted in days)."""
_SEEN_EVERY = 3600.0
"""Seconds an instance lets pass before it writes again that a token owner was seen."""


@dataclass(frozen=True, slots=True)
class WebhookTakenOver:
    webhook: Webhook


def owners(storage: Storage) -> WebhookOwners:
    return WebhookOwners(storage.webhooks.collection, storage.webhooks.count_change)


def scope_of(webhook: Webhook) -> Scope:
    """The scope a webhook is told within: its owner's, as it was made."""
    return Scope(resource_ids=webhook.filter.resource_ids, agent_ids=webhook.filter.agent_ids)


def holds(principal: Principal | None, webhook: Webhook) -> bool:
    """Whether `principal` may own `webhook`: an admin whose scope holds the webhook's."""
    return (
        principal is not None
        and principal.may(Role.ADMIN)
        and (principal.scope.covers(scope_of(webhook)))
    )


async def check_key_owners(storage: Storage, key: Callable[[str], Principal | None]) -> int:
    """Disable the webhooks whose owner key is gone or may own them no longer (`key`: who
    a key name makes a caller now, None for no such key); how many were disabled."""
    gone: dict[str, list[str]] = {}
    for webhook in await storage.webhooks.all():
        owner = webhook.created_by
        if webhook.disabled or not owner.startswith(KEY_PREFIX):
            continue
        principal = key(owner.removeprefix(KEY_PREFIX))
        if principal is None:
            reason = f"its owner {owner} is no longer in API_KEYS_FILE"
        elif not holds(principal, webhook):
            reason = f"its owner {owner} no longer holds admin over its scope"
        else:
            continue
        gone.setdefault(reason, []).append(webhook.webhook_id)
    return await _disabled(storage, gone)


async def recheck_key_owners(storage: Storage, key: Callable[[str], Principal | None]) -> None:
    """`check_key_owners` after a reload of the keys; a database that fails it leaves it
    to the next look (`watch_owners_forever`)."""
    try:
        await check_key_owners(storage, key)
    except Exception as exc:
        if not database_fault(exc):
            raise
        log.warning("webhooks' owners were not checked", extra={"reason": str(exc)})


async def check_token_owners(storage: Storage, idle: timedelta, now: datetime) -> int:
    """Disable the webhooks whose token owner has presented no admin token holding their
    scope for `idle`; how many were disabled."""
    days = f"{idle.total_seconds() / 86400:g}"
    reason = f"its owner has presented no admin token for {days} days"
    seen = await owners(storage).last_seen(TOKEN_PREFIX, now)
    return await _disabled(storage, {reason: [i for i, at in seen.items() if at <= now - idle]})


async def _disabled(storage: Storage, gone: dict[str, list[str]]) -> int:
    disabled = 0
    for reason, webhook_ids in gone.items():
        disabled += await owners(storage).disable(webhook_ids, reason)
        log.warning("disabled webhooks", extra={"webhookIds": webhook_ids, "reason": reason})
    return disabled


async def watch_owners_forever(
    storage: Storage,
    key: Callable[[str], Principal | None],
    idle: timedelta,
    every: float = OWNERS_EVERY,
) -> None:
    """At start, and every `every` seconds, until cancelled: key owners (a key removed
    while no instance ran) and token owners."""
    while True:
        try:
            await check_key_owners(storage, key)
            await check_token_owners(storage, idle, datetime.now(UTC))
        except Exception as exc:  # the database may be down: try again next time
            if cancelled_meanwhile() or not database_fault(exc):
                raise
            log.warning("webhooks' owners were not checked", extra={"reason": str(exc)})
        await asyncio.sleep(every)


class OwnersSeen:
    """Writes, at most every so often per token subject and instance, that an admin token
    was presented: its webhooks that it holds the scope of wait from now."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._written: dict[str, float] = {}

    async def presented(self, principal: Principal) -> None:
        subject, now = principal.subject, time.monotonic()
        if not subject.startswith(TOKEN_PREFIX) or not principal.may(Role.ADMIN):
            return
        if now - self._written.get(subject, -_SEEN_EVERY) < _SEEN_EVERY:
            return
        try:
            made = await owners(self.storage).made_by(subject)
            held = [w.webhook_id for w in made if holds(principal, w)]
            await owners(self.storage).seen(held, datetime.now(UTC))
        except Exception as exc:
            if not database_fault(exc):
                raise
            return  # written next time
        if made:  # one who owns none yet is looked at again: it may make one
            if len(self._written) > 10_000:
                self._written.clear()  # many subjects cannot grow it without end
            self._written[subject] = now


async def take_over_webhook(
    context: Context, webhook_id: str
) -> WebhookTakenOver | WebhookNotFound | Forbidden:
    """The caller becomes the webhook's owner: an admin who manages it (any admin of every
    run, or its owner's person) and holds its scope."""
    principal = context.principal
    if not principal.may(Role.ADMIN):
        return Forbidden(
            Role.ADMIN.value, f"taking over a webhook needs the {Role.ADMIN.value} role"
        )
    webhook = await context.storage.webhooks.get(webhook_id)
    if webhook is None or not (
        principal.scope.unrestricted or context.is_caller(webhook.created_by)
    ):
        return WebhookNotFound(webhook_id, f"no webhook {webhook_id}")
    if not holds(principal, webhook):
        return Forbidden(Role.ADMIN.value, "taking over a webhook needs admin over its scope")
    taken = await owners(context.storage).take_over(webhook, context.actor, datetime.now(UTC))
    if taken is None:
        return WebhookNotFound(webhook_id, f"webhook {webhook_id} changed meanwhile: try again")
    log.info("took over a webhook", extra={"webhookId": webhook_id, "by": context.actor})
    return WebhookTakenOver(taken)
