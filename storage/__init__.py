"""MongoDB storage: snapshot documents, the run index, and the follower that joins them.

Imports nothing of the other layers.
"""

from suspended_runs.storage.approvals import Approval, CallApprovals
from suspended_runs.storage.audit.decision_log import AuditRecord, DecisionLog, KeyUse, RunFacts
from suspended_runs.storage.database import Storage, connect
from suspended_runs.storage.errors import (
    InvalidCursor,
    MalformedSnapshot,
    SuspendedRunsError,
    database_fault,
    database_unavailable,
    storage_full,
)
from suspended_runs.storage.follower.follower import FollowMode, SnapshotFollower
from suspended_runs.storage.follower.langgraph_source import LangGraphCheckpoints, LangGraphSource
from suspended_runs.storage.follower.reconcile import ReconcileReport
from suspended_runs.storage.index.assignment import AssignedBand
from suspended_runs.storage.index.entry import (
    Action,
    Claim,
    Decision,
    Outcome,
    Review,
    RunEntry,
    ToolCall,
    args_hash,
)
from suspended_runs.storage.index.filters import Cursor, ReviewState, RunFilter
from suspended_runs.storage.index.run_index import RunIndex
from suspended_runs.storage.notes import RunNote
from suspended_runs.storage.persisted_queries import PersistedQueryStore
from suspended_runs.storage.snapshots.extraction import extract_entry, parse_snapshot
from suspended_runs.storage.snapshots.langgraph.threads import ThreadReading
from suspended_runs.storage.snapshots.python_runs import PythonSnapshots
from suspended_runs.storage.snapshots.states import UNREADABLE
from suspended_runs.storage.types import (
    DECISIONS_COLLECTION,
    FOLLOWER_STATE_COLLECTION,
    IDEMPOTENCY_COLLECTION,
    LANGGRAPH_RUN_WORKFLOW,
    MASTRA_RUN_WORKFLOWS,
    PYTHON_RUN_WORKFLOW,
    RUN_WORKFLOWS,
    RUNS_COLLECTION,
    SNAPSHOTS_COLLECTION,
    Document,
    RunStatus,
    Runtime,
)

__all__ = [
    "DECISIONS_COLLECTION",
    "FOLLOWER_STATE_COLLECTION",
    "IDEMPOTENCY_COLLECTION",
    "LANGGRAPH_RUN_WORKFLOW",
    "MASTRA_RUN_WORKFLOWS",
    "PYTHON_RUN_WORKFLOW",
    "RUNS_COLLECTION",
    "RUN_WORKFLOWS",
    "SNAPSHOTS_COLLECTION",
    "UNREADABLE",
    "Action",
    "Approval",
    "AssignedBand",
    "AuditRecord",
    "CallApprovals",
    "Claim",
    "Cursor",
    "Decision",
    "DecisionLog",
    "Document",
    "FollowMode",
    "InvalidCursor",
    "KeyUse",
    "LangGraphCheckpoints",
    "LangGraphSource",
    "MalformedSnapshot",
    "Outcome",
    "PersistedQueryStore",
    "PythonSnapshots",
    "ReconcileReport",
    "Review",
    "ReviewState",
    "RunEntry",
    "RunFacts",
    "RunFilter",
    "RunIndex",
    "RunNote",
    "RunStatus",
    "Runtime",
    "SnapshotFollower",
    "Storage",
    "SuspendedRunsError",
    "ThreadReading",
    "ToolCall",
    "args_hash",
    "connect",
    "database_fault",
    "database_unavailable",
    "extract_entry",
    "parse_snapshot",
    "storage_full",
]
