"""Persisted queries: GraphQL documents kept by their SHA-256, so a client can send the
hash alone (Apollo's automatic persisted queries).

They are kept in MongoDB so that every instance knows a document any of them was sent,
each under the scope of the callers that registered it: a caller sees only what its
scope registered, so whether a hash is known tells nothing of another tenant's documents.
At most `max_entries` are kept in all and `per_scope` per scope: each records when it was
last used, and a registration that goes over a bound removes the least recently used
ones (of its scope first), so no scope's registrations can push out another's while the
whole holds. A document is the same for its hash forever, so an instance may keep what it
read (server/persisted_queries.py does) and need only say now and then that a document is
still in use.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.types import Document


class PersistedQueryStore:
    """The `persisted_queries` collection: `{_id: "<scope>:<sha256>", scope, query,
    lastUsed}`; a scope is the text server/persisted_queries.py makes of a caller's."""

    def __init__(
        self, collection: AsyncCollection[Document], max_entries: int, per_scope: int
    ) -> None:
        self.collection = collection
        self.max_entries = max_entries
        self.per_scope = min(per_scope, max_entries)

    async def ensure_indexes(self) -> None:
        # Documents kept before scopes were one namespace for every caller: dropped, and
        # their clients register them again when told PERSISTED_QUERY_NOT_FOUND.
        await self.collection.delete_many({"scope": {"$exists": False}})
        await self.collection.create_index([("lastUsed", ASCENDING)], name="lru")
        await self.collection.create_index(
            [("scope", ASCENDING), ("lastUsed", ASCENDING)], name="scope_lru"
        )

    async def get(self, scope: str, sha256: str) -> str | None:
        """The document `scope` registered under `sha256`, marked as used now; None if
        unknown."""
        found = await self.collection.find_one_and_update(
            {"_id": _id(scope, sha256)}, {"$set": {"lastUsed": _now()}}, projection={"query": 1}
        )
        query = found.get("query") if found else None
        return query if isinstance(query, str) else None

    async def touch(self, scope: str, sha256: str) -> None:
        await self.collection.update_one(
            {"_id": _id(scope, sha256)}, {"$set": {"lastUsed": _now()}}
        )

    async def put(self, scope: str, sha256: str, query: str) -> None:
        """Registers `query` under `sha256` for `scope` (the caller checked that it hashes
        so), and removes the least recently used documents beyond the bounds."""
        result = await self.collection.update_one(
            {"_id": _id(scope, sha256)},
            {"$setOnInsert": {"scope": scope, "query": query}, "$set": {"lastUsed": _now()}},
            upsert=True,
        )
        if result.upserted_id is None:
            return
        await self._trim({"scope": scope}, self.per_scope)
        await self._trim({}, self.max_entries)

    async def count(self) -> int:
        return await self.collection.count_documents({})

    async def _trim(self, which: Document, bound: int) -> None:
        beyond = await self.collection.count_documents(which) - bound
        if beyond <= 0:
            return
        oldest = self.collection.find(which, {"_id": 1}).sort("lastUsed", ASCENDING).limit(beyond)
        ids = [document["_id"] async for document in oldest]
        await self.collection.delete_many({"_id": {"$in": ids}})


def _id(scope: str, sha256: str) -> str:
    return f"{scope}:{sha256}"


def _now() -> datetime:
    return datetime.now(UTC)
