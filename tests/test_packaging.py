"""The distribution installs as `suspended_runs.<layer>`, beside PyPI's `schema`, and its
command works from a regular (not editable) install in a fresh virtual environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
_NOT_SOURCE = shutil.ignore_patterns(
    ".venv",
    ".git",
    ".data",
    "node_modules",
    ".node",
    "*.egg-info",
    "build",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".typecheck",
)


def _run(*args: str | Path, stderr: bool = False) -> str:
    """Run a command away from this checkout, whose folders would otherwise be importable;
    its output (with `stderr`, its errors' too)."""
    result = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=Path(args[0]).parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + (result.stderr if stderr else "")


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv holding PyPI's `schema` and a regular install of a copy of this project.

    Its other dependencies are this test run's own, reached through a .pth file, so the
    test downloads only `schema` (and the build backend), not the whole dependency tree.
    """
    where = tmp_path_factory.mktemp("packaging")
    source = where / "project"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    env = where / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "schema")
    # Verbose, so the build backend's own warnings are kept for the test below.
    build = _run(python, "-m", "pip", "install", "-v", "--no-deps", source, stderr=True)
    (where / "build.log").write_text(build)
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (Path(site.strip()) / "zz_test_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    return env


def test_a_regular_install_builds_without_a_warning(fresh_venv: Path) -> None:
    build = (fresh_venv.parent / "build.log").read_text()
    warnings = [line for line in build.splitlines() if "Warning" in line or "!!" in line]
    assert not warnings


def test_version_from_a_regular_install(fresh_venv: Path) -> None:
    out = _run(fresh_venv / "bin" / "suspended-runs", "--version")
    assert out.startswith("suspended-runs ") and "unknown" not in out


def test_export_schema_from_a_regular_install(fresh_venv: Path) -> None:
    sdl = _run(fresh_venv / "bin" / "suspended-runs", "export-schema")
    assert sdl == (ROOT / "schema" / "schema.graphql").read_text()


def test_pypi_schema_is_still_pypi_schema(fresh_venv: Path) -> None:
    code = (
        "import schema, suspended_runs.schema as ours\n"
        "from schema import Schema\n"
        "assert Schema(int).validate(3) == 3\n"  # PyPI's API, not ours
        "assert 'site-packages' in schema.__file__\n"
        "assert ours.__file__ != schema.__file__\n"
        "print(schema.__file__)"
    )
    out = _run(fresh_venv / "bin" / "python", "-c", code)
    assert str(fresh_venv) in out
    assert sys.prefix not in out


def test_a_regular_install_carries_the_inbox_page(fresh_venv: Path) -> None:
    """The page's files are package data of `suspended_runs.server.static`."""
    code = "from suspended_runs.server.inbox import STATIC; print(STATIC)"
    static = Path(_run(fresh_venv / "bin" / "python", "-c", code).strip())
    assert str(fresh_venv) in str(static)
    shipped = sorted(path.name for path in static.iterdir())
    assert shipped == sorted(path.name for path in (ROOT / "server" / "static").iterdir())
