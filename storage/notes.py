"""Notes on runs: plain text that reviewers write beside a run ("asked the customer,
waiting for an answer"), with who wrote it and when.

A collection of their own, not a field of the run index: an entry stays small (every page
reads it whole), and a rebuild of the index keeps them. Kept as long as the audit log
(`RETENTION_DAYS` after they were written, a TTL index). A note's body is stored as it was
given: the text is the caller's, checked for size where the request is read, and shown as
text wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bson import ObjectId
from bson.errors import InvalidId
from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.types import Document


@dataclass(frozen=True, slots=True)
class RunNote:
    note_id: str
    run_id: str
    body: str
    by: str
    """The credential it was written with."""
    person: str
    """The person who wrote it, as compared (`person:<name>`)."""
    at: datetime

    @classmethod
    def from_document(cls, doc: Document) -> RunNote:
        return cls(
            note_id=str(doc["_id"]),
            run_id=doc["runId"],
            body=doc["body"],
            by=doc["by"],
            person=doc["person"],
            at=doc["at"],
        )


class NoteStore:
    def __init__(self, collection: AsyncCollection[Document], retention: timedelta) -> None:
        self.collection = collection
        self.retention = retention

    async def ensure_indexes(self) -> None:
        await self.collection.create_index([("runId", ASCENDING), ("at", DESCENDING)])
        await self.collection.create_index("expiresAt", expireAfterSeconds=0)

    async def add(self, run_id: str, body: str, by: str, person: str, at: datetime) -> RunNote:
        at = at.replace(microsecond=at.microsecond // 1000 * 1000)  # as BSON keeps it
        doc = {"runId": run_id, "body": body, "by": by, "person": person, "at": at}
        result = await self.collection.insert_one({**doc, "expiresAt": at + self.retention})
        return RunNote.from_document({**doc, "_id": result.inserted_id})

    async def get(self, note_id: str) -> RunNote | None:
        """The note, or None (an id this server never gave is no note)."""
        try:
            key = ObjectId(note_id)
        except (InvalidId, TypeError):
            return None
        doc = await self.collection.find_one({"_id": key})
        return RunNote.from_document(doc) if doc else None

    async def delete(self, note: RunNote) -> bool:
        """Whether this call deleted it (of two at once, one does)."""
        result = await self.collection.delete_one({"_id": ObjectId(note.note_id)})
        return result.deleted_count == 1

    async def last_of(self, run_ids: Iterable[str], last: int) -> dict[str, list[RunNote]]:
        """Each run's last `last` notes, oldest first."""
        found: dict[str, list[RunNote]] = {}
        query = {"runId": {"$in": sorted(set(run_ids))}}
        async for doc in self.collection.find(query, sort=[("at", DESCENDING), ("_id", -1)]):
            notes = found.setdefault(doc["runId"], [])
            if len(notes) < last:
                notes.append(RunNote.from_document(doc))
        return {run_id: notes[::-1] for run_id, notes in found.items()}
