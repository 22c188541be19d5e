"""MongoDB storage: snapshot documents, the run index, and the follower that joins them.

Imports nothing of the other layers.
"""

from storage.database import Storage, connect
from storage.entries import RunEntry, ToolCall
from storage.queries import Cursor, InvalidCursor, RunFilter
from storage.run_index import RunIndex
from storage.snapshots import MalformedSnapshot, extract_entry, parse_snapshot
from storage.sync import ReconcileReport, SnapshotSync, SyncMode
from storage.types import (
    MASTRA_RUN_WORKFLOWS,
    RUNS_COLLECTION,
    SNAPSHOTS_COLLECTION,
    SYNC_STATE_COLLECTION,
    Document,
    RunStatus,
    Runtime,
)

__all__ = [
    "MASTRA_RUN_WORKFLOWS",
    "RUNS_COLLECTION",
    "SNAPSHOTS_COLLECTION",
    "SYNC_STATE_COLLECTION",
    "Cursor",
    "Document",
    "InvalidCursor",
    "MalformedSnapshot",
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
