"""A request's deadline (storage/deadlines.py) over real database operations: what passes
it fails as unavailable, what a request hands on is not cut by it, and a wait on others
gives the request's next database work a whole deadline again. These lean on where
pymongo keeps its deadline: a pymongo upgrade that moves it fails here first."""

from __future__ import annotations

import asyncio

import pytest
from pymongo.errors import PyMongoError

from suspended_runs.storage import database_unavailable, deadlines

SHORT = 0.2


async def test_work_past_the_deadline_fails_as_unavailable(db) -> None:
    with deadlines.request_deadline(SHORT):
        await db.probe.find_one({})
        await asyncio.sleep(SHORT * 2)
        with pytest.raises(PyMongoError) as failed:
            await db.probe.find_one({})
    assert database_unavailable(failed.value)
    await db.probe.find_one({})  # the deadline ended with its request


async def test_what_a_request_hands_on_runs_under_none_of_its_deadline(db) -> None:
    async def later() -> object:
        await asyncio.sleep(SHORT * 2)
        return await db.probe.find_one({})

    with deadlines.request_deadline(SHORT):
        spawned = deadlines.spawn(later())
        handed = await deadlines.handed_on(later())
        await db.probe.find_one({})  # after a wait on others: a whole deadline again
        assert (await spawned, handed) == (None, None)


async def test_restart_gives_the_request_a_whole_deadline_and_nothing_outside_one(db) -> None:
    deadlines.restart()  # no request: no deadline
    await asyncio.sleep(SHORT * 2)
    await db.probe.find_one({})
    with deadlines.request_deadline(SHORT):
        await asyncio.sleep(SHORT * 2)
        deadlines.restart()
        await db.probe.find_one({})
