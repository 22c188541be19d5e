"""The distribution installs as `suspended_runs.<layer>`, beside PyPI's `schema`, and its
command works from a regular (not editable) install in a fresh virtual environment, its
dependencies resolved by the pip that Python 3.11 bundles (no upgrade: what a user has).
These tests reach the package index."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import run_away

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OLDEST_PIP = "23.2.1"
"""The pip that Python 3.11's venv bundles: the oldest a user installs with."""
EXTRAS = ["", *PROJECT["optional-dependencies"]]
"""What the oldest pip resolves: the project alone, and with each of its extras."""


@pytest.fixture(scope="module")
def oldest_pip(source: Path) -> Path:
    """The python of a venv made by Python 3.11's `venv`, with pip OLDEST_PIP in it."""
    python311 = sys.executable if sys.version_info[:2] == (3, 11) else shutil.which("python3.11")
    if python311 is None:
        pytest.skip("python3.11 is not on PATH: its bundled pip is what this checks")
    env = source.parent / "venv-oldest-pip"
    run_away(python311, "-m", "venv", env)
    python = env / "bin" / "python"
    run_away(python, "-m", "pip", "install", "--quiet", f"pip=={OLDEST_PIP}")
    assert run_away(python, "-m", "pip", "--version").startswith(f"pip {OLDEST_PIP} ")
    return python


def test_a_regular_install_builds_without_a_warning(fresh_venv: Path) -> None:
    build = (fresh_venv.parent / "build.log").read_text()
    warnings = [line for line in build.splitlines() if "Warning" in line or "!!" in line]
    assert not warnings


def test_version_from_a_regular_install(fresh_venv: Path) -> None:
    out = run_away(fresh_venv / "bin" / "suspended-runs", "--version")
    assert out.startswith("suspended-runs ") and "unknown" not in out


def test_export_schema_from_a_regular_install(fresh_venv: Path) -> None:
    sdl = run_away(fresh_venv / "bin" / "suspended-runs", "export-schema")
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
    out = run_away(fresh_venv / "bin" / "python", "-c", code)
    assert str(fresh_venv) in out
    assert sys.prefix not in out


def test_a_regular_install_carries_the_inbox_page(fresh_venv: Path) -> None:
    """The page's files are package data of `suspended_runs.server.static`."""
    code = "from suspended_runs.server.inbox import STATIC; print(STATIC)"
    static = Path(run_away(fresh_venv / "bin" / "python", "-c", code).strip())
    assert str(fresh_venv) in str(static)
    shipped = sorted(path.name for path in static.iterdir())
    assert shipped == sorted(path.name for path in (ROOT / "server" / "static").iterdir())


@pytest.mark.parametrize("extra", EXTRAS, ids=lambda extra: extra or "core")
def test_the_oldest_pip_resolves_the_dependencies(
    oldest_pip: Path, source: Path, extra: str, tmp_path: Path
) -> None:
    """`pip install .` (or `.[extra]`) with the pip a user has: resolved, nothing built."""
    report = tmp_path / "report.json"
    wanted = f"{source}[{extra}]" if extra else str(source)
    pip = (oldest_pip, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet")
    run_away(*pip, "--report", report, wanted)
    resolved = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    asked = PROJECT["dependencies"] + PROJECT["optional-dependencies"].get(extra, [])
    for requirement in map(Requirement, asked):
        if requirement.marker is None or requirement.marker.evaluate():
            name = canonicalize_name(requirement.name)
            assert requirement.specifier.contains(resolved[name], prereleases=True), name
