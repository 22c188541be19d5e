"""The `suspended-runs` command (server/cli.py), run as a real process."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from suspended_runs.server import EmbeddedMongoDB
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.storage import SNAPSHOTS_COLLECTION
from tests.helpers import (
    COMMAND,
    ROOT,
    STATE_FILE,
    UNREACHABLE,
    Server,
    embedded_pid,
    load_snapshots,
    run_cli,
    wait_until_serving,
)


def test_help_lists_the_subcommands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("serve", "check", "reconcile", "export-schema", "langgraph-index"):
        assert command in result.stdout


def test_export_schema_prints_the_committed_sdl() -> None:
    result = run_cli("export-schema")
    sdl = (ROOT / "schema" / "schema.graphql").read_text()
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


@pytest.mark.parametrize(
    ("env", "args", "named"),
    [
        ({"PORT": "not-a-port"}, (), "PORT"),
        ({}, ("--port", "70000"), "PORT"),
        ({"LOG_LEVEL": "VERBOSE"}, (), "LOG_LEVEL"),
        ({"JWT_SECRET": "s" * 32, "JWT_PUBLIC_KEY": "pem"}, (), "JWT_SECRET"),
        ({"ENV": "production", "JWT_SECRET": "a", "ALLOWED_HOSTS": "x"}, (), "JWT_SECRET"),
        ({"ENV": "production", "JWT_SECRET": "s" * 31, "ALLOWED_HOSTS": "x"}, (), "JWT_SECRET"),
        ({"AGENTS": "no_such_module:agents"}, (), "AGENTS"),
        ({"API_KEYS_FILE": "/nonexistent/keys.json"}, (), "API_KEYS_FILE"),
        ({"API_KEYS_FILE": "{malformed}"}, (), "API_KEYS_FILE"),
        ({"MONGODB_URI": UNREACHABLE}, (), "MONGODB_URI"),
        ({"REVIEW_POLICIES": '[{"aprovals": 2}]'}, (), "REVIEW_POLICIES[0].aprovals"),
        ({"REVIEW_POLICIES": '[{"approvals": 0}]'}, (), "REVIEW_POLICIES[0].approvals"),
        ({"REVIEW_POLICIES": "[{"}, (), "REVIEW_POLICIES: not JSON"),
        ({"REVIEW_POLICIES_FILE": "/nonexistent/policies.json"}, (), "REVIEW_POLICIES_FILE"),
        # A quorum (or reviewers) on a server without authentication: anyone is anyone.
        ({"REVIEW_POLICIES": '[{"approvals": 2}]'}, (), "need authentication"),
        ({"REVIEW_POLICIES": '[{"reviewers": ["key:a"]}]'}, (), "need authentication"),
        # A reviewer that names no one ("token:" is no spelling of ours) would bind no one.
        (
            {"JWT_SECRET": "s" * 32, "REVIEW_POLICIES": '[{"reviewers": ["token:bob"]}]'},
            (),
            "REVIEW_POLICIES[0]: 'token:bob' is not a reviewer: key:<name>, jwt:<sub>",
        ),
        ({"JWT_PERSONS": '{"idp|1": " a"}'}, (), "JWT_PERSONS"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            (),
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
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


# Stopping `serve`: every signal that stops it stops its embedded MongoDB (issue 9, item 8).

START_RUN = """mutation { startRun(input: {agentId: "file-cleaner", prompt: "delete /tmp/x"}) {
  ... on RunStarted { run { runId } } } }"""
LISTING = "{ suspendedRuns(perPage: 500) { runs { runId } } }"
SCRIPT = ROOT / "scripts" / "serve"


def gone(pid: int) -> bool:
    """Whether the process is gone; a zombie is (an orphan's reaper may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def start_a_run(server: Server) -> str:
    run_id: str = server.query(START_RUN)["data"]["startRun"]["run"]["runId"]
    return run_id


def listed(server: Server) -> set[str]:
    return {run["runId"] for run in server.query(LISTING)["data"]["suspendedRuns"]["runs"]}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_serve_and_its_embedded_mongodb(
    sig: signal.Signals, server: Server, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server.start()
    run_id = start_a_run(server)
    mongodb = embedded_pid(data)
    assert server.signal(sig) == 0
    assert not (data / STATE_FILE).exists() and gone(mongodb)
    server.start()  # on the same data: no "already being managed by another process"
    assert run_id in listed(server)
    assert "Traceback" not in server.log.read_text()


def test_a_start_after_a_kill_9_stops_the_embedded_mongodb_left_behind(
    server: Server, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server.start()
    run_id = start_a_run(server)
    orphan = embedded_pid(data)
    try:
        assert server.signal(signal.SIGKILL) == -signal.SIGKILL
        assert not gone(orphan)  # its own session: it outlives `serve`
        server.start()
        assert gone(orphan) and embedded_pid(data) != orphan
        assert run_id in listed(server)
        assert "stopping an embedded MongoDB left running" in server.log.read_text()
    finally:
        if not gone(orphan):
            os.killpg(orphan, signal.SIGKILL)


def serve_once(data: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(DATA_DIR=str(data), PORT=str(free_port()))
    return subprocess.run(
        [*COMMAND, "serve"], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def assert_one_line_naming_data_dir(result: subprocess.CompletedProcess[str], data: Path) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert len(lines) == 1 and lines[0].startswith("suspended-runs: "), result.stderr
    assert f"DATA_DIR {data}" in lines[0] and "in use" in lines[0], result.stderr


def test_a_second_serve_on_data_in_use_ends_with_one_line(server: Server, tmp_path: Path) -> None:
    server.start()
    run_id = start_a_run(server)
    assert_one_line_naming_data_dir(serve_once(tmp_path / "data"), tmp_path / "data")
    assert run_id in listed(server)  # the first one still serves, on its embedded MongoDB


def test_serve_on_data_locked_by_another_process_ends_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with EmbeddedMongoDB(data):
        (data / STATE_FILE).unlink()  # not a server that a `serve` left: nothing names it
        assert_one_line_naming_data_dir(serve_once(data), data)


def start_scripts_serve(data: Path, log: Path) -> subprocess.Popen[bytes]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(DATA_DIR=str(data), PORT=str(port))
    with log.open("a") as out:
        process = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=out, stderr=out)
    wait_until_serving(  # longer: scripts/serve first installs when .venv is not current
        f"http://127.0.0.1:{port}/readyz",
        alive=lambda: process.poll() is None,
        log=log.read_text,
        within=180,
    )
    return process


def test_scripts_serve_starts_again_on_its_data_after_a_sigterm(tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "scripts-serve.log"
    processes = []
    try:
        for _ in range(2):
            processes.append(start_scripts_serve(data, log))
            processes[-1].send_signal(signal.SIGTERM)  # as systemd and Docker stop it
            assert processes[-1].wait(30) == 0, log.read_text()[-3000:]
        assert not (data / STATE_FILE).exists()
        assert "Traceback" not in log.read_text()
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.wait(30)


def test_new_api_key_makes_an_entry_that_the_server_reads(tmp_path: Path) -> None:
    from suspended_runs.server.auth import load_api_keys

    entries: list[dict[str, Any]] = []
    for flags in (["--all"], ["--resource-ids", "t-1,t-2"], ["--person", "Alice"]):
        result = run_cli("new-api-key", "--name", f"k{len(entries)}", "--role", "viewer", *flags)
        assert result.returncode == 0, result.stderr
        entries.append(json.loads(result.stdout.split("entry for API_KEYS_FILE: ", 1)[1]))
    assert entries[0]["scope"] == "all" and "resourceIds" not in entries[0]
    assert entries[1]["resourceIds"] == ["t-1", "t-2"]
    (tmp_path / "keys.json").write_text(json.dumps(entries))
    loaded = load_api_keys(tmp_path / "keys.json")
    scopes = [key.scope for key in loaded]
    assert scopes[0].unrestricted and not scopes[1].unrestricted
    assert not scopes[2].allows_agent("any")  # neither --all nor ids: sees nothing
    assert [key.person for key in loaded] == [None, None, "Alice"]


def test_a_langgraph_database_without_its_index_stops_a_start_that_may_not_build_it(
    mongo_uri: str,
) -> None:
    database = f"lg_{uuid.uuid4().hex[:8]}"
    env = {
        "MONGODB_URI": mongo_uri,
        "MONGODB_DB": f"{database}_index",
        "LANGGRAPH_DB": database,
        "LANGGRAPH_CREATE_INDEX": "false",
        "PORT": str(free_port()),
    }
    try:
        refused = run_cli("serve", env=env)
        assert refused.returncode == 2, refused.stderr
        lines = [line for line in refused.stderr.splitlines() if not line.startswith("{")]
        assert len(lines) == 1 and "suspended-runs langgraph-index" in lines[0], refused.stderr
        built = run_cli("langgraph-index", env=env)
        assert built.returncode == 0, built.stderr
        with MongoClient[Any](mongo_uri) as client:
            keys = [
                spec["key"]
                for spec in client[database].checkpoint_writes.index_information().values()
            ]
        assert [("channel", 1), ("checkpoint_ns", 1)] in keys
    finally:
        with MongoClient[Any](mongo_uri) as client:
            client.drop_database(database)
            client.drop_database(f"{database}_index")
