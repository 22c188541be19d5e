"""One MongoDB connection and the collections this server uses on it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.storage.approvals import ApprovalStore
from suspended_runs.storage.audit.decision_log import DecisionLog
from suspended_runs.storage.events.deliveries import DeliveryStore
from suspended_runs.storage.events.outbox import EventOutbox
from suspended_runs.storage.events.webhooks import WebhookStore
from suspended_runs.storage.follower.follower import FollowMode, SnapshotFollower, utcnow
from suspended_runs.storage.follower.langgraph_source import LangGraphCheckpoints, LangGraphSource
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.notes import NoteStore
from suspended_runs.storage.persisted_queries import PersistedQueryStore
from suspended_runs.storage.snapshots.messages import RunMessage, read_messages
from suspended_runs.storage.snapshots.python_runs import PythonSnapshots
from suspended_runs.storage.types import (
    APPROVALS_COLLECTION,
    DECISIONS_COLLECTION,
    DELIVERIES_COLLECTION,
    DURABLE,
    EVENTS_COLLECTION,
    FOLLOWER_STATE_COLLECTION,
    IDEMPOTENCY_COLLECTION,
    NOTES_COLLECTION,
    PERSISTED_QUERIES_COLLECTION,
    RUNS_COLLECTION,
    SNAPSHOTS_COLLECTION,
    WEBHOOKS_COLLECTION,
    Document,
    Runtime,
)


def connect(uri: str, *, timeout_ms: int = 5000) -> AsyncMongoClient[Document]:
    # tz_aware: every date leaves storage as an aware UTC datetime, and compares as one.
    # connectTimeoutMS as short: after a hang, the driver's monitor finds the database again
    # at its next attempt to connect, which the driver's default puts off.
    return AsyncMongoClient(
        uri,
        tz_aware=True,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        appname="suspended-runs",
    )


@dataclass(frozen=True, slots=True)
class Storage:
    client: AsyncMongoClient[Document]
    db: AsyncDatabase[Document]
    runs: RunIndex
    follower: SnapshotFollower
    python_snapshots: PythonSnapshots
    decisions: DecisionLog
    persisted_queries: PersistedQueryStore
    outbox: EventOutbox
    webhooks: WebhookStore
    deliveries: DeliveryStore
    approvals: ApprovalStore
    notes: NoteStore
    langgraph: LangGraphSource | None = None
    """LangGraph's checkpoints, where LANGGRAPH_DB names them."""

    @classmethod
    def open(
        cls,
        uri: str,
        db_name: str,
        *,
        retention: timedelta,
        follow_mode: FollowMode = FollowMode.AUTO,
        poll_interval: float = 0.5,
        poll_overlap: timedelta = timedelta(minutes=5),
        instance: str | None = None,
        follower_lease: timedelta = timedelta(seconds=5),
        persisted_queries_max: int = 10_000,
        persisted_queries_per_scope: int = 1_000,
        langgraph: LangGraphCheckpoints | None = None,
    ) -> Storage:
        """`instance` names this process in the follower lease; `langgraph`: a saver's."""
        db = (client := connect(uri))[db_name]
        runs = RunIndex(db[RUNS_COLLECTION], retention, db[FOLLOWER_STATE_COLLECTION])
        outbox = EventOutbox(db[EVENTS_COLLECTION], db[WEBHOOKS_COLLECTION], retention)
        threads = _threads(client, langgraph, runs, outbox, poll_interval)
        follower = SnapshotFollower(db[SNAPSHOTS_COLLECTION], runs, runs.state, langgraph=threads,
            mode=follow_mode, holder=instance, lease=follower_lease,
            poll_interval=poll_interval, poll_overlap=poll_overlap)  # fmt: skip
        runs.claims.outbox = follower.changes.outbox = outbox
        snapshots = db[SNAPSHOTS_COLLECTION].with_options(write_concern=DURABLE)
        queries = PersistedQueryStore(db[PERSISTED_QUERIES_COLLECTION],
            persisted_queries_max, persisted_queries_per_scope)  # fmt: skip
        state = db[FOLLOWER_STATE_COLLECTION]  # also counts admins' changes to webhooks
        return cls(
            client=client, db=db, runs=runs, follower=follower,
            python_snapshots=PythonSnapshots(snapshots),
            decisions=DecisionLog(db[DECISIONS_COLLECTION], db[IDEMPOTENCY_COLLECTION], retention),
            persisted_queries=queries,
            outbox=outbox,
            webhooks=WebhookStore(db[WEBHOOKS_COLLECTION], state),
            deliveries=DeliveryStore(db[DELIVERIES_COLLECTION], retention, state),
            approvals=ApprovalStore(db[APPROVALS_COLLECTION], retention),
            notes=NoteStore(db[NOTES_COLLECTION], retention),
            langgraph=threads,
        )  # fmt: skip

    async def ensure_indexes(self) -> None:
        await self.runs.ensure_indexes()
        await self.follower.ensure_indexes()
        await self.decisions.ensure_indexes()
        await self.persisted_queries.ensure_indexes()
        await self.outbox.ensure_indexes()
        await self.deliveries.ensure_indexes()
        await self.approvals.ensure_indexes()
        await self.notes.ensure_indexes()

    async def messages(self, entry: RunEntry, last: int) -> list[RunMessage]:
        """A run's last `last` messages, as its snapshot (or its thread's checkpoint)
        keeps them (storage/snapshots)."""
        if entry.runtime is Runtime.LANGGRAPH:
            if self.langgraph is None:
                return []
            return await self.langgraph.reader.conversation(entry.snapshot_id, last)
        return await read_messages(self.db[SNAPSHOTS_COLLECTION], entry, last)

    async def ping(self) -> bool:
        await self.db.command("ping")
        return True

    async def close(self) -> None:
        await self.client.close()


def _threads(
    client: AsyncMongoClient[Document],
    langgraph: LangGraphCheckpoints | None,
    runs: RunIndex,
    outbox: EventOutbox,
    poll_interval: float,
) -> LangGraphSource | None:
    """The follower's LangGraph source, where the saver's database is named."""
    if langgraph is None:
        return None
    saver = client[langgraph.database]
    source = LangGraphSource(
        saver[langgraph.checkpoints], saver[langgraph.writes], runs, runs.state,
        langgraph.reading, utcnow, walk_limit=langgraph.walk_limit, poll_interval=poll_interval,
    )  # fmt: skip
    source.applier.outbox = outbox
    return source
