"""Persisted queries: GraphQL documents kept by their SHA-256, so a client can send the
hash alone (Apollo's automatic persisted queries).

They are kept in MongoDB so that every instance knows a document any of them was sent.
At most `max_entries` are kept: each records when it was last used, and a registration
that goes over the bound removes the least recently used ones. A document is the same
for its hash forever, so an instance may keep what it read (server/persisted_queries.py
does) and need only say now and then that a document is still in use.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.types import Document


class PersistedQueryStore:
    """The `persisted_queries` collection: `{_id: sha256 hex, query, lastUsed}`."""

    def __init__(self, collection: AsyncCollection[Document], max_entries: int) -> None:
        self.collection = collection
        self.max_entries = max_entries

    async def ensure_indexes(self) -> None:
        await self.collection.create_index([("lastUsed", ASCENDING)], name="lru")

    async def get(self, sha256: str) -> str | None:
        """The document registered under `sha256`, marked as used now; None if unknown."""
        found = await self.collection.find_one_and_update(
            {"_id": sha256}, {"$set": {"lastUsed": _now()}}, projection={"query": 1}
        )
        query = found.get("query") if found else None
        return query if isinstance(query, str) else None

    async def touch(self, sha256: str) -> None:
        await self.collection.update_one({"_id": sha256}, {"$set": {"lastUsed": _now()}})

    async def put(self, sha256: str, query: str) -> None:
        """Registers `query` under `sha256` (the caller checked that it hashes so), and
        removes the least recently used documents beyond the bound."""
        result = await self.collection.update_one(
            {"_id": sha256},
            {"$setOnInsert": {"query": query}, "$set": {"lastUsed": _now()}},
            upsert=True,
        )
        if result.upserted_id is None:
            return
        beyond = await self.collection.count_documents({}) - self.max_entries
        if beyond <= 0:
            return
        oldest = self.collection.find({}, {"_id": 1}).sort("lastUsed", ASCENDING).limit(beyond)
        ids = [document["_id"] async for document in oldest]
        await self.collection.delete_many({"_id": {"$in": ids}})

    async def count(self) -> int:
        return await self.collection.count_documents({})


def _now() -> datetime:
    return datetime.now(UTC)
