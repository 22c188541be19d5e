"""Where the follower is in the snapshots: a change stream's resume token, and the
high-water mark of `updatedAt` applied, kept in `suspended_runs_sync`.

A restart whose token resumes reads nothing again; one whose token does not (or that
polls) catches up from the high-water mark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.types import Document

_TOKEN_ID = "snapshot-change-stream"
_TOKEN_SAVE_INTERVAL = 5.0
"""Seconds between saves of an idle stream's token, so it stays within the oplog."""


class FollowPosition:
    def __init__(
        self,
        state: AsyncCollection[Document],
        clock: Callable[[], datetime],
        token_id: str = _TOKEN_ID,
    ) -> None:
        self.state = state
        self.clock = clock
        self.token_id = token_id
        """The document it is kept in: one per followed collection."""
        self.high_water: datetime | None = None
        """The newest `updatedAt` applied by this process."""
        self._saved_at = 0.0

    def raise_high_water(self, doc: Document) -> None:
        updated = doc.get("updatedAt")
        if isinstance(updated, datetime) and (self.high_water is None or updated > self.high_water):
            self.high_water = updated

    async def token(self) -> Any:
        """The resume token saved last, or None."""
        doc = await self.state.find_one({"_id": self.token_id})
        return doc.get("resumeToken") if doc else None

    async def stored_high_water(self) -> datetime | None:
        """The newest `updatedAt` applied, as saved with the token (or by polling)."""
        doc = await self.state.find_one({"_id": self.token_id})
        stored = doc.get("highWater") if doc else None
        return stored if isinstance(stored, datetime) else None

    async def save(self, token: Any) -> None:
        """Save where the stream is, with the high-water mark of `updatedAt` applied."""
        state: Document = {"savedAt": self.clock()}
        if token is not None:
            state["resumeToken"] = token
        if self.high_water is not None:
            state["highWater"] = self.high_water
        await self.state.update_one({"_id": self.token_id}, {"$set": state}, upsert=True)
        self._saved_at = asyncio.get_running_loop().time()

    def due(self, every: float = _TOKEN_SAVE_INTERVAL) -> bool:
        """Whether `every` seconds passed since the last save (by default: time to save
        although nothing changed)."""
        return asyncio.get_running_loop().time() - self._saved_at >= every
