"""Names shared by every storage module: document shapes, run states, runtimes."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pymongo import WriteConcern

Document = dict[str, Any]
"""A BSON document as PyMongo returns it."""

DURABLE = WriteConcern(w="majority", j=True)
"""For the writes that exactly once stands on (claims, decisions, the snapshots of Python
runs): acknowledged once journaled. MongoDB's default acknowledges a standalone's write
before its journal is on disk, and the embedded server killed (`kill -9`) a moment after
a claim came back without it: the run was SUSPENDED again, open to a second approval."""

SNAPSHOTS_COLLECTION = "mastra_workflow_snapshot"
"""Written by `@mastra/mongodb`; the source of truth. This server never writes to it."""

RUNS_COLLECTION = "suspended_runs_index"
"""The run index: one compact document per run, the only collection list queries read."""

FOLLOWER_STATE_COLLECTION = "suspended_runs_sync"
"""Bookkeeping of the snapshot follower (the change stream's resume token)."""

DECISIONS_COLLECTION = "suspended_runs_decisions"
"""The audit log: one record per decision asked of this server."""

IDEMPOTENCY_COLLECTION = "suspended_runs_idempotency"
"""First answers by idempotency key (the key is the `_id`, so a key is taken once)."""

PERSISTED_QUERIES_COLLECTION = "suspended_runs_persisted_queries"
"""GraphQL documents by their SHA-256 (storage/persisted_queries.py)."""

EVENTS_COLLECTION = "suspended_runs_events"
"""The event outbox (storage/events/outbox.py)."""

WEBHOOKS_COLLECTION = "suspended_runs_webhooks"
"""Webhooks, with the secrets that sign their deliveries (storage/events/webhooks.py)."""

APPROVALS_COLLECTION = "suspended_runs_approvals"
"""Approvals recorded before a quorum (storage/approvals.py)."""

DELIVERIES_COLLECTION = "suspended_runs_deliveries"
"""One document per event and webhook (storage/events/deliveries.py)."""

NOTES_COLLECTION = "suspended_runs_notes"
"""Notes reviewers wrote on runs (storage/notes.py)."""

MASTRA_RUN_WORKFLOWS = ("agentic-loop", "durable-agentic-loop")
"""Workflow names of Mastra agent runs. Their `executionWorkflow` siblings are not runs."""

PYTHON_RUN_WORKFLOW = "suspended-runs.python-agent"
"""Runs of this server's own Python agents: a name of their own, so Mastra never resumes them."""

RUN_WORKFLOWS = (*MASTRA_RUN_WORKFLOWS, PYTHON_RUN_WORKFLOW)
"""Workflow names of the runs kept in the snapshot collection."""

LANGGRAPH_RUN_WORKFLOW = "langgraph"
"""An entry's `workflowName` for a LangGraph thread's run (kept in the saver's collections,
never in the snapshot collection)."""


class RunStatus(StrEnum):
    SUSPENDED = "SUSPENDED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ENDED = "ENDED"
    STALLED = "STALLED"
    CANCELLED = "CANCELLED"


FINISHED = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ENDED, RunStatus.CANCELLED})
"""States a run does not leave: their entries expire after the retention period."""


class Runtime(StrEnum):
    PYTHON = "python"
    MASTRA = "mastra"
    LANGGRAPH = "langgraph"


def json_kind(value: Any) -> str:
    """A stored value's JSON kind ("an object", "a list"), as a run's `problems` name it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"
