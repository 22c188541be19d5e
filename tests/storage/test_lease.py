"""Many instances, one follower (storage/follower/follower.py, Lease): instances on
one database elect the follower by a lease in the database; the others stand by, and one
takes over within a few seconds when the follower dies."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from pymongo import MongoClient
from pymongo.collection import Collection

from suspended_runs.storage import FOLLOWER_STATE_COLLECTION, SNAPSHOTS_COLLECTION, Document
from tests.helpers import Server, suspended_doc

LEASE_SECONDS = 2


def _instance(tmp_path: Path, name: str, mongo_uri: str, db_name: str) -> Server:
    server = Server(tmp_path / name / "data")
    (tmp_path / name).mkdir()
    server.env.update(
        {
            "MONGODB_URI": mongo_uri,
            "MONGODB_DB": db_name,
            "INSTANCE_ID": name,
            "FOLLOWER_LEASE_SECONDS": str(LEASE_SECONDS),
        }
    )
    return server


def _listed(server: Server, run_id: str) -> bool:
    body = server.query("{ suspendedRuns(perPage: 500) { runs { runId } } }")
    return run_id in {r["runId"] for r in body["data"]["suspendedRuns"]["runs"]}


def _holder(state: Collection[Document]) -> object:
    lease = state.find_one({"_id": "snapshot-follower"})
    return lease and lease["holder"]


def _within(seconds: float, check: Callable[[], object]) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.fixture
def database(mongo_uri: str) -> Iterator[tuple[str, MongoClient[Document]]]:
    name = f"f_{uuid.uuid4().hex[:12]}"
    client: MongoClient[Document] = MongoClient(mongo_uri, tz_aware=True)
    yield name, client
    client.drop_database(name)
    client.close()


@pytest.fixture
def instances(
    tmp_path: Path, mongo_uri: str, database: tuple[str, MongoClient[Document]]
) -> Iterator[tuple[Server, Server]]:
    """Two `serve` processes on one database (not started yet), stopped after the test."""
    db_name, _ = database
    pair = tuple(_instance(tmp_path, name, mongo_uri, db_name) for name in ("first", "second"))
    yield pair[0], pair[1]
    for server in pair:
        if server.process is not None:
            server.stop()


def test_the_follower_killed_another_instance_takes_over_within_seconds(
    database: tuple[str, MongoClient[Document]], instances: tuple[Server, Server]
) -> None:
    db_name, client = database
    snapshots = client[db_name][SNAPSHOTS_COLLECTION]
    lease = client[db_name][FOLLOWER_STATE_COLLECTION]
    first, second = instances
    first.start()
    second.start()  # ready once the follower is
    assert _holder(lease) == "first"
    snapshots.insert_one(suspended_doc("before"))
    _within(3, lambda: _listed(second, "before"))  # the follower writes, both read
    assert _holder(lease) == "first"
    assert first.signal(signal.SIGKILL) == -9
    snapshots.insert_one(suspended_doc("after-the-follower-died"))
    took = _within(LEASE_SECONDS * 3, lambda: _listed(second, "after-the-follower-died"))
    assert took < LEASE_SECONDS * 3
    assert _holder(lease) == "second"
    _within(2, lambda: httpx.get(f"{second.url}/readyz").json()["status"] == "ready")


def test_a_follower_stopped_cleanly_hands_over_at_once(
    database: tuple[str, MongoClient[Document]], instances: tuple[Server, Server]
) -> None:
    db_name, client = database
    lease = client[db_name][FOLLOWER_STATE_COLLECTION]
    first, second = instances
    first.start()
    second.start()
    assert first.stop() == 0  # lets the lease go
    _within(
        LEASE_SECONDS,
        lambda: _holder(lease) == "second",
    )
