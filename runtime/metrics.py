"""The server's metrics, in the Prometheus format (`GET /metrics`, server/metrics.py).

Counters and histograms are updated where things happen (requests, decisions, calls to
Mastra); the gauges of what the database holds are read when scraped (`refresh`), from
the run index (exact counts, kept until the index changes) and the follower's state.
Everything is in `REGISTRY`, with the process's own metrics (memory, CPU, open files).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

from suspended_runs.storage import UNREADABLE, RunFilter, RunStatus, Storage

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

REQUEST_SECONDS = Histogram(
    "suspended_runs_graphql_request_seconds",
    "Seconds to execute a GraphQL operation, by operation name (as the client names it).",
    ["operation"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
NOT_MODIFIED = Counter(
    "suspended_runs_graphql_not_modified",
    "Conditional GETs answered 304 without executing the operation.",
    registry=REGISTRY,
)
DECISIONS = Counter(
    "suspended_runs_decisions",
    "Decisions asked of this instance (approve, decline, resume), by the answer's type.",
    ["outcome"],
    registry=REGISTRY,
)
TIME_TO_DECISION = Histogram(
    "suspended_runs_time_to_decision_seconds",
    "From a run's suspension to a decision applied on it here (under a quorum, the Nth approval).",
    buckets=(10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86_400, 3 * 86_400, 7 * 86_400),
    registry=REGISTRY,
)
MASTRA_SECONDS = Histogram(
    "suspended_runs_mastra_call_seconds",
    "Seconds of a decision sent to a Mastra server, its event stream read to the end.",
    ["route"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
GRAPHS_RUNNING = Gauge(
    "suspended_runs_langgraph_graphs_running",
    "LangGraph graphs running on their threads now (resumes and starts).",
    registry=REGISTRY,
)
GRAPHS_RUNNING_MOST = Gauge(
    "suspended_runs_langgraph_graphs_running_most",
    "The most LangGraph graphs that ran at once since this process started.",
    registry=REGISTRY,
)
MASTRA_ERRORS = Counter(
    "suspended_runs_mastra_call_errors",
    "Decisions sent to Mastra that failed: not_applied (certainly not) or uncertain.",
    ["route", "kind"],
    registry=REGISTRY,
)
SUBSCRIPTION_EVALUATIONS = Counter(
    "suspended_runs_subscription_evaluations",
    "Evaluations of a subscribed page: one per distinct page per change of the run index.",
    registry=REGISTRY,
)
SUBSCRIPTIONS = Gauge(
    "suspended_runs_subscriptions", "Subscriptions open on this instance.", registry=REGISTRY
)
INDEX_ENTRIES = Gauge(
    "suspended_runs_index_entries",
    "Entries of the run index, by stored status (STALLED runs are among RUNNING).",
    ["status"],
    registry=REGISTRY,
)
STALLED = Gauge(
    "suspended_runs_stalled_runs",
    "RUNNING runs whose claim's lease ran out (their process died): an operator's to end.",
    registry=REGISTRY,
)
OUTCOME_UNKNOWN = Gauge(
    "suspended_runs_outcome_unknown_runs",
    "Runs whose decision may have been applied and whose answer was lost.",
    registry=REGISTRY,
)
FOLLOWER = Gauge(
    "suspended_runs_follower",
    "1 while this instance holds the follower lease and follows the snapshots, else 0.",
    registry=REGISTRY,
)
SYNC_HEALTHY = Gauge(
    "suspended_runs_sync_healthy",
    "1 while the follower follows the snapshots (as this instance sees it), else 0.",
    registry=REGISTRY,
)
SYNC_LAG = Gauge(
    "suspended_runs_sync_lag_seconds",
    "Seconds from a snapshot change (its commit, or its updatedAt when polling) to its "
    "entry in the index, for the last change the follower applied (on the follower).",
    registry=REGISTRY,
)
FOLLOWER_DELAY = Histogram(
    "suspended_runs_follower_delay_seconds",
    "Seconds from a snapshot change (its commit, or its updatedAt when polling) to its "
    "entry in the index, for every change the follower applied (on the follower).",
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
SYNC_BEHIND = Gauge(
    "suspended_runs_sync_behind_seconds",
    "How far the index is behind the snapshots' writes as this instance sees it: 0 when "
    "caught up, else the age of the newest change applied (NaN before one is known).",
    registry=REGISTRY,
)
UNREADABLE_SNAPSHOTS = Gauge(
    "suspended_runs_unreadable_snapshots",
    "Snapshot documents of runs this process could not read (a run id, agent, date or "
    "snapshot that is missing or of the wrong type), each logged once and left out.",
    registry=REGISTRY,
)
COUNTS_IN_MEMORY = Gauge(
    "suspended_runs_counts_in_memory",
    "1 while the counts of suspended runs are kept in memory for every agent, resource and "
    "thread (read once after a start, or after a burst of changes), else 0: each shape's "
    "first `total` reads its matches.",
    registry=REGISTRY,
)

WEBHOOK_ATTEMPTS = Counter(
    "suspended_runs_webhook_attempts",
    "Attempts to post a webhook delivery, by what came of it: delivered, retried (a "
    "non-2xx answer, a timeout, a refused connection), refused (the address check), failed "
    "(the schedule ran out, or 410 Gone).",
    ["outcome"],
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Gauge(
    "suspended_runs_webhook_deliveries",
    "Webhook deliveries kept (RETENTION_DAYS), by status: PENDING, DELIVERED, FAILED.",
    ["status"],
    registry=REGISTRY,
)
WEBHOOK_OUTBOX_DEPTH = Gauge(
    "suspended_runs_webhook_outbox_depth",
    "Events not yet delivered: those not yet turned into deliveries, and PENDING deliveries.",
    registry=REGISTRY,
)
WEBHOOK_OLDEST_PENDING = Gauge(
    "suspended_runs_webhook_oldest_pending_seconds",
    "Age of the oldest event not yet delivered (0: none).",
    registry=REGISTRY,
)

_STORED = [s for s in RunStatus if s is not RunStatus.STALLED]
_OPERATION_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")


class OperationLabels:
    """Bounded labels for clients' operation names: a name becomes a label once an
    operation of that name was executed without errors by a caller with a role, and only
    the first `most` such names do (METRICS_MAX_OPERATIONS); the rest are "other", so
    no caller can fill /metrics with names of its own choosing."""

    def __init__(self, most: int = 200) -> None:
        self.most = most
        self._known: set[str] = set()

    def label(self, name: object, *, executed: bool) -> str:
        if name is None or name == "":
            return "anonymous"
        if not isinstance(name, str):
            return "other"
        if name in self._known:
            return name
        if not executed or len(self._known) >= self.most or not _OPERATION_NAME.fullmatch(name):
            return "other"
        self._known.add(name)
        return name


async def refresh(storage: Storage) -> None:
    """Read the gauges of what the database holds (at a scrape)."""
    now = datetime.now(UTC)
    for status in _STORED:
        states = {status, RunStatus.STALLED} if status is RunStatus.RUNNING else {status}
        count = await storage.runs.count(RunFilter(statuses=frozenset(states)), now=now)
        INDEX_ENTRIES.labels(status=status.value).set(count)
    claimed = await storage.runs.claims.claimed()
    STALLED.set(sum(entry.status_at(now) is RunStatus.STALLED for entry in claimed))
    OUTCOME_UNKNOWN.set(sum(entry.outcome_unknown for entry in claimed))
    UNREADABLE_SNAPSHOTS.set(UNREADABLE.count)
    tallies = storage.runs.tallies
    COUNTS_IN_MEMORY.set(1 if tallies is not None and tallies.loaded else 0)
    follower = storage.follower
    FOLLOWER.set(1 if follower.role == "follower" else 0)
    SYNC_HEALTHY.set(1 if follower.following is not None and follower.healthy else 0)
    if follower.lag is not None:
        SYNC_LAG.set(follower.lag)
    delays = follower.changes.delays
    while delays:  # observed once, by the scrape that finds them
        FOLLOWER_DELAY.observe(delays.popleft())
    behind = follower.behind_seconds
    SYNC_BEHIND.set(float("nan") if behind is None else behind)
    await _refresh_webhooks(storage, now)


async def _refresh_webhooks(storage: Storage, now: datetime) -> None:
    outcomes = await storage.deliveries.outcomes()
    for status in ("PENDING", "DELIVERED", "FAILED"):
        WEBHOOK_DELIVERIES.labels(status=status).set(outcomes.get(status, 0))
    WEBHOOK_OUTBOX_DEPTH.set(await storage.outbox.depth() + outcomes.get("PENDING", 0))
    oldest = await storage.deliveries.oldest_pending()
    unsent = await storage.outbox.oldest()
    ages = [(now - at).total_seconds() for at in (oldest, unsent) if at is not None]
    WEBHOOK_OLDEST_PENDING.set(max(ages, default=0.0))
