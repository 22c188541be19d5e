"""`suspended-runs check` (server/check.py), run as a real process: a line per finding,
status 1 when one fails."""

from __future__ import annotations

from tests.helpers import UNREACHABLE, Server, run_cli


def findings(stdout: str) -> dict[str, str]:
    """Each finding's subject (`database`, `follower`, ...) and its level."""
    found = {}
    for line in stdout.splitlines()[:-1]:
        level, what = line.split(maxsplit=1)
        found[what.split(":")[0]] = level
    return found


def test_a_serving_instance_checks_out(server: Server) -> None:
    server.start()
    server.query("{ suspendedRuns(first: 1) { totalCount } }")
    result = run_cli("check", env=server.env)
    assert result.returncode == 0, result.stdout + result.stderr
    found = findings(result.stdout)
    assert found["settings"] == found["database"] == found["sync"] == "ok", result.stdout
    assert found["run index"] == found["follower"] == "ok", result.stdout
    assert found["auth"] == "warn"  # no keys: anyone is an admin, allowed in development
    assert result.stdout.splitlines()[-1] == "nothing failed"


def test_an_unreachable_database_fails_in_one_line() -> None:
    result = run_cli("check", env={"MONGODB_URI": UNREACHABLE})
    assert result.returncode == 1
    failed = [line for line in result.stdout.splitlines() if line.startswith("fail")]
    assert len(failed) == 1 and "no MongoDB answered at MONGODB_URI" in failed[0]
    assert "Traceback" not in result.stderr


def test_a_scheme_less_uri_fails_at_once() -> None:
    result = run_cli("check", env={"MONGODB_URI": "127.0.0.1:27017"})
    assert result.returncode == 1
    assert "fail  settings: MONGODB_URI: must start with mongodb://" in result.stdout


def test_production_without_auth_fails() -> None:
    env = {"ENV": "production", "ALLOWED_HOSTS": "inbox.example", "MONGODB_URI": UNREACHABLE}
    result = run_cli("check", env=env)
    assert result.returncode == 1
    assert "fail  settings: " in result.stdout, result.stdout  # refused, as a start refuses
