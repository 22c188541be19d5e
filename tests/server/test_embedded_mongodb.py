"""The embedded MongoDB launcher (server/embedded_mongodb.py): a real process, real restarts."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest.mock import ANY

import pytest
from pymongo import MongoClient

from suspended_runs.server import EmbeddedMongoDB, embedded_mongodb


def test_data_survives_a_restart(tmp_path: Path) -> None:
    with EmbeddedMongoDB(tmp_path) as server:
        with MongoClient[dict[str, object]](server.uri) as client:
            client.kept.docs.insert_one({"_id": 1, "kept": True})
        assert EmbeddedMongoDB.running_in(tmp_path) == server.uri
        pid = server.process.pid if server.process else None
    assert EmbeddedMongoDB.running_in(tmp_path) is None  # stopped, and its state file gone
    with EmbeddedMongoDB(tmp_path) as server:
        assert server.process is not None and server.process.pid != pid
        with MongoClient[dict[str, object]](server.uri) as client:
            assert client.kept.docs.find_one({"_id": 1}) == {"_id": 1, "kept": True}


def test_a_stale_state_file_is_not_trusted(tmp_path: Path) -> None:
    (tmp_path / "embedded-mongodb.json").write_text('{"host": "127.0.0.1", "port": 1}')
    assert EmbeddedMongoDB.running_in(tmp_path) is None


def test_a_start_kills_no_process_that_a_stale_state_file_names(tmp_path: Path) -> None:
    # A live pid that is no embedded MongoDB of this data (this test's own): never stopped.
    state = {"host": "127.0.0.1", "port": 1, "pid": os.getpid(), "owner": 1}
    (tmp_path / "embedded-mongodb.json").write_text(json.dumps(state))
    with EmbeddedMongoDB(tmp_path) as server:
        assert server.process is not None
        written = json.loads((tmp_path / "embedded-mongodb.json").read_text())
        assert (written["pid"], written["owner"]) == (server.process.pid, os.getpid())
    assert not (tmp_path / "embedded-mongodb.json").exists()


def test_a_change_stream_resumes_after_a_burst_beyond_secantusdbs_default_oplog_cap(
    tmp_path: Path,
) -> None:
    """A first start at 100,000 runs writes more than SecantusDB's default cap of 100,000
    oplog entries: the launcher's cap keeps a token taken before such a burst resumable
    (and the burst from pruning the last hour's entries one by one as it goes)."""
    with EmbeddedMongoDB(tmp_path) as server, MongoClient[dict[str, object]](server.uri) as client:
        docs = client.burst.docs
        with docs.watch() as stream:
            stream.try_next()
            token = stream.resume_token
        for thousand in range(101):
            docs.insert_many([{"n": thousand * 1000 + i} for i in range(1000)])
        with docs.watch(resume_after=token) as resumed:
            change = resumed.try_next()
        assert change is not None and change["fullDocument"] == {"_id": ANY, "n": 0}


_SLOW_TO_STOP = """
import signal, sys, time
def stop(*_):
    time.sleep(3)  # a clean shutdown that writes for a while
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
time.sleep(600)
"""


@pytest.mark.parametrize("limit", [600.0, 1.0])  # a limit far past the stop, or short of it
def test_a_slow_stop_is_waited_for_and_logged_and_killed_only_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, limit: float
) -> None:
    """A clean stop writes what the server holds to its data folder (over 15 s after a
    large load): it is waited for, saying so, and killed only past `_STOP_TIMEOUT` (a
    killed server replays its journal at its next open). The server here is a process
    whose SIGINT handler takes 3 s, stopped as the launcher stops its server."""
    monkeypatch.setattr(embedded_mongodb, "_STOPPING_NOTE_EVERY", 0.5)
    monkeypatch.setattr(embedded_mongodb, "_STOP_TIMEOUT", limit)
    caplog.set_level(logging.WARNING, logger=embedded_mongodb.__name__)
    server = EmbeddedMongoDB(tmp_path / "data")
    process = subprocess.Popen([sys.executable, "-c", _SLOW_TO_STOP], start_new_session=True)
    time.sleep(1)  # its handler is set
    server.process = process
    server.stop()
    notes = [r for r in caplog.records if "still stopping" in r.getMessage()]
    assert notes and all(r.__dict__["dataDir"] == str(tmp_path / "data") for r in notes)
    killed = any("killing it" in r.getMessage() for r in caplog.records)
    waited = [r.__dict__["seconds"] for r in notes]
    assert (killed, process.returncode) == ((False, 0) if limit > 3 else (True, -9)), waited


def test_a_slow_start_is_waited_for_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SecantusDB reads every document as it opens (minutes at 100,000 runs on a cold disk):
    a start that takes long is waited for, never cut short, and says that it waits."""
    real = embedded_mongodb._server_command()[0]
    slow = tmp_path / "bin" / "secantusd-py"  # its name, as a left-behind server is known by
    slow.parent.mkdir()
    slow.write_text(f'#!/bin/sh\nsleep 2\nexec "{real}" "$@"\n')
    slow.chmod(0o755)
    monkeypatch.setattr(embedded_mongodb, "_server_command", lambda: [str(slow)])
    monkeypatch.setattr(embedded_mongodb, "_OPENING_NOTE_EVERY", 0.5)
    caplog.set_level(logging.WARNING, logger=embedded_mongodb.__name__)
    with (
        EmbeddedMongoDB(tmp_path / "data") as server,
        MongoClient[dict[str, object]](server.uri) as client,
    ):
        assert client.admin.command("ping")["ok"] == 1
    waits = [r for r in caplog.records if "still opening its data" in r.getMessage()]
    assert len(waits) >= 2 and all(r.__dict__["dataDir"] == str(tmp_path / "data") for r in waits)
