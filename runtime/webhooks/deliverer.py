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
import logging
import time
from datetime import UTC, datetime, timedelta

import httpx
from pymongo.errors import PyMongoError

from suspended_runs.runtime.metrics import WEBHOOK_ATTEMPTS
from suspended_runs.runtime.webhooks.attempt import Attempt, AttemptRules
from suspended_runs.storage import Storage
from suspended_runs.storage.events.deliveries import Delivery
from suspended_runs.storage.events.webhooks import Webhook
from suspended_runs.storage.follower.stopping import cancelled_meanwhile
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.lease import Lease
from suspended_runs.storage.types import FOLLOWER_STATE_COLLECTION, Document

log = logging.getLogger(__name__)

DELIVERER_LEASE = "webhook-deliverer"
_BATCH = 500
_PENDING_LOOKED_AT = 500
_LOOK_DEEP_EVERY = 5.0
"""Seconds between looks at every pending delivery, not only a webhook's oldest."""


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
        """Attempts under way or waiting for a slot, by delivery."""
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._live_ids: frozenset[str] | None = None
        self._looked_deep = 0.0
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
                    if cancelled_meanwhile():
                        raise asyncio.CancelledError from exc
                    log.warning("webhook delivery paused", extra={"reason": str(exc)})
                await asyncio.sleep(self.every)
        finally:
            await self.close()

    async def close(self) -> None:
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
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
            targets = [
                (event, [w.webhook_id for w in webhooks.values() if _wants(w, event)])
                for event in events
            ]
            await self.storage.deliveries.add(targets, now)
            await outbox.fanned_out([event["_id"] for event in events])
            if len(events) < _BATCH:
                return

    async def _start_due(self, webhooks: dict[str, Webhook]) -> None:
        """Start what is due, webhook by webhook (each attempt then waits for one of its
        webhook's `concurrency` slots); give up what waits for a webhook gone or disabled."""
        live = [w for w in webhooks.values() if not w.disabled]
        live_ids = frozenset(w.webhook_id for w in live)
        if live_ids != self._live_ids:  # one went (or this is the first look)
            await self.storage.deliveries.give_up_all_but(sorted(live_ids), _now())
            self._live_ids = live_ids
        # Past the first page only now and then: what waits there waits for a retry, and
        # a webhook failing for a day may hold many thousands.
        deep = time.monotonic() - self._looked_deep >= _LOOK_DEEP_EVERY
        if deep:
            self._looked_deep = time.monotonic()
        for webhook in live:
            now, heads, after = _now(), set[str | None](), None
            while True:
                pending = await self.storage.deliveries.pending(
                    webhook.webhook_id, _PENDING_LOOKED_AT, after=after
                )
                for delivery in pending:
                    if delivery.run_id in heads:
                        continue  # a run's later event waits for its earlier one
                    heads.add(delivery.run_id)
                    due = delivery.next_attempt_at is None or delivery.next_attempt_at <= now
                    if due and delivery.delivery_id not in self._in_flight:
                        self._start(delivery, webhook)
                if not deep or len(pending) < _PENDING_LOOKED_AT:
                    break
                after = pending[-1].delivery_id

    def _start(self, delivery: Delivery, webhook: Webhook) -> None:
        delivery_id = delivery.delivery_id
        task = asyncio.create_task(self._attempt(delivery, webhook))
        self._in_flight[delivery_id] = task

        def done(_: asyncio.Task[None]) -> None:
            self._in_flight.pop(delivery_id, None)

        task.add_done_callback(done)

    async def _attempt(self, delivery: Delivery, webhook: Webhook) -> None:
        slots = self._slots.setdefault(
            webhook.webhook_id, asyncio.Semaphore(self.rules.concurrency)
        )
        async with slots:
            try:
                await self._attempt_once(delivery, webhook)
            except PyMongoError as exc:  # made again once its attempt's hold runs out
                log.warning("a webhook attempt was not recorded", extra={"reason": str(exc)})

    async def _attempt_once(self, delivery: Delivery, webhook: Webhook) -> None:
        deliveries, now = self.storage.deliveries, _now()
        until = now + timedelta(seconds=self.rules.timeout_seconds * 2 + 5)
        until = until.replace(microsecond=until.microsecond // 1000 * 1000)  # as BSON keeps it
        whole = await deliveries.begin_attempt(delivery, now, until)
        if whole is None:
            return
        result = await Attempt(self._client, self.rules, webhook, whole).make(now)
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
            until=until,
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


def _wants(webhook: Webhook, event: Document) -> bool:
    if webhook.disabled or event.get("type") not in webhook.events:
        return False
    try:
        run = RunEntry.from_document(event.get("run") or {})
    except (KeyError, ValueError, TypeError):
        log.warning("an event's run could not be read", extra={"eventId": event.get("_id")})
        return False
    return webhook.filter.matches(run)
