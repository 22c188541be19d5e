"""Reads Mastra's snapshot documents for a full reconcile: whole while they are small,
reduced to what extraction reads once one is not.

A snapshot over `SMALL_SNAPSHOT_BYTES` (a long conversation) is read as
`extraction_projection` reduces it, so it costs about what a small one does. Asking the
database each document's size to choose (`reading_stage`) costs the embedded server an
encoding of every document: a fifth of reading a small one, which is most of a first
start. So a reconcile reads documents whole, and their size is seen here (as the bytes
that came); at the first one over the limit, it leaves that query, reads it again with
the size asked (leaving out what it already has) and every later query the same way. At
most one large snapshot is read whole in a reconcile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import bson
from bson.raw_bson import RawBSONDocument
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.snapshots.extraction import SMALL_SNAPSHOT_BYTES, reading_stage
from suspended_runs.storage.types import Document

_BATCH = 100
"""Documents a reply carries: about 1.5 MB of small snapshots."""


class SnapshotReader:
    def __init__(self, snapshots: AsyncCollection[Document], *, reducing: bool = False) -> None:
        self.snapshots = snapshots
        self._raw: AsyncCollection[RawBSONDocument] = snapshots.with_options(
            codec_options=snapshots.codec_options.with_options(document_class=RawBSONDocument)
        )
        self.reducing = reducing
        """A snapshot over the limit was met (or reads of a few documents, where sizing
        each costs little): every read asks each one's size."""

    async def read(self, queries: list[Document]) -> AsyncIterator[Document]:
        """The documents `queries` select, one query after the other, each whole if it is
        small and reduced to what extraction reads if not."""
        for query in queries:
            async for doc in self._read(query):
                yield doc

    async def _read(self, query: Document) -> AsyncIterator[Document]:
        had: set[Any] = set()
        if not self.reducing:
            cursor = self._raw.find(query, batch_size=_BATCH)
            try:
                async for raw in cursor:
                    if len(raw.raw) > SMALL_SNAPSHOT_BYTES:
                        self.reducing = True
                        break
                    doc: Document = bson.decode(raw.raw, self.snapshots.codec_options)
                    had.add(doc.get("_id"))
                    yield doc
            finally:
                await cursor.close()
            if not self.reducing:
                return
        pipeline = [{"$match": query}, reading_stage()]
        async for doc in await self.snapshots.aggregate(pipeline, batchSize=_BATCH):
            if doc.get("_id") not in had:
                yield doc
