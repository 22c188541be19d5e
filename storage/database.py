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
from suspended_runs.storage.follower.follower import FollowMode, SnapshotFollower
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.index.run_index import RunIndex
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
    PERSISTED_QUERIES_COLLECTION,
    RUNS_COLLECTION,
    SNAPSHOTS_COLLECTION,
    WEBHOOKS_COLLECTION,
    Document,
)


def connect(uri: str, *, timeout_ms: int = 5000) -> AsyncMongoClient[Document]:
    # tz_aware: every date leaves storage as an aware UTC datetime, and compares as one.
    return AsyncMongoClient(
        uri, tz_aware=True, serverSelectionTimeoutMS=timeout_ms, appname="suspended-runs"
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
    ) -> Storage:
        """`instance` names this process in the follower lease (`follower_lease` long)."""
        client = connect(uri)
        db = client[db_name]
        runs = RunIndex(db[RUNS_COLLECTION], retention, db[FOLLOWER_STATE_COLLECTION])
        follower = SnapshotFollower(
            db[SNAPSHOTS_COLLECTION], runs, db[FOLLOWER_STATE_COLLECTION], mode=follow_mode,
            poll_interval=poll_interval, poll_overlap=poll_overlap, holder=instance,
            lease=follower_lease,
        )  # fmt: skip
        outbox = EventOutbox(db[EVENTS_COLLECTION], db[WEBHOOKS_COLLECTION], retention)
        runs.claims.outbox = follower.changes.outbox = outbox
        snapshots = db[SNAPSHOTS_COLLECTION].with_options(write_concern=DURABLE)
        return cls(
            client=client, db=db, runs=runs, follower=follower,
            python_snapshots=PythonSnapshots(snapshots),
            decisions=DecisionLog(db[DECISIONS_COLLECTION], db[IDEMPOTENCY_COLLECTION], retention),
            persisted_queries=PersistedQueryStore(
                db[PERSISTED_QUERIES_COLLECTION], persisted_queries_max, persisted_queries_per_scope
            ),
            outbox=outbox,
            webhooks=WebhookStore(db[WEBHOOKS_COLLECTION]),
            deliveries=DeliveryStore(db[DELIVERIES_COLLECTION], retention),
            approvals=ApprovalStore(db[APPROVALS_COLLECTION], retention),
        )  # fmt: skip

    async def ensure_indexes(self) -> None:
        await self.runs.ensure_indexes()
        await self.follower.ensure_indexes()
        await self.decisions.ensure_indexes()
        await self.persisted_queries.ensure_indexes()
        await self.outbox.ensure_indexes()
        await self.deliveries.ensure_indexes()
        await self.approvals.ensure_indexes()

    async def messages(self, entry: RunEntry, last: int) -> list[RunMessage]:
        """A run's last `last` messages, as its snapshot keeps them (storage/snapshots)."""
        return await read_messages(self.db[SNAPSHOTS_COLLECTION], entry, last)

    async def ping(self) -> bool:
        await self.db.command("ping")
        return True

    async def close(self) -> None:
        await self.client.close()
