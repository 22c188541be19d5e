"""Mastra's workflow states, as a snapshot document carries them (`snapshot.status`).

What the follower reads of a snapshot besides an entry: whether it may be a suspended run
(a reconcile's light pass), where a run came to rest (settling), and what changed (a
poll). With extraction.py, the one place that knows what Mastra writes.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import Any

from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.snapshots.extraction import extract_entry
from suspended_runs.storage.types import Document

log = logging.getLogger(__name__)

SETTLED = frozenset(
    {"running", "success", "failed", "tripwire", "waiting", "pending", "canceled", "bailed"}
    | {"paused", "skipped"}
)
"""Mastra's workflow states (WorkflowRunStatus of @mastra/core 1.71) other than suspended."""
STATUS_FIELDS: Document = {"snapshot.status": 1}
"""What a light read projects to learn a document's state (`status_of`)."""


def may_be_suspended(doc: Document) -> bool:
    """A document that may be a suspended run: its snapshot is not in a settled state (or
    is not an object: a JSON string by older writers, or malformed; it is parsed, or
    logged)."""
    snapshot = doc.get("snapshot")
    if not isinstance(snapshot, dict):
        return True
    status = snapshot.get("status")  # of any type: one that is no state is read, and refused
    return not isinstance(status, str) or status not in SETTLED


def status_of(doc: Document) -> str | None:
    """The state a (light) read of `doc` shows, or None (not an object, or no string)."""
    snapshot = doc.get("snapshot")
    status = snapshot.get("status") if isinstance(snapshot, dict) else None
    return status if isinstance(status, str) else None


def resting_state(snapshot: Any) -> tuple[str | None, str | None]:
    """(state, error message) of a whole snapshot, object or JSON string."""
    if isinstance(snapshot, str):
        try:
            snapshot = json.loads(snapshot)
        except ValueError:
            return None, None
    if not isinstance(snapshot, dict):
        return None, None
    error = snapshot.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    status = snapshot.get("status")
    return (status if isinstance(status, str) else None), (str(error)[:500] if error else None)


class Unreadable:
    """The snapshot documents this process could not read as runs: each logged once (a
    reconcile meets it again), and counted in `/metrics`."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self.count = 0
        """Distinct documents met since this process started."""

    def met(self, doc: Document, reason: str) -> None:
        key = repr(doc.get("_id"))
        if key in self._ids:
            self._ids.move_to_end(key)
            return
        self._ids[key] = None
        if len(self._ids) > _REMEMBERED:
            self._ids.popitem(last=False)
        self.count += 1
        log.warning(
            "skipped a malformed snapshot document",
            extra={"snapshotId": str(doc.get("_id")), "reason": reason[:200]},
        )


_REMEMBERED = 10_000
"""Unreadable documents remembered as logged (one beyond that may be logged again)."""
UNREADABLE = Unreadable()


def extract_or_log(doc: Document) -> RunEntry | None:
    """`extract_entry`, or None for a document it cannot read (logged once by id, counted,
    skipped)."""
    try:
        return extract_entry(doc)
    except Exception as exc:  # one bad document must never stop the follower
        UNREADABLE.met(doc, str(exc))
        return None
