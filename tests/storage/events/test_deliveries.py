"""Deliveries (storage/events/deliveries.py) on the embedded MongoDB: a step reads what came
due, not what waits; an attempt is begun once however many ask at once; an attempt's end
is written only under its own hold; what is held back is never made due sooner; a batch is
a statement to begin and one to finish."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import AsyncMongoClient, monitoring

from suspended_runs.storage.events.deliveries import (
    Delivery,
    DeliveryStatus,
    DeliveryStore,
    Finished,
)
from suspended_runs.storage.types import (
    DELIVERIES_COLLECTION,
    FOLLOWER_STATE_COLLECTION,
    Document,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)


def store(db: Any) -> DeliveryStore:
    return DeliveryStore(
        db[DELIVERIES_COLLECTION], timedelta(days=1), db[FOLLOWER_STATE_COLLECTION]
    )


def event(n: int, run_id: str = "run-a") -> dict[str, Any]:
    return {"_id": f"evt_{n}", "type": "run.suspended", "runId": run_id, "run": {},
            "at": T0 + n * SECOND}  # fmt: skip


async def made(deliveries: DeliveryStore, count: int, webhook: str = "wh_1") -> list[Delivery]:
    return await deliveries.add(
        deliveries.of([(event(n, f"run-{n}"), [webhook]) for n in range(count)], T0)
    )


async def status(deliveries: DeliveryStore, delivery: Delivery) -> DeliveryStatus | None:
    found = await deliveries.get(delivery.delivery_id)
    return None if found is None else found.status


async def test_a_read_since_the_last_gets_what_came_due_not_what_waits(db: Any) -> None:
    deliveries = store(db)
    waiting, due_later, due_now = await made(deliveries, 3)
    retry = T0 + 60 * SECOND
    await deliveries.begin([waiting], T0, T0 + 5 * SECOND)
    await deliveries.finish(
        [Finished(waiting.delivery_id, T0 + 5 * SECOND, DeliveryStatus.PENDING, 503, None, retry)],
        [],
        T0 + SECOND,
    )
    await deliveries.hold_back([due_later.delivery_id], T0 + 30 * SECOND)
    assert [d.delivery_id for d in await deliveries.due(T0 + 2 * SECOND, T0)] == [
        due_now.delivery_id
    ]  # the one waiting for its retry, and the one held back, are not read
    at_hold = await deliveries.due(T0 + 31 * SECOND, T0 + 2 * SECOND)
    assert [d.delivery_id for d in at_hold] == [due_later.delivery_id]
    everything = await deliveries.due(T0 + 61 * SECOND)
    assert len(everything) == 3


async def test_of_many_begins_of_one_delivery_at_once_exactly_one_is_begun(db: Any) -> None:
    deliveries = store(db)
    [delivery] = await made(deliveries, 1)
    holds = [T0 + timedelta(seconds=20, milliseconds=k) for k in range(8)]
    begun = await asyncio.gather(*(deliveries.begin([delivery], T0, hold) for hold in holds))
    assert sum(len(ids) for ids in begun) == 1
    assert await deliveries.due(T0 + 10 * SECOND) == []  # held while it is under way


async def test_an_end_is_written_only_under_its_own_hold_and_releases_what_waited(
    db: Any,
) -> None:
    deliveries = store(db)
    first, behind = await made(deliveries, 2)
    hold = T0 + 20 * SECOND
    assert await deliveries.begin([first], T0, hold) == {first.delivery_id}
    await deliveries.hold_back([behind.delivery_id], hold)
    stale = Finished(first.delivery_id, hold - SECOND, DeliveryStatus.DELIVERED, 204)
    await deliveries.finish([stale], [], T0 + SECOND)
    assert await status(deliveries, first) is DeliveryStatus.PENDING
    done = Finished(first.delivery_id, hold, DeliveryStatus.DELIVERED, 204)
    await deliveries.finish([done], [behind.delivery_id], T0 + 2 * SECOND)
    assert await status(deliveries, first) is DeliveryStatus.DELIVERED
    assert [d.delivery_id for d in await deliveries.due(T0 + 2 * SECOND)] == [behind.delivery_id]


async def test_held_back_is_never_made_due_sooner(db: Any) -> None:
    deliveries = store(db)
    [delivery] = await made(deliveries, 1)
    await deliveries.hold_back([delivery.delivery_id], T0 + 30 * SECOND)
    await deliveries.hold_back([delivery.delivery_id], T0 + 10 * SECOND)
    again = await deliveries.get(delivery.delivery_id)
    assert again is not None and again.next_attempt_at == T0 + 30 * SECOND


async def test_a_batch_is_begun_and_finished_in_a_statement_each_that_leaves_others(
    mongo_uri: str, db: Any
) -> None:
    """A burst's batch (the same count of attempts, the same result) is one update
    statement to begin and one to finish, as the embedded server's cost is per statement;
    a delivery begun meanwhile by another is still left as it is, and so is one whose hold
    is not the batch's."""
    updates: list[int] = []

    class Statements(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            if event.command_name == "update":
                updates.append(len(event.command["updates"]))

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            pass

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    counted = AsyncMongoClient[Document](mongo_uri, tz_aware=True, event_listeners=[Statements()])
    try:
        deliveries = store(counted[db.name])
        batch = await made(deliveries, 8)
        other = store(db)
        assert await other.begin(batch[:1], T0, T0 + 9 * SECOND) == {batch[0].delivery_id}
        until = T0 + 5 * SECOND
        begun = await deliveries.begin(batch, T0, until)
        assert begun == {d.delivery_id for d in batch[1:]} and updates == [1]
        ended = [Finished(d.delivery_id, until, DeliveryStatus.DELIVERED, 204) for d in batch]
        await deliveries.finish(ended, [], T0 + SECOND)
        assert updates == [1, 1]
    finally:
        await counted.close()
    assert [await status(other, d) for d in batch] == [DeliveryStatus.PENDING] + [
        DeliveryStatus.DELIVERED
    ] * 7
