"""The run index's version: one document that changes with every write to the index.

Caches, ETags and counts are checked against it, in every process: a reader that sees a
new version sees the write that made it. It also bounds the `createdAt` of what was ever
written, so a list's first window is short (docs/design.md, "The run index").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.types import Document

STATE_ID = "run-index"
"""The document in `suspended_runs_sync` that changes with every write to the index."""


@dataclass(frozen=True, slots=True)
class IndexVersion:
    """What the index is at: `token` is new after every write that changed an entry (in
    any process), `at` is when that write was made (the database's clock), and `epoch` is
    new when entries were written without a stamp or deleted (counts start afresh);
    `oldest`/`newest` bound the `createdAt` of what was ever written."""

    token: Any = None
    changes: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    at: datetime | None = None
    epoch: Any = None


def _new_epoch() -> Document:
    """What the version document is made with (an operator may have deleted it): counts
    kept against an earlier one, whose `changes` it restarts, start afresh."""
    return {"epoch": ObjectId()}


class VersionDocument:
    def __init__(self, state: AsyncCollection[Document]) -> None:
        self.state = state
        self._read: tuple[float, IndexVersion] | None = None
        """When the version was last read (monotonic seconds), and what it was."""
        self._writes = 0
        self._recount_owed = False

    async def read(self, *, within: float = 0.0) -> IndexVersion:
        """The version as the database holds it (every process sees the same); or, with
        `within`, as read at most that many seconds ago and not written here since."""
        started, writes = time.monotonic(), self._writes
        if within and self._read is not None and started - self._read[0] <= within:
            return self._read[1]
        doc = await self.state.find_one({"_id": STATE_ID})
        version = IndexVersion()
        if doc is not None:
            version = IndexVersion(
                token=doc.get("token"),
                changes=int(doc.get("changes", 0)),
                oldest=doc.get("oldest"),
                newest=doc.get("newest"),
                at=doc.get("at"),
                epoch=doc.get("epoch"),
            )
        if writes == self._writes:  # else a write here may have come after the read
            self._read = (started, version)
        return version

    async def changed(self, *, recount: bool = False) -> None:
        """A write changed the index: a new version, after the write (a reader that sees
        the new version sees the write); `recount`: entries were written without a stamp
        (or deleted), so counts start afresh. A recount that could not be marked (the
        database failed) is owed, and marked with the next change."""
        self._writes += 1
        self._read = None
        self._recount_owed = recount = recount or self._recount_owed
        new = {"token": ObjectId(), **({"epoch": ObjectId()} if recount else {})}
        update = {"$set": new, "$inc": {"changes": 1}, "$currentDate": {"at": True}}
        if not recount:
            update["$setOnInsert"] = _new_epoch()
        await self.state.update_one({"_id": STATE_ID}, update, upsert=True)
        self._recount_owed = False
        self._writes += 1
        self._read = None

    async def note_created(self, moments: list[datetime]) -> None:
        """Widen the `createdAt` bounds to `moments`: they only make list windows short."""
        if moments:
            await self.state.update_one(
                {"_id": STATE_ID},
                {
                    "$min": {"oldest": min(moments)},
                    "$max": {"newest": max(moments)},
                    "$setOnInsert": _new_epoch(),
                },
                upsert=True,
            )

    async def bound_existing(self, entries: AsyncCollection[Document]) -> None:
        """Bounds for entries written before the index kept them (once: O(entries))."""
        if (await self.read()).oldest is not None:
            return
        pipeline: list[Document] = [
            {
                "$group": {
                    "_id": None,
                    "oldest": {"$min": "$createdAt"},
                    "newest": {"$max": "$createdAt"},
                }
            }
        ]
        async for row in await entries.aggregate(pipeline):
            if isinstance(row.get("oldest"), datetime) and isinstance(row.get("newest"), datetime):
                await self.note_created([row["oldest"], row["newest"]])
