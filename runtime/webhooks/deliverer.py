"""The deliverer: posts every event to the webhooks that want it, at least once.

One instance delivers at a time (a lease, as the follower's); the others stand by and
take over when it stops renewing. It turns each new event of the outbox into one delivery
per matching webhook, then attempts the deliveries due: in order per run and webhook (a
delivery waiting for a retry holds back that run's later events to that webhook only),
at most `concurrency` at once per webhook (a slow receiver delays no other).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from datetime import UTC, datetime, timedelta

import httpx
from pymongo.errors import PyMongoError

from suspended_runs.runtime.metrics import WEBHOOK_ATTEMPTS
from suspended_runs.runtime.webhooks.attempt import Attempt, AttemptRules, Result
from suspended_runs.storage import Storage
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from suspended_runs.storage.events.webhooks import Webhook
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.lease import Lease
from suspended_runs.storage.types import FOLLOWER_STATE_COLLECTION, Document

log = logging.getLogger(__name__)

DELIVERER_LEASE = "webhook-deliverer"
_BATCH = 500
_PENDING_LOOKED_AT = 2000


def _now() -> datetime:
    return datetime.now(UTC)


class WebhookDeliverer:
    def __init__(
        self,
        storage: Storage,
        rules: AttemptRules,
        holder: str,
        *,
        lease: timedelta = timedelta(seconds=5),
        every: float = 0.2,
    ) -> None:
        self.storage = storage
        self.rules = rules
        self.every = every
        self.lease = Lease(
            storage.db[FOLLOWER_STATE_COLLECTION], holder, lease, _now, lease_id=DELIVERER_LEASE
        )
        self.holding = False
        self._renewed = 0.0
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._client = httpx.AsyncClient(
            follow_redirects=False, trust_env=False, timeout=rules.timeout_seconds
        )

    async def run(self) -> None:
        """Deliver while this instance holds the lease, until cancelled."""
        try:
            while True:
                try:
                    # No webhook, nothing to deliver: not even the lease is taken.
                    if await self.storage.outbox.active() and await self._hold():
                        await self.step()
                except PyMongoError as exc:  # the database may be down: try again
                    log.warning("webhook delivery paused", extra={"reason": str(exc)})
                await asyncio.sleep(self.every)
        finally:
            await self.close()

    async def close(self) -> None:
        for task in list(self._in_flight.values()):
            task.cancel()
        await asyncio.gather(*self._in_flight.values(), return_exceptions=True)
        if self.holding:
            with contextlib.suppress(PyMongoError):
                await self.lease.release()
            self.holding = False
        await self._client.aclose()

    async def step(self) -> None:
        """Turn new events into deliveries, and start the attempts that are due."""
        webhooks = {w.webhook_id: w for w in await self.storage.webhooks.all()}
        await self._fan_out(webhooks)
        await self._start_due(webhooks)

    async def _hold(self) -> bool:
        now = time.monotonic()
        if self.holding and now - self._renewed < self.lease.renew_every:
            return True
        held = await (self.lease.renew({}) if self.holding else self.lease.take({}))
        if held and not self.holding:
            log.info("this instance delivers webhooks", extra={"holder": self.lease.holder})
        self.holding, self._renewed = held, now
        return held

    async def _fan_out(self, webhooks: dict[str, Webhook]) -> None:
        outbox, now = self.storage.outbox, _now()
        while events := await outbox.not_fanned_out(_BATCH):
            for event in events:
                targets = [w.webhook_id for w in webhooks.values() if _wants(w, event)]
                await self.storage.deliveries.add(event, targets, now)
            await outbox.fanned_out([event["_id"] for event in events])
            if len(events) < _BATCH:
                return

    async def _start_due(self, webhooks: dict[str, Webhook]) -> None:
        now, heads = _now(), set()
        for delivery in await self.storage.deliveries.pending(_PENDING_LOOKED_AT):
            line = (delivery.webhook_id, delivery.run_id)
            if line in heads:
                continue  # a run's later event waits for its earlier one
            heads.add(line)
            if delivery.delivery_id in self._in_flight:
                continue
            due = delivery.next_attempt_at is None or delivery.next_attempt_at <= now
            webhook = webhooks.get(delivery.webhook_id)
            if webhook is None or webhook.disabled:
                reason = "the webhook was deleted" if webhook is None else "the webhook is disabled"
                await self._give_up(delivery, reason)
            elif due:
                self._start(delivery, webhook)

    def _start(self, delivery: Delivery, webhook: Webhook) -> None:
        delivery_id = delivery.delivery_id
        task = asyncio.create_task(self._attempt(delivery, webhook))
        self._in_flight[delivery_id] = task

        def done(_: asyncio.Task[None]) -> None:
            self._in_flight.pop(delivery_id, None)

        task.add_done_callback(done)

    async def _attempt(self, delivery: Delivery, webhook: Webhook) -> None:
        slot = self._slots.setdefault(webhook.webhook_id, asyncio.Semaphore(self.rules.concurrency))
        async with slot:
            try:
                await self._attempt_once(delivery, webhook)
            except PyMongoError as exc:  # made again once its attempt's hold runs out
                log.warning("a webhook attempt was not recorded", extra={"reason": str(exc)})

    async def _attempt_once(self, delivery: Delivery, webhook: Webhook) -> None:
        deliveries, now = self.storage.deliveries, _now()
        until = now + timedelta(seconds=self.rules.timeout_seconds * 2 + 5)
        if not await deliveries.begin_attempt(delivery, now, until):
            return
        whole = await deliveries.get(delivery.delivery_id)
        if whole is None:
            return  # expired meanwhile
        read = dataclasses.replace(delivery, run=whole.run)  # the attempts before this one
        result = await Attempt(self._client, self.rules, webhook, read).make(now)
        WEBHOOK_ATTEMPTS.labels(outcome=result.outcome).inc()
        if result.gone:
            await self.storage.webhooks.disable(
                webhook.webhook_id, "the receiver answered 410 Gone"
            )
        await deliveries.finish_attempt(
            delivery.delivery_id,
            result.status,
            status_code=result.status_code,
            error=result.error,
            next_attempt_at=result.next_attempt_at,
            now=_now(),
        )
        log.info(
            "webhook attempt",
            extra={
                "deliveryId": delivery.delivery_id,
                "webhookId": webhook.webhook_id,
                "event": delivery.event,
                "outcome": result.outcome,
                "statusCode": result.status_code,
            },
        )

    async def _give_up(self, delivery: Delivery, reason: str) -> None:
        await self.storage.deliveries.finish_attempt(
            delivery.delivery_id,
            DeliveryStatus.FAILED,
            status_code=None,
            error=reason,
            next_attempt_at=None,
            now=_now(),
        )


def _wants(webhook: Webhook, event: Document) -> bool:
    if webhook.disabled or event.get("type") not in webhook.events:
        return False
    try:
        run = RunEntry.from_document(event.get("run") or {})
    except (KeyError, ValueError, TypeError):
        log.warning("an event's run could not be read", extra={"eventId": event.get("_id")})
        return False
    return webhook.filter.matches(run)


__all__ = ["Result", "WebhookDeliverer"]
