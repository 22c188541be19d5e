"""A reconcile's reads of snapshots: whole while they are small, reduced once one is not,
every document once."""

from __future__ import annotations

from typing import Any

from bson import BSON

from suspended_runs.storage import extract_entry
from suspended_runs.storage.snapshots.extraction import SMALL_SNAPSHOT_BYTES
from suspended_runs.storage.snapshots.reader import SnapshotReader
from tests.helpers import load_snapshots, suspended_doc


def _bloated(run_id: str) -> dict[str, Any]:
    doc = suspended_doc(run_id)
    stream = doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]["__streamState"]
    stream["messageList"]["messages"] = [{"role": "user", "content": "x" * 1000}] * 100
    return doc


async def test_small_snapshots_are_read_whole_and_large_ones_reduced_each_once(
    snapshots,
) -> None:
    """Small ones, then a large one, then both: the first large one is read again reduced
    (not whole, not twice), and every later one is reduced too; each gives the entry its
    whole document gives."""
    small = [suspended_doc(f"small-{i}") for i in range(150)]  # more than a reply's 100
    large = [_bloated(f"large-{i}") for i in range(3)]
    await snapshots.insert_many([*small[:120], large[0], *small[120:], *large[1:]])
    reader = SnapshotReader(snapshots)
    read = [doc async for doc in reader.read([{}])]
    assert sorted(doc["run_id"] for doc in read) == sorted(d["run_id"] for d in small + large)
    assert reader.reducing
    whole = {doc["_id"]: doc async for doc in snapshots.find({})}
    for doc in read:
        stored = whole[doc["_id"]]
        if len(BSON.encode(stored)) > SMALL_SNAPSHOT_BYTES:
            assert len(BSON.encode(doc)) < 5_000  # reduced
        else:
            assert doc == stored
        assert extract_entry(doc) == extract_entry(stored)


async def test_without_a_large_snapshot_every_one_is_read_whole(snapshots) -> None:
    docs = load_snapshots() + load_snapshots("durable_snapshots.extjson")
    await snapshots.insert_many(docs)
    reader = SnapshotReader(snapshots)
    read = [doc async for doc in reader.read([{"workflow_name": d} for d in ("x", "agentic-loop")])]
    whole = [doc async for doc in snapshots.find({"workflow_name": "agentic-loop"})]
    assert read == whole and not reader.reducing
