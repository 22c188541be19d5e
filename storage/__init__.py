"""MongoDB storage: snapshot documents, the run index, and the follower that joins them.

Imports nothing of the other layers.
"""

from storage.database import Storage, connect
from storage.decision_log import AuditRecord, DecisionLog, KeyUse
from storage.entries import Action, Claim, Decision, Outcome, RunEntry, ToolCall
from storage.python_runs import PythonSnapshots
from storage.queries import Cursor, InvalidCursor, RunFilter
from storage.run_index import RunIndex
from storage.snapshots import MalformedSnapshot, extract_entry, parse_snapshot
from storage.sync import ReconcileReport, SnapshotSync, SyncMode
from storage.types import (
    DECISIONS_COLLECTION,
    IDEMPOTENCY_COLLECTION,
    MASTRA_RUN_WORKFLOWS,
    PYTHON_RUN_WORKFLOW,
    RUN_WORKFLOWS,
    RUNS_COLLECTION,
    SNAPSHOTS_COLLECTION,
    SYNC_STATE_COLLECTION,
    Document,
    RunStatus,
    Runtime,
)

__all__ = [
    "DECISIONS_COLLECTION",
    "IDEMPOTENCY_COLLECTION",
    "MASTRA_RUN_WORKFLOWS",
    "PYTHON_RUN_WORKFLOW",
    "RUNS_COLLECTION",
    "RUN_WORKFLOWS",
    "SNAPSHOTS_COLLECTION",
    "SYNC_STATE_COLLECTION",
    "Action",
    "AuditRecord",
    "Claim",
    "Cursor",
    "Decision",
    "DecisionLog",
    "Document",
    "InvalidCursor",
    "KeyUse",
    "MalformedSnapshot",
    "Outcome",
    "PythonSnapshots",
    "ReconcileReport",
    "RunEntry",
    "RunFilter",
    "RunIndex",
    "RunStatus",
    "Runtime",
    "SnapshotSync",
    "Storage",
    "SyncMode",
    "ToolCall",
    "connect",
    "extract_entry",
    "parse_snapshot",
]
