"""The `suspended-runs` command (server/cli.py), run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pymongo import MongoClient

from storage import SNAPSHOTS_COLLECTION
from tests.helpers import Server, load_snapshots

COMMAND = [sys.executable, "-m", "server.cli"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_help_lists_the_subcommands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("serve", "reconcile", "export-schema"):
        assert command in result.stdout


def test_export_schema_prints_the_committed_sdl() -> None:
    result = run_cli("export-schema")
    sdl = (Path(__file__).parent.parent / "schema" / "schema.graphql").read_text()
    assert result.returncode == 0 and result.stdout == sdl


def test_reconcile_builds_the_index_from_snapshots(mongo_uri: str) -> None:
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    db = client["cli_reconcile"]
    try:
        db[SNAPSHOTS_COLLECTION].insert_many(load_snapshots())
        env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": "cli_reconcile"}
        result = run_cli("reconcile", env=env)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert (report["written"], report["ended"], report["skipped"]) == (6, 0, 0)
        again = json.loads(run_cli("reconcile", env=env).stdout)
        assert again["written"] == 0  # nothing changed, nothing rewritten
    finally:
        client.drop_database("cli_reconcile")
        client.close()


def test_bad_settings_are_reported_without_a_traceback() -> None:
    result = run_cli("serve", env={"PORT": "not-a-port"})
    assert result.returncode == 2
    assert "PORT" in result.stderr and "Traceback" not in result.stderr


def test_serve_keeps_runs_across_a_real_restart(server: Server, tmp_path: Path) -> None:
    server.start()
    state = json.loads((tmp_path / "data" / "embedded-mongodb.json").read_text())
    with MongoClient[dict[str, Any]](
        f"mongodb://127.0.0.1:{state['port']}/?directConnection=true"
    ) as mongo:
        mongo["mastra"][SNAPSHOTS_COLLECTION].insert_many(load_snapshots())
    listing = "{ suspendedRuns { total runs { runId toolCalls { toolCallId } } } }"
    deadline = time.monotonic() + 5
    while server.query(listing)["data"]["suspendedRuns"]["total"] != 6:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    before = server.query(listing)
    assert server.stop() == 0
    assert not (tmp_path / "data" / "embedded-mongodb.json").exists()  # its MongoDB stopped too
    server.start()
    assert server.query(listing) == before
    assert server.stop() == 0
