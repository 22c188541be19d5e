"""`serve` keeps its embedded MongoDB running (server/supervisor.py), on real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.errors import PyMongoError

from suspended_runs.storage import Document
from tests.helpers import STATE_FILE, Server, embedded_pid, suspended_doc

LIST = "{ suspendedRuns { total runs { runId } } }"


def _uri(data: Path) -> str:
    state = json.loads((data / STATE_FILE).read_text())
    return f"mongodb://{state['host']}:{state['port']}/?directConnection=true"


def _pid(data: Path) -> int | None:
    """The embedded MongoDB's pid; None while it is being started again."""
    try:
        return embedded_pid(data)
    except (OSError, ValueError):
        return None


def _wait_for(check, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not within {within:g}s: {what}"
        time.sleep(0.2)


def _lists(server: Server, run_id: str) -> bool:
    try:
        body = httpx.post(f"{server.url}/graphql", json={"query": LIST}, timeout=30).json()
    except httpx.HTTPError:
        return False
    runs = (body.get("data") or {}).get("suspendedRuns") or {"runs": []}
    return "errors" not in body and run_id in {run["runId"] for run in runs["runs"]}


def test_a_killed_embedded_database_is_started_again_and_the_api_recovers(
    server: Server, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server.start()
    killed = embedded_pid(data)
    os.kill(killed, signal.SIGKILL)
    _wait_for(lambda: _pid(data) not in (None, killed), 30, "a new embedded MongoDB")
    # What Mastra writes after the restart shows: the follower found the database again.
    client: MongoClient[Document]
    with MongoClient(_uri(data), serverSelectionTimeoutMS=10_000) as client:
        snapshots: Collection[Document] = client["mastra"]["mastra_workflow_snapshot"]
        snapshots.insert_one(suspended_doc("after"))
    _wait_for(lambda: _lists(server, "after"), 60, "the run written after the restart listed")
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    assert "suspended_runs_embedded_db_restarts_total 1.0" in metrics
    log = server.log.read_text()
    assert "the embedded MongoDB stopped working; starting it again" in log
    assert "the embedded MongoDB is running again" in log
    assert server.process is not None and server.process.poll() is None


def test_a_database_that_will_not_start_again_ends_serve_with_one_line(
    server: Server, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server.start()
    # Its data folder replaced by a file: the server keeps running on what it opened,
    # and no start after it can open the data.
    (data / "db").rename(tmp_path / "db-moved")
    (data / "db").write_text("not a data folder")
    os.kill(embedded_pid(data), signal.SIGKILL)
    assert server.process is not None
    code = server.process.wait(120)
    server.process = None
    assert code == 1
    lines = server.log.read_text().splitlines()
    assert "Traceback" not in "\n".join(lines)
    assert lines[-1].startswith(
        f"suspended-runs: the embedded MongoDB for DATA_DIR {data.resolve()} failed to start "
        "5 times in a row: "
    ), lines[-5:]
    assert sum("the embedded MongoDB did not start" in line for line in lines) == 5


APPROVE_ONLY = (
    "mutation($input: ApproveToolCallInput!) { approveToolCall(input: $input) { __typename } }"
)
START_CLEANER = (
    'mutation { startRun(input: {agentId: "file-cleaner", prompt: "go /tmp/a.txt"}) '
    "{ ... on RunStarted { run { runId } } } }"
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 192 MB tmpfs, mounted for the test (root can; elsewhere the test is skipped)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=192m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs was refused: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(path: Path) -> None:
    """Write zeros to `path` until the disk is full."""
    with path.open("wb") as file, contextlib.suppress(OSError):
        while True:
            file.write(b"\0" * 65536)
            file.flush()


def test_a_full_disk_answers_storage_full_loses_nothing_and_heals(small_disk: Path) -> None:
    """Filled by writes as Mastra's large snapshots would: an approval answers
    STORAGE_FULL and is not recorded; freed, the server heals without a restart."""
    data = small_disk / "data"
    server = Server(data)
    server.start()
    try:
        run_id = server.query(START_CLEANER)["data"]["startRun"]["run"]["runId"]
        client: MongoClient[Document]
        with MongoClient(_uri(data), serverSelectionTimeoutMS=5_000) as client:
            junk: Collection[Document] = client["mastra"]["junk"]
            junk.insert_one({"blob": ""})  # its files made while there is room
            _fill(small_disk / "filler")
            # Until no write fits in what the journal had set aside: smaller and smaller.
            for size in (2**17, 2**10, 2**6):
                with contextlib.suppress(PyMongoError):
                    for _ in range(20_000):
                        junk.insert_one({"blob": "x" * size})
        variables = {"input": {"runId": run_id}}
        approved = httpx.post(
            f"{server.url}/graphql",
            json={"query": APPROVE_ONLY, "variables": variables},
            timeout=60,
        ).json()
        assert "errors" in approved, (approved, server.log.read_text()[-3000:])
        assert approved["errors"][0]["extensions"]["code"] == "STORAGE_FULL", approved
        ready = httpx.get(f"{server.url}/readyz", timeout=60)
        assert (ready.status_code, ready.json()["reason"]) == (503, "storage_full")
        (small_disk / "filler").unlink()
        # Healed by itself: the approval that failed was not recorded, so the run still
        # waits, and the same approval now continues it.
        _wait_for(lambda: _lists(server, run_id), 90, "the suspended run listed again")
        again = server.query(APPROVE_ONLY, variables)
        assert again["data"]["approveToolCall"]["__typename"] == "RunDecided", again
        assert "the database's storage is full" in server.log.read_text()
    finally:
        if server.process is not None:
            server.stop()
