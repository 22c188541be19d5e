"""The `suspended-runs` command (server/cli.py), run as a real process."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from suspended_runs.storage import SNAPSHOTS_COLLECTION
from tests.helpers import Server, load_snapshots

COMMAND = [sys.executable, "-m", "suspended_runs.server.cli"]


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


def test_version_prints_the_installed_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"suspended-runs {importlib.metadata.version('suspended-runs')}"


UNREACHABLE = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500"


@pytest.mark.parametrize(
    ("env", "args", "named"),
    [
        ({"PORT": "not-a-port"}, (), "PORT"),
        ({}, ("--port", "70000"), "PORT"),
        ({"LOG_LEVEL": "VERBOSE"}, (), "LOG_LEVEL"),
        ({"JWT_SECRET": "s" * 32, "JWT_PUBLIC_KEY": "pem"}, (), "JWT_SECRET"),
        ({"AGENTS": "no_such_module:agents"}, (), "AGENTS"),
        ({"API_KEYS_FILE": "/nonexistent/keys.json"}, (), "API_KEYS_FILE"),
        ({"API_KEYS_FILE": "{malformed}"}, (), "API_KEYS_FILE"),
        ({"MONGODB_URI": UNREACHABLE}, (), "MONGODB_URI"),
    ],
)
def test_a_bad_setting_ends_with_one_line_naming_it(
    env: dict[str, str], args: tuple[str, ...], named: str, tmp_path: Path
) -> None:
    if env.get("API_KEYS_FILE") == "{malformed}":
        (tmp_path / "keys.json").write_text('[{"name": "a"')
        env = {"API_KEYS_FILE": str(tmp_path / "keys.json")}
    result = run_cli("serve", *args, env={"MONGODB_URI": UNREACHABLE, **env})
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert lines == [lines[0]] and lines[0].startswith("suspended-runs: "), result.stderr
    assert named in lines[0], result.stderr  # log lines (JSON) may come before it
    assert "Traceback" not in result.stderr


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
