"""What `serve` checks before it starts anything (server/preflight.py), on the real
command: an unusable DATA_DIR, a port in use and a host that does not resolve each end it
with one line naming the setting and exit 2, before the embedded MongoDB starts and
before "serving GraphQL" is logged."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from suspended_runs.server.embedded_mongodb import free_port
from tests.helpers import Server

COMMAND = [sys.executable, "-m", "suspended_runs.server.cli", "serve"]


def serve(**env: str) -> subprocess.CompletedProcess[str]:
    settings = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    settings.update({"PORT": str(free_port()), **env})
    return subprocess.run(
        COMMAND, env=settings, capture_output=True, text=True, timeout=60, check=False
    )


def assert_one_line(result: subprocess.CompletedProcess[str], named: str, *words: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert len(lines) == 1 and lines[0].startswith(f"suspended-runs: {named}: "), result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert "Traceback" not in result.stderr
    assert "serving GraphQL" not in result.stderr
    assert "embedded MongoDB" not in result.stderr  # never started
    return lines[0]


@pytest.mark.parametrize(
    ("data_dir", "reason"),
    [
        ("a file", "is not a directory"),
        ("/proc/1/suspended-runs-data", ""),
        ("/proc/version/data", "Not a directory"),
    ],
)
def test_a_data_dir_that_cannot_be_made_or_written_is_one_line(
    tmp_path: Path, data_dir: str, reason: str
) -> None:
    if data_dir == "a file":
        (tmp_path / "file").write_text("not a directory")
        data_dir = str(tmp_path / "file")
    assert_one_line(serve(DATA_DIR=data_dir), "DATA_DIR", data_dir, reason)


def test_a_port_in_use_is_one_line_before_the_database_starts(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        data = tmp_path / "data"
        line = assert_one_line(serve(PORT=str(port), DATA_DIR=str(data)), "PORT", str(port))
        assert "in use" in line
        assert not data.exists()  # nothing was started, nor made
    finally:
        taken.close()


def test_a_host_that_does_not_resolve_is_one_line(tmp_path: Path) -> None:
    result = serve(HOST="no-such-host.invalid", DATA_DIR=str(tmp_path / "data"))
    assert_one_line(result, "HOST", "no-such-host.invalid", "does not resolve")


def test_serve_listens_on_the_socket_it_bound_first(server: Server) -> None:
    server.start()
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert "serving GraphQL" in server.log.read_text()
