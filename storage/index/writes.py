"""The run index's writes, each followed by a new version (storage/index/version.py).

Every write to the index goes through here, so none can forget to give a new version. A
wrapper, not a subclass of the driver's collection: reads stay on the collection itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError, PyMongoError, ServerSelectionTimeoutError
from pymongo.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

from suspended_runs.storage.index.agents import AgentList
from suspended_runs.storage.index.retention import Retention
from suspended_runs.storage.index.version import VersionDocument
from suspended_runs.storage.types import Document

log = logging.getLogger(__name__)

DUPLICATE_KEY = 11000
_MARK_AFTER_FAILURE_SECONDS = 2.0

_Result = TypeVar("_Result")


class TrackedWrites:
    """The index collection's writes: each that changed something (or may have: it failed
    mid-way) is followed by a new version. A write that may have left entries unstamped
    (an insert: a stamp costs an update; a deletion; a failure) asks counts to start
    afresh."""

    def __init__(self, collection: AsyncCollection[Document], version: VersionDocument) -> None:
        self.collection = collection
        self._version = version

    async def update_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        return await self._tracked(self.collection.update_one(*args, **kwargs), _updated)

    async def update_many(self, *args: Any, **kwargs: Any) -> UpdateResult:
        return await self._tracked(self.collection.update_many(*args, **kwargs), _updated)

    async def bulk_write(self, *args: Any, **kwargs: Any) -> BulkWriteResult:
        return await self._tracked(self.collection.bulk_write(*args, **kwargs), _bulk_changed)

    async def unseen_update_one(self, *args: Any, **kwargs: Any) -> UpdateResult:
        """An update of what no reader of entries sees (the events an entry holds until
        they are in the outbox): no new version, no cache left stale."""
        return await self.collection.update_one(*args, **kwargs)

    async def insert_one(self, *args: Any, **kwargs: Any) -> InsertOneResult:
        write = self.collection.insert_one(*args, **kwargs)
        return await self._tracked(write, _always, recount=True)

    async def insert_many(self, *args: Any, **kwargs: Any) -> InsertManyResult:
        write = self.collection.insert_many(*args, **kwargs)
        return await self._tracked(write, _always, recount=True)

    async def delete_one(self, *args: Any, **kwargs: Any) -> DeleteResult:
        write = self.collection.delete_one(*args, **kwargs)
        return await self._tracked(write, _deleted, recount=True)

    async def delete_many(self, *args: Any, **kwargs: Any) -> DeleteResult:
        write = self.collection.delete_many(*args, **kwargs)
        return await self._tracked(write, _deleted, recount=True)

    async def _tracked(
        self,
        write: Awaitable[_Result],
        changed: Callable[[_Result], bool],
        *,
        recount: bool = False,
    ) -> _Result:
        try:
            result = await write
        except ServerSelectionTimeoutError:
            raise  # no server took it: nothing was written
        except BulkWriteError as exc:
            if not _all_lost_inserts(exc):
                await self._mark_after_failure()
            elif written_by(exc):  # the rest of a batch went in: a change, nothing unknown
                await self._version.changed(recount=recount)
            raise
        except PyMongoError:
            await self._mark_after_failure()  # it may have been applied
            raise
        if changed(result):
            await self._version.changed(recount=recount)
        return result

    async def _mark_after_failure(self) -> None:
        try:
            await asyncio.wait_for(self._version.changed(recount=True), _MARK_AFTER_FAILURE_SECONDS)
        except (PyMongoError, TimeoutError):
            log.debug("could not mark the run index changed after a failed write")


class IndexWriter:
    """What the index's writers (discovery.py, claims.py) share: the collection to read,
    the writes, the version (bounds of `createdAt`), the agents list and the retention."""

    def __init__(
        self,
        collection: AsyncCollection[Document],
        writes: TrackedWrites,
        version: VersionDocument,
        agents: AgentList,
        retention: Retention,
    ) -> None:
        self.collection = collection
        self._writes = writes
        self._version = version
        self._agents = agents
        self._retention = retention


def lost_to_taken_ids(exc: BulkWriteError) -> list[Document]:
    """The errors of a bulk write whose every error is an insert (or an upsert's insert)
    that met the unique runId, the entry being someone else's; `exc` raised again if any
    other error came."""
    errors: list[Document] = exc.details.get("writeErrors", [])
    if any(error.get("code") != DUPLICATE_KEY for error in errors):
        raise exc
    return errors


def _all_lost_inserts(exc: BulkWriteError) -> bool:
    """Each error of a bulk write is an upsert's insert that met the unique runId (the
    entry is someone else's: claimed here, or newer): the rest was written as asked."""
    errors = exc.details.get("writeErrors", [])
    return bool(errors) and all(e.get("code") == DUPLICATE_KEY for e in errors)


def written_by(exc: BulkWriteError) -> int:
    """How many documents a bulk write that failed in part wrote nonetheless."""
    details = exc.details
    return sum(int(details.get(k, 0)) for k in ("nInserted", "nUpserted", "nModified", "nRemoved"))


def _updated(result: UpdateResult) -> bool:
    return bool(result.modified_count or result.upserted_id is not None)


def _bulk_changed(result: BulkWriteResult) -> bool:
    return bool(
        result.modified_count + result.upserted_count + result.inserted_count + result.deleted_count
    )


def _deleted(result: DeleteResult) -> bool:
    return bool(result.deleted_count)


def _always(result: object) -> bool:
    return True
