"""The indexes the follower makes on Mastra's collection (storage/follower/reconcile.py):
never one that clashes with @mastra/mongodb's, in either start order, against the real
Mastra store's init()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from suspended_runs.storage import SNAPSHOTS_COLLECTION
from tests.helpers import suspended_doc
from tests.mastra_peer import init_store

RUN_INDEX = "workflow_name_1_run_id_1"


async def _indexes(db) -> dict[str, Any]:
    indexes: dict[str, Any] = await db[SNAPSHOTS_COLLECTION].index_information()
    return indexes


async def test_mastra_started_after_the_server_keeps_its_unique_index(
    peer_node: Path, mongo_uri: str, db, settings, start_app
) -> None:
    await start_app(settings)  # an empty database: the server makes its indexes first
    warnings = init_store(peer_node, mongo_uri, db.name)
    assert "Failed to create" not in warnings, warnings
    indexes = await _indexes(db)
    assert indexes[RUN_INDEX].get("unique") is True
    mastra = {"_id_", RUN_INDEX, "run_id_1", "workflow_name_1", "resourceId_1", "createdAt_-1"}
    mastra.add("snapshot.status_1")
    assert all(name in mastra or name.startswith("suspended_runs_") for name in indexes), indexes


async def test_the_server_started_after_mastra_finds_the_same_index(
    peer_node: Path, mongo_uri: str, db, settings, start_app
) -> None:
    assert "Failed to create" not in init_store(peer_node, mongo_uri, db.name)
    client = await start_app(settings)
    assert (await client.get("/readyz")).status_code == 200
    assert (await _indexes(db))[RUN_INDEX].get("unique") is True
    # And Mastra's next start finds nothing to complain of.
    assert "Failed to create" not in init_store(peer_node, mongo_uri, db.name)


async def test_a_clashing_index_an_older_server_made_is_repaired_at_start(
    peer_node: Path, mongo_uri: str, db, settings, start_app, caplog
) -> None:
    snapshots = db[SNAPSHOTS_COLLECTION]
    await snapshots.insert_one(suspended_doc("run-1"))
    await snapshots.create_index([("workflow_name", 1), ("run_id", 1)])  # not unique
    await start_app(settings)
    assert (await _indexes(db))[RUN_INDEX].get("unique") is True
    assert any("remaking the snapshots" in r.getMessage() for r in caplog.records)
    assert "Failed to create" not in init_store(peer_node, mongo_uri, db.name)
