"""Which instance does what one instance at a time must: a lease in the database.

Every instance serves the API, but one at a time follows (writes the index from the
snapshots), and one delivers webhooks; the others stand by, and take over when the
holder stops renewing.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from suspended_runs.storage.types import Document

FOLLOWER_LEASE = "snapshot-follower"


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Lease:
    """A document in `suspended_runs_sync` naming its holder and when the hold runs out.
    The holder renews it every third of its length; any instance takes it once it ran out
    (a holder that died, or lost the database), so one follows within a lease of the last
    one stopping. Instances' clocks are assumed to agree within a fraction of the lease."""

    def __init__(
        self,
        state: AsyncCollection[Document],
        holder: str,
        length: timedelta,
        clock: Callable[[], datetime],
        lease_id: str = FOLLOWER_LEASE,
    ) -> None:
        self.lease_id = lease_id
        self.state = state
        self.holder = holder
        self.length = length
        self.clock = clock

    @property
    def renew_every(self) -> float:
        return self.length.total_seconds() / 3

    async def take(self, status: Document) -> bool:
        """Hold the lease (newly, or again), unless another instance holds it."""
        now = self.clock()
        # A top-level $or is scanned by the embedded server: this collection holds a few.
        held_by_none = {"$or": [{"holder": self.holder}, {"expiresAt": {"$lte": now}}]}
        try:
            await self.state.update_one(
                {"_id": self.lease_id, **held_by_none}, self._holding(now, status), upsert=True
            )
        except DuplicateKeyError:  # the lease exists, held by another: the upsert's insert
            return False
        return True

    async def renew(self, status: Document) -> bool:
        """Hold on; False when another instance took the lease meanwhile."""
        now = self.clock()
        result = await self.state.update_one(
            {"_id": self.lease_id, "holder": self.holder}, self._holding(now, status)
        )
        return result.matched_count == 1

    async def current(self) -> Document | None:
        """The lease as its holder last said (mode, health, progress), while it holds."""
        doc = await self.state.find_one({"_id": self.lease_id})
        expires = doc.get("expiresAt") if doc else None
        return doc if isinstance(expires, datetime) and expires > self.clock() else None

    async def release(self) -> None:
        """Let go (a clean stop), so another instance takes over at once."""
        await self.state.update_one(
            {"_id": self.lease_id, "holder": self.holder}, {"$set": {"expiresAt": self.clock()}}
        )

    def _holding(self, now: datetime, status: Document) -> Document:
        held = {"holder": self.holder, "expiresAt": now + self.length, "renewedAt": now}
        return {"$set": held | status}
