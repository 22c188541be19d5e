"""The deliverer: posts every event to the webhooks that want it, at least once.

One instance delivers at a time (a lease, as the follower's); the others stand by and
take over when it stops renewing. Its database work is two loops, each one batched
operation at a time, so requests keep their share of the database however many webhooks,
events or hanging receivers there are:

- this one, in steps: what came due since the last step is read into the agenda
  (agenda.py); the due deliveries that get a slot (slots.py) or room ahead (ahead.py),
  the first of their run's lane (lanes.py), are begun in one write (candidates.py
  chooses); then events not yet turned into deliveries become one delivery per matching
  webhook, written with their attempts begun where they get a slot or room ahead;
- the recorder's (recorder.py): where attempts left their deliveries, a batch at a time.

What gets a slot is posted at once; what is begun ahead is posted as an attempt of its
webhook ends, without waiting for a step.

A step costs what came due, not what exists: a delivery waiting for its retry, or behind
an earlier one of its run, is read only once that retry is due. An attempt that ends, or
an event written by this process, starts the next step at once.
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
from suspended_runs.runtime.webhooks import candidates
from suspended_runs.runtime.webhooks.agenda import Agenda
from suspended_runs.runtime.webhooks.ahead import FAST_SECONDS, Ahead, Begun
from suspended_runs.runtime.webhooks.attempt import Attempt, AttemptRules
from suspended_runs.runtime.webhooks.lanes import Lanes
from suspended_runs.runtime.webhooks.recorder import Recorder
from suspended_runs.runtime.webhooks.slots import Candidate, Slots
from suspended_runs.storage import Storage
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus, Finished
from suspended_runs.storage.events.webhooks import Webhook
from suspended_runs.storage.follower.stopping import cancelled_meanwhile
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.lease import Lease
from suspended_runs.storage.types import FOLLOWER_STATE_COLLECTION, Document

log = logging.getLogger(__name__)

DELIVERER_LEASE = "webhook-deliverer"
_FAN_OUT_BATCH = 500
_AHEAD_PER_SLOT = 64
_UNRECORDED_AT_MOST = 32
"""Attempts ended but not yet recorded, past which what waits ahead waits for the
recorder: a crash repeats at most these (and those under way)."""
"""Deliveries a webhook answering at once may have begun ahead, per slot of its own."""
_WEBHOOKS_READ_EVERY = 5.0
"""Seconds between reads of every webhook though their count of changes stood still (a
writer that died between its change and the count)."""
_READ_ALL_EVERY = 10.0
"""Seconds between reads of everything due, for what the agenda could not see coming."""


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
        self.lanes, self.agenda = Lanes(), Agenda()
        self.slots = Slots(rules.concurrency, rules.max_in_flight)
        self.ahead = Ahead(rules.concurrency * _AHEAD_PER_SLOT)
        self.recorder = Recorder(storage)
        self.recorder.listeners.append(self._post_ahead)
        self._lanes_read = False
        self._read_at = self._all_read_at = 0.0
        self._webhooks: dict[str, Webhook] = {}
        self._webhooks_seen: tuple[int, float] | None = None
        """The count of changes the webhooks were read at, and when (monotonic)."""
        self._live: set[str] | None = None
        self._posting: set[asyncio.Task[None]] = set()
        self._last_until: datetime | None = None
        self._woken = asyncio.Event()
        self._events_written = True
        self._fanned_out_at = 0.0
        storage.outbox.listeners.append(self._new_events)
        in_flight = httpx.Limits(
            max_connections=rules.max_in_flight, max_keepalive_connections=rules.max_in_flight
        )
        self._client = httpx.AsyncClient(
            follow_redirects=False, trust_env=False, timeout=rules.timeout_seconds, limits=in_flight
        )

    async def run(self) -> None:
        """Deliver while this instance holds the lease, until cancelled."""
        recording = asyncio.create_task(self.recorder.forever(), name="webhook-recorder")
        try:
            while True:
                try:
                    # No webhook, nothing to deliver: not even the lease is taken.
                    if await self.storage.outbox.active() and await self._hold():
                        await self.step()
                except PyMongoError as exc:  # the database may be down: try again
                    if cancelled_meanwhile():
                        raise asyncio.CancelledError from exc
                    self._lanes_read = False  # what a failed write left is read again
                    log.warning("webhook delivery paused", extra={"reason": str(exc)})
                await self._wait()
        finally:
            recording.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recording
            await self.close()

    async def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.storage.outbox.listeners.remove(self._new_events)
        tasks = list(self._posting)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for begun in [
            b for head in self.ahead.heads() for b in self.ahead.drop(head.webhook.webhook_id)
        ]:
            self._take_back(begun)
        await self.recorder.close()
        if self.holding:
            with contextlib.suppress(PyMongoError):
                await self.lease.release()
            self.holding = False
        await self._client.aclose()

    async def step(self) -> None:
        """Turn new events into deliveries, read what came due, and begin what gets a slot.
        A step woken by an attempt that ended, with nothing new, only begins."""
        if not self._lanes_read:  # as the deliveries are, with what ended here written
            await self.recorder.flush()
            self.lanes.read(await self.storage.deliveries.waiting(_now()))
            self.agenda.read_up_to = None
            self._lanes_read = True
        now, fresh = time.monotonic(), False
        if self.recorder.released or now - self._read_at >= self.every:
            self.recorder.released = False
            await self._read_due()
            # After the read: a redelivery read there was written after the webhook
            # changes before it (a rotated secret), which this sees.
            await self._current_webhooks()
            fresh = True
        # What is due first: new deliveries get the slots and room it leaves.
        await self._start_due(self._webhooks)
        if self._events_written or now - self._fanned_out_at >= self.every:
            self._events_written = False
            await self._fan_out(self._webhooks if fresh else await self._current_webhooks())
            self._fanned_out_at = now

    def _new_events(self) -> None:
        self._events_written = True
        self._woken.set()

    async def _wait(self) -> None:
        """Until `every` passes, an event is written here, or an attempt ends."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.every):
                await self._woken.wait()
        self._woken.clear()

    async def _hold(self) -> bool:
        now = time.monotonic()
        if self.holding and now - self._renewed < self.lease.renew_every:
            return True
        if not self.holding and now - self._renewed < self.every:
            return False  # woken by events written here: the lease is asked no more often
        held = await (self.lease.renew({}) if self.holding else self.lease.take({}))
        if held and not self.holding:
            log.info("this instance delivers webhooks", extra={"holder": self.lease.holder})
            self._lanes_read = False  # another may have delivered meanwhile
        self.holding, self._renewed = held, now
        return held

    async def _current_webhooks(self) -> dict[str, Webhook]:
        """Every webhook, read again when an admin changed one (or redelivered: then all
        that is due is read again too); what waits for a webhook deleted or disabled
        since is given up."""
        changes, now = await self.storage.webhooks.changes(), time.monotonic()
        seen = self._webhooks_seen
        if seen is None or seen[0] != changes or now - seen[1] >= _WEBHOOKS_READ_EVERY:
            self._webhooks = {w.webhook_id: w for w in await self.storage.webhooks.all()}
            self._webhooks_seen = (changes, now)
            if seen is not None and seen[0] != changes:
                self.agenda.read_up_to = None
        live = {w.webhook_id for w in self._webhooks.values() if not w.disabled}
        if live != self._live:
            await self.storage.deliveries.give_up_all_but(sorted(live), _now())
            self.lanes.keep_only(live)
            self.agenda.keep_only(live)
            self.ahead.keep_only(live)
            self._live = live
        return self._webhooks

    async def _fan_out(self, webhooks: dict[str, Webhook]) -> None:
        """New events' deliveries, due at once: those that get a slot or room ahead are
        written with their attempt begun (one write, not two) and posted or queued; the
        others go into the agenda."""
        outbox, deliveries = self.storage.outbox, self.storage.deliveries
        live = [w for w in webhooks.values() if not w.disabled]
        while events := await outbox.not_fanned_out(_FAN_OUT_BATCH):
            now = _now()
            new = deliveries.of([(event, _wanting(live, event)) for event in events], now)
            posted, ahead = candidates.take(
                candidates.of_new(new, webhooks, self.lanes), self.slots, self.ahead
            )
            born = {d.delivery_id for d, _ in posted + ahead}
            until = self._hold_until(now) if born else None
            made = await deliveries.add(new, born, until)
            self.agenda.add(d for d in made if d.delivery_id not in born)
            if until is not None:
                self._begun(posted, ahead, {d.delivery_id for d in made}, now, until)
            await outbox.fanned_out([event["_id"] for event in events])
            if len(events) < _FAN_OUT_BATCH:
                return

    async def _read_due(self) -> None:
        """Into the agenda: what came due since the last read, or (when it starts, after
        an admin's change, and now and then) all that is due, which the agenda becomes."""
        now, since = _now(), self.agenda.read_from()
        if time.monotonic() - self._all_read_at >= _READ_ALL_EVERY:
            since = None
        due = await self.storage.deliveries.due(now, since)
        fresh = [d for d in due if not self._under_way(d.delivery_id)]
        if since is None:
            self.agenda.replace(fresh)
            self._all_read_at = time.monotonic()
        else:
            self.agenda.add(fresh)
        self.agenda.read_up_to, self._read_at = now, time.monotonic()

    async def _start_due(self, webhooks: dict[str, Webhook]) -> None:
        """Begin the due deliveries that get a slot; hold back to its time what waits
        behind a retry of its run."""
        if self.slots.free() <= 0 or not len(self.agenda):
            return
        deliveries = self.storage.deliveries
        room = candidates.room(webhooks, self.slots, self.ahead)
        due, held = candidates.of_due(self.agenda, webhooks, self.lanes, room)
        for retry_at, waiting in held.items():
            await deliveries.hold_back([d.delivery_id for d in waiting], retry_at)
            for delivery in waiting:
                self.agenda.remove(delivery)
        posted, ahead = candidates.take(due, self.slots, self.ahead)
        if not posted and not ahead:
            return
        now = _now()
        until = self._hold_until(now)
        taken = posted + ahead
        begun = await deliveries.begin([delivery for delivery, _ in taken], now, until)
        for delivery, _ in taken:
            self.agenda.remove(delivery)
            if delivery.delivery_id not in begun:  # it changed meanwhile: read all due
                self.agenda.read_up_to = None
        self._begun(posted, ahead, begun, now, until)

    def _begun(
        self,
        posted: list[Candidate],
        ahead: list[Candidate],
        begun: set[str],
        now: datetime,
        until: datetime,
    ) -> None:
        """Attempts recorded (those in `begun`): posted now, or waiting for a slot."""
        for delivery, _ in posted + ahead:
            if delivery.delivery_id in begun:
                self.lanes.started(delivery)
        for delivery, webhook in posted:
            if delivery.delivery_id in begun:
                self._post(delivery, webhook, now, until)
        for delivery, webhook in ahead:
            if delivery.delivery_id in begun:
                self.ahead.add(Begun(delivery, webhook, until))

    def _post_ahead(self) -> None:
        """Post what was begun ahead, as far as slots are free; take back what could not
        end before its hold."""
        while self.recorder.waiting() < _UNRECORDED_AT_MOST and (
            taken := self.slots.take([(b.delivery, b.webhook) for b in self.ahead.heads()])
        ):
            for delivery, webhook in taken:
                begun = self.ahead.pop(webhook.webhook_id)
                now = _now()
                if (begun.until - now).total_seconds() < self.rules.timeout_seconds + 1:
                    self._take_back(begun)  # it could not end within its hold
                    continue
                self._post(delivery, webhook, now, begun.until)

    def _take_back(self, begun: Begun) -> None:
        """An attempt begun ahead and never posted: recorded as not made, due at once."""
        delivery = begun.delivery
        until, pending = begun.until, DeliveryStatus.PENDING
        released = self.lanes.ended(delivery, None)
        log.info("webhook attempt taken back", extra={"deliveryId": delivery.delivery_id})
        self.recorder.ended(
            Finished(delivery.delivery_id, until, pending, made=False), released, None
        )

    def _under_way(self, delivery_id: str) -> bool:
        return self.slots.under_way(delivery_id) or self.ahead.holds(delivery_id)

    def _post(self, delivery: Delivery, webhook: Webhook, now: datetime, until: datetime) -> None:
        """Post an attempt begun (recorded) with hold `until`."""
        self.slots.started(delivery.delivery_id, webhook)
        task = asyncio.create_task(self._attempt(delivery, webhook, now, until))
        self._posting.add(task)
        task.add_done_callback(self._posting.discard)

    def _hold_until(self, now: datetime) -> datetime:
        """An attempt's hold: past its timeout, so a crash's attempt is made again after
        it; to the millisecond, as BSON keeps it, and unique to this batch."""
        until = now + timedelta(seconds=self.rules.timeout_seconds * 2 + 5)
        until = until.replace(microsecond=until.microsecond // 1000 * 1000)
        if self._last_until is not None and until <= self._last_until:
            until = self._last_until + timedelta(milliseconds=1)
        self._last_until = until
        return until

    async def _attempt(
        self, delivery: Delivery, webhook: Webhook, now: datetime, until: datetime
    ) -> None:
        """Post once; the slot and the lane are free (or wait for the retry) at once, and
        the recorder writes where the attempt left the delivery."""
        started = time.monotonic()
        result = await Attempt(self._client, self.rules, webhook, delivery).make(now)
        at_once = result.outcome == "delivered" and time.monotonic() - started < FAST_SECONDS
        self.ahead.answered(webhook.webhook_id, at_once)
        if not at_once:  # what waits for it would wait long: back to the agenda
            for begun in self.ahead.drop(webhook.webhook_id):
                self._take_back(begun)
        WEBHOOK_ATTEMPTS.labels(outcome=result.outcome).inc()
        retry_at = result.next_attempt_at if result.status is DeliveryStatus.PENDING else None
        self.slots.ended(delivery.delivery_id)
        released = self.lanes.ended(delivery, retry_at)
        r = result
        finished = Finished(delivery.delivery_id, until, r.status, r.status_code, r.error, retry_at)
        self.recorder.ended(finished, released, webhook.webhook_id if r.gone else None)
        self._post_ahead()
        self._woken.set()
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


def _wanting(webhooks: list[Webhook], event: Document) -> list[str]:
    """The webhooks that want `event`: its type, and its run within their filters."""
    wanting = [w for w in webhooks if event.get("type") in w.events]
    if not wanting:
        return []
    try:
        run = RunEntry.from_document(event.get("run") or {})
    except (KeyError, ValueError, TypeError):
        log.warning("an event's run could not be read", extra={"eventId": event.get("_id")})
        return []
    return [w.webhook_id for w in wanting if w.filter.matches(run)]
