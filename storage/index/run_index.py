"""The run index: a compact document per run, the read model every list query uses.

Snapshots are large and keep the agent id under a step key that varies, so no index
can serve a list query on them; this collection can (docs/design.md, "The run index").
`RunIndex` holds its parts: the follower's writes (`discovery`), the decisions' and
claims' writes (`claims`), and reads its pages, counts, version and agents.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.index.agents import AgentList
from suspended_runs.storage.index.claims import ClaimWrites
from suspended_runs.storage.index.discovery import Discovery
from suspended_runs.storage.index.entry import RunEntry, read_entry
from suspended_runs.storage.index.filters import RUN_INDEXES, Cursor, RunFilter
from suspended_runs.storage.index.pages import RunPages
from suspended_runs.storage.index.retention import Retention
from suspended_runs.storage.index.reviews import ASSIGNEES_INDEX, REVIEW_INDEX, ReviewWrites
from suspended_runs.storage.index.tallies import SuspendedTallies
from suspended_runs.storage.index.version import IndexVersion, VersionDocument
from suspended_runs.storage.index.writes import TrackedWrites
from suspended_runs.storage.types import DURABLE, FOLLOWER_STATE_COLLECTION, Document, RunStatus

_OLD_TTL_INDEX = "expiresAt_1"


class RunIndex:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        retention: timedelta,
        state: AsyncCollection[Document] | None = None,
        *,
        tallied: bool = True,
    ) -> None:
        self.state = collection.database[FOLLOWER_STATE_COLLECTION] if state is None else state
        self.collection = collection
        """Read from directly; every write goes through `writes`."""
        self._version = VersionDocument(self.state)
        self.writes = TrackedWrites(collection, self._version)
        self.retention = retention
        self._retention = Retention(collection, self._version, retention)
        self._agents = AgentList(self.state)
        self.tallies = (
            SuspendedTallies(collection, self.version, lambda: self.read_indexed)
            if tallied
            else None
        )
        """Counts of suspended runs kept for every shape at once; without them (a test of
        the counts beneath), each filter's count is kept by itself."""
        self._pages = RunPages(collection, self.tallies)
        parts = (collection, self.writes, self._version, self._agents, self._retention)
        self.discovery = Discovery(*parts)
        durable = TrackedWrites(collection.with_options(write_concern=DURABLE), self._version)
        self.claims = ClaimWrites(collection, durable, *parts[2:])
        self.reviews = ReviewWrites(collection, durable, self.claims)
        """Reviews, hand-overs and notes' counts (storage/index/reviews.py)."""
        self.created = False
        """The collection was made by `ensure_indexes` (it holds nothing yet, and a resume
        token kept from before describes another index: a full reconcile rebuilds it)."""
        self.read_indexed = True
        """False while a new index waits for its read indexes: a read but by `runId` would
        scan every entry written so far."""

    async def ensure_indexes(self) -> None:
        names = await self.collection.database.list_collection_names(
            filter={"name": self.collection.name}
        )
        self.created = not names
        await self.collection.create_index([("runId", ASCENDING)], unique=True)
        if not self.created:
            await self.ensure_read_indexes()
        else:
            self.read_indexed = False
        await self._version.bound_existing(self.collection)
        await self._agents.note_existing(self.collection)

    async def ensure_read_indexes(self) -> None:
        """The indexes of every read but those by `runId`. A new index has them made after
        its first reconcile has filled it: the embedded server pays each index of a
        collection on every insert, and once over all entries for an index made after.
        Made again, each costs a lookup."""
        await self.collection.create_index([("snapshotId", ASCENDING)])
        # Counts: what was written since (an insert leaves it out, and costs no entry here).
        await self.collection.create_index([("changedAt", ASCENDING)], sparse=True)
        for keys in RUN_INDEXES:
            await self.collection.create_index(keys)
        # Sparse: only reviewed and handed-over entries are in them (storage/index/marked.py).
        await self.collection.create_index([(REVIEW_INDEX, ASCENDING)], sparse=True)
        await self.collection.create_index([(ASSIGNEES_INDEX, ASCENDING)], sparse=True)
        if _OLD_TTL_INDEX in await self.collection.index_information():
            # Expired entries are deleted by `pass_deadlines` now (made by an older version).
            await self.collection.drop_index(_OLD_TTL_INDEX)
        self.read_indexed = True

    async def page(
        self,
        run_filter: RunFilter,
        *,
        limit: int,
        skip: int = 0,
        after: Cursor | None = None,
        now: datetime | None = None,
    ) -> list[RunEntry]:
        """The runs `run_filter` selects, in `(createdAt desc, runId)` order (pages.py)."""
        version = await self.version()
        return await self._pages.page(
            run_filter, version, limit=limit, skip=skip, after=after, now=now
        )

    async def count(
        self,
        run_filter: RunFilter,
        now: datetime | None = None,
        *,
        version: IndexVersion | None = None,
    ) -> int:
        """How many runs `run_filter` selects, exact as of `version` (read now if None)."""
        version = version or await self.version()
        return await self._pages.count(run_filter, version, now or datetime.now(UTC))

    async def version(self, *, within: float = 0.0) -> IndexVersion:
        """The index's version as the database holds it (every process sees the same); or,
        with `within`, as read at most that many seconds ago and not written here since."""
        return await self._version.read(within=within)

    async def shown_changed(self) -> None:
        """A new version where what a list shows of its runs changed outside the index (an
        approval recorded before a quorum): an ETag or a subscription sees it."""
        await self._version.changed()

    async def pass_deadlines(self, now: datetime, horizon: timedelta) -> bool:
        """A new version where time alone changed what a list shows (retention.py)."""
        return await self._retention.pass_deadlines(now, horizon)

    async def get(self, run_id: str) -> RunEntry | None:
        """The whole entry (its snapshotId too): what `get` reads may be written back."""
        doc = await self.collection.find_one({"runId": run_id}, {"_id": 0})
        return read_entry(doc) if doc else None

    async def get_many(self, run_ids: list[str]) -> dict[str, RunEntry]:
        """The entries of `run_ids` that exist, by runId: one query, however many."""
        if not run_ids:
            return {}
        query = {"runId": run_ids[0] if len(run_ids) == 1 else {"$in": run_ids}}
        # runId is unique: a limit of as many as asked ends the cursor with its first batch.
        found = self.collection.find(query, {"_id": 0, "snapshotId": 0}, limit=len(run_ids))
        entries = [read_entry(doc) async for doc in found]
        return {entry.run_id: entry for entry in entries if entry is not None}

    async def agents(self) -> list[tuple[str, str]]:
        """(agentId, runtime) of every agent ever indexed, sorted."""
        return await self._agents.read()

    async def tools(self) -> set[tuple[str, str | None]]:
        """(agentId, toolName) of every call ever indexed: what an assignment is spelled
        out over (storage/index/assignment.py)."""
        return await self._agents.tools()

    async def suspended_by_agent(self, within: RunFilter) -> dict[tuple[str, str], int]:
        """(agentId, runtime) -> suspended runs, of every agent indexed that `within`'s
        agent scope allows; with a resource scope, only agents with a run (in any state)
        in those resources. From the tallies once they are read (a lookup per agent), else
        counted as `count` counts; one query more for a resource scope."""
        version = await self.version()  # one read for every agent's count
        pairs = [
            (agent_id, runtime)
            for agent_id, runtime in await self.agents()
            if within.agent_ids is None or agent_id in within.agent_ids
        ]
        agent_ids = sorted({agent_id for agent_id, _ in pairs})
        tallied = None
        if self.tallies is not None:
            tallied = await self.tallies.by_agent(version, agent_ids, within.resource_ids)
        if tallied is None:
            tallied = {}
            for agent_id in agent_ids:
                mine = replace(within, agent_id=agent_id, statuses=frozenset({RunStatus.SUSPENDED}))
                tallied[agent_id] = await self.count(mine, version=version)
        with_runs = None if within.resource_ids is None else await self._agents_in(within)
        return {
            (agent_id, runtime): tallied[agent_id]
            for agent_id, runtime in pairs
            if tallied[agent_id] or with_runs is None or agent_id in with_runs
        }

    async def _agents_in(self, within: RunFilter) -> set[str]:
        """The agents with a run in any state in `within`'s resources: one query."""
        assert within.resource_ids is not None
        query = {
            "status": {"$in": sorted(s.value for s in RunStatus)},
            "resourceId": {"$in": sorted(within.resource_ids)},
        }
        return {a for a in await self.collection.distinct("agentId", query) if isinstance(a, str)}
