"""Reading the snapshots whole: a full reconcile, and a catch-up since a moment.

A full reconcile at the first start and on demand rebuilds every entry; a restart whose
change stream cannot resume catches up from the stored high-water mark of `updatedAt`.
Both stream in batches, so memory holds the index's `runId -> state` map, never every
snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError, OperationFailure

from suspended_runs.storage.follower.changes import ChangeApplier
from suspended_runs.storage.follower.position import FollowPosition
from suspended_runs.storage.follower.ranges import RunIdRanges
from suspended_runs.storage.follower.stopping import stopped
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.snapshots.reader import SnapshotReader
from suspended_runs.storage.snapshots.states import (
    STATUS_FIELDS,
    extract_or_log,
    may_be_suspended,
)
from suspended_runs.storage.types import RUN_WORKFLOWS, Document, RunStatus

log = logging.getLogger(__name__)

_BATCH = 500
_INDEX_EXISTS_OTHERWISE = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict
_MASTRA_RUN_INDEX = "workflow_name_1_run_id_1"
"""The name @mastra/mongodb gives its unique (workflow_name, run_id) index."""
_OWN_RUN_INDEX = "suspended_runs_workflow_name_run_id"
_OWN_UPDATED_AT_INDEX = "suspended_runs_updatedAt"
_FIRST_WINDOW = timedelta(seconds=1)
_WINDOW_MATCHES = 1000
"""About how many documents one window of a catch-up reads: each window is one query of
its own, so no read costs what was read before it."""
_PROGRESS_LOG_INTERVAL = 10.0
"""Seconds between progress lines while the index is built."""


@dataclass(slots=True)
class ReconcileReport:
    scanned: int = 0
    written: int = 0
    ended: int = 0
    skipped: int = 0


@dataclass(slots=True)
class Progress:
    """How far a reconcile is: snapshot documents looked at, of about how many (None: not
    known yet)."""

    indexed: int = 0
    of: int | None = None
    """An estimate, from the share of the run ids read so far (`RunIdRanges`), never below
    `indexed`; exact once the reconcile has read them all."""


class Reconciler:
    def __init__(
        self,
        snapshots: AsyncCollection[Document],
        index: RunIndex,
        changes: ChangeApplier,
        position: FollowPosition,
        *,
        overlap: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.snapshots = snapshots
        self.index = index
        self.changes = changes
        self.position = position
        self.overlap = overlap
        """How far below the high-water mark a catch-up looks: the writers' clock skew."""
        self.clock = clock
        self.progress = Progress()
        """Of the reconcile under way (`/readyz` shows it while starting)."""
        self._progress_logged_at = 0.0

    async def ensure_indexes(self) -> None:
        # Indexes are the only writes to Mastra's documents: reconciles and lookups of one
        # run read by (workflow_name, run_id). Made as @mastra/mongodb makes it at init
        # (unique, its default name), so whichever starts first, the other finds the same
        # index; one an older version of this server made without `unique` is made again.
        keys = [("workflow_name", 1), ("run_id", 1)]
        existing = (await self.snapshots.index_information()).get(_MASTRA_RUN_INDEX)
        if existing is not None and not existing.get("unique"):
            log.warning(
                "remaking the snapshots' (workflow_name, run_id) index as Mastra makes it "
                "(unique): an older version of this server made it without"
            )
            await self.snapshots.drop_index(_MASTRA_RUN_INDEX)
        try:
            await self._ensure_snapshot_index(keys, unique=True)
        except DuplicateKeyError:  # a writer left two documents of one run: still read by it
            log.warning(
                "the snapshots hold two documents of one run: Mastra's unique "
                "(workflow_name, run_id) index cannot be made; one of this server's own instead"
            )
            await self._ensure_snapshot_index(keys, name=_OWN_RUN_INDEX)

    async def ensure_updated_at_index(self) -> None:
        """The index that reads by `updatedAt` (polls, a catch-up) need, made when first
        needed: a change stream needs none, and building one holds the embedded server for
        as long as decoding every snapshot takes. Mastra's own (`updatedAt: -1`, made
        where retention is set) serves too."""
        indexes = await self.snapshots.index_information()
        if not any(spec["key"][0][0] == "updatedAt" for spec in indexes.values()):
            log.info("building the snapshots' updatedAt index")
            await self._ensure_snapshot_index([("updatedAt", 1)], name=_OWN_UPDATED_AT_INDEX)

    async def reconcile(self) -> ReconcileReport:
        """Rebuild every entry from the snapshots: new, changed and vanished suspended runs.

        With entries in the index, two passes: a light one over `(run_id, updatedAt)` of
        every candidate, then the documents of the runs the index does not hold as they are
        (a restart with nothing changed reads none of them). With none (a first start), one
        pass that reads and inserts them all.
        """
        report = ReconcileReport()
        self.progress = Progress()
        known = await self.index.discovery.discovered_versions()
        seen: set[str] = set()
        reader = SnapshotReader(self.snapshots)
        if known:
            async for stale in self._stale_batches(known, seen, report):
                docs = reader.read([{"_id": {"$in": stale}}])
                await self._index_documents(docs, known, seen, report, counted=False)
        else:
            docs = self._candidates(reader.read)
            await self._index_documents(docs, known, seen, report, counted=True)
        gone = [
            run_id
            for run_id, (status, _) in known.items()
            if status == RunStatus.SUSPENDED.value and run_id not in seen
        ]
        report.ended = await self.index.discovery.end_runs(gone, self.clock())
        await self.index.ensure_read_indexes()
        log.info("reconciled run index", extra=asdict(report))
        return report

    async def catch_up(self, since: datetime) -> ReconcileReport:
        """After a change stream that could not resume (or a restart in poll mode): apply
        the snapshots changed since `since` (the high-water mark of `updatedAt` applied, less
        the writers' clock skew) and end the runs whose snapshot is gone. O(changes), plus
        the ids of the suspended entries."""
        await self.ensure_updated_at_index()
        report = ReconcileReport()
        self.progress = Progress()
        reader = SnapshotReader(self.snapshots, reducing=True)
        low: datetime | None = since - self.overlap
        end, width = self.clock() + self.overlap, _FIRST_WINDOW
        while low is not None:
            high = min(low + width, end) if low < end else None  # None: the rest, ahead
            # `updatedAt` first: the embedded server serves the first clause an index can.
            updated: Document = {"$gte": low} | ({"$lt": high} if high else {})
            query = {"updatedAt": updated, "workflow_name": {"$in": list(RUN_WORKFLOWS)}}
            docs = [doc async for doc in reader.read([query])]  # settled too: they end runs
            for doc in docs:
                self._looked_at(report)
                self.position.raise_high_water(doc)
            report.written += await self.changes.apply_documents(docs, announce=True)
            width = _next_width(width, len(docs))
            low = high
        report.ended = await self.changes.end_vanished(announce=True)
        log.info("caught up with the snapshots", extra=asdict(report))
        return report

    async def catch_up_or_reconcile(self) -> None:
        """From the stored high-water mark where there is one (and an index), else in full."""
        since = await self.position.stored_high_water()
        if since is None or self.index.created:
            await self.reconcile()
        else:
            await self.catch_up(since)

    async def _ensure_snapshot_index(
        self, keys: list[tuple[str, int]], *, unique: bool = False, name: str | None = None
    ) -> None:
        """An index on Mastra's collection: Mastra's own (its name and options), or one of
        this server's under a name of its own, never one that clashes with Mastra's."""
        try:
            if name is None:
                await self.snapshots.create_index(keys, unique=unique)
            else:
                await self.snapshots.create_index(keys, unique=unique, name=name)
        except OperationFailure as exc:
            if exc.code not in _INDEX_EXISTS_OTHERWISE:
                raise

    async def _candidates(
        self, read: Callable[[list[Document]], AsyncIterator[Document]]
    ) -> AsyncIterator[Document]:
        """The documents that may be suspended runs (`may_be_suspended`) of what `read` gives for
        every run workflow, range of `run_id` after range (`RunIdRanges`); `/readyz`'s
        `of` estimated from the share read."""
        ranges = RunIdRanges()
        while not ranges.done:
            within = ranges.query()
            matched = kept = 0
            for name in RUN_WORKFLOWS:
                async for doc in read([{"workflow_name": name, **within}]):
                    matched += 1
                    if may_be_suspended(doc):
                        kept += 1
                        yield doc
            ranges.saw(matched, kept)
            self.progress.of = ranges.estimate()  # kept, scaled up: at least `indexed`

    async def _stale_batches(
        self,
        known: dict[str, tuple[str, Any]],
        seen: set[str],
        report: ReconcileReport,
    ) -> AsyncIterator[list[Any]]:
        """The light pass: ids of the candidates the index does not hold as they are, a
        batch at a time; runs it does hold go into `seen`."""
        stale: list[Any] = []
        async for doc in self._candidates(self._look):
            self._looked_at(report)
            self.position.raise_high_water(doc)
            run_id = doc.get("run_id")
            if isinstance(run_id, str) and known.get(run_id) == (
                RunStatus.SUSPENDED.value,
                doc.get("updatedAt"),
            ):
                seen.add(run_id)
            else:
                stale.append(doc["_id"])
            if len(stale) >= _BATCH:
                yield stale
                stale = []
        if stale:
            yield stale

    async def _index_documents(
        self,
        docs: AsyncIterator[Document],
        known: dict[str, tuple[str, Any]],
        seen: set[str],
        report: ReconcileReport,
        *,
        counted: bool,
    ) -> None:
        """Write the suspended runs of `docs`, a batch at a time: inserted where the index
        holds no entry, else put over it as the follower does. A batch is written while
        the next is read and extracted (one write at a time), so the database and this
        process work at once."""
        writing: asyncio.Task[int] | None = None
        try:
            async for batch in self._batches(docs, seen, report, counted=counted):
                report.written += await writing if writing else 0
                writing = asyncio.create_task(self._write_batch(batch, known))
            report.written += await writing if writing else 0
            writing = None
        finally:
            if writing is not None:
                await stopped(writing)

    async def _batches(
        self,
        docs: AsyncIterator[Document],
        seen: set[str],
        report: ReconcileReport,
        *,
        counted: bool,
    ) -> AsyncIterator[list[RunEntry]]:
        """The entries of `docs`' suspended runs, `_BATCH` at a time (the last may be
        empty). `counted`: each document is one looked at (in the light pass, it was
        counted there)."""
        batch: list[RunEntry] = []
        async for doc in docs:
            if counted:
                self._looked_at(report)
            self.position.raise_high_water(doc)
            entry = extract_or_log(doc)
            if entry is None:
                report.skipped += 1
                continue
            seen.add(entry.run_id)
            batch.append(entry)
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        yield batch

    async def _write_batch(self, batch: list[RunEntry], known: dict[str, tuple[str, Any]]) -> int:
        discovery = self.index.discovery
        new = [e for e in batch if e.run_id not in known]
        held = [e for e in batch if e.run_id in known]
        return await discovery.put_new(new) + await discovery.put_suspended(held)

    def _looked_at(self, report: ReconcileReport) -> None:
        report.scanned += 1
        self.progress.indexed = report.scanned
        if self.progress.of is not None and self.progress.of < report.scanned:
            self.progress.of = report.scanned  # more than estimated: at least these
        now = asyncio.get_running_loop().time()
        if now - self._progress_logged_at >= _PROGRESS_LOG_INTERVAL:
            self._progress_logged_at = now
            log.info(
                "indexing snapshots",
                extra={"indexed": self.progress.indexed, "of": self.progress.of},
            )

    async def _look(self, queries: list[Document]) -> AsyncIterator[Document]:
        """`_id`, `run_id`, `updatedAt` and state of the documents `queries` select."""
        looked = {"_id": 1, "run_id": 1, "updatedAt": 1, **STATUS_FIELDS}
        for query in queries:
            async for doc in self.snapshots.find(query, looked, batch_size=1000):
                yield doc


def _next_width(width: timedelta, matched: int) -> timedelta:
    """The next window's width of `updatedAt`, for about `_WINDOW_MATCHES` documents."""
    if matched > 2 * _WINDOW_MATCHES:
        return max(width / 4, timedelta(milliseconds=1))
    if matched < _WINDOW_MATCHES // 2:
        return min(width * 4, timedelta(days=30))
    return width
