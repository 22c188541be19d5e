"""The tutorials (docs/tutorials/), followed as a reader follows one: its files copied into
a folder of their own, each step's shell block run in order from there, in a fresh shell,
the servers a step starts left running in the background, and every answer compared with
the one the page shows (ids and times masked; an id the page shows stands, in the steps
after, for the one really answered).

A step is a fence marked `<!-- not run: a tutorial step -->` (tests/test_examples.py runs
the other pages' examples against a server of its own); a step that starts a server says
`in the background, ready at URL`, and the next step waits for that URL to answer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from suspended_runs.server.embedded_mongodb import free_port
from tests.doc_examples import Example, check, examples
from tests.helpers import ROOT, wait_until_serving
from tests.mastra_peer import PEER_DIR

TUTORIALS = ROOT / "docs" / "tutorials"
STEP = "a tutorial step"
READY_AT = re.compile(r"in the background, ready at (\S+)")
SETTLE_SECONDS = 30.0
"""How long a read that answers unlike the page is asked again (the follower lists a
write within a second; a Mastra run is written as the stream ends)."""


@dataclass
class Reader:
    """One reader following one tutorial: a folder, what the page shows swapped for what
    this test uses (ports, paths, the database), and the servers its steps started."""

    folder: Path
    swaps: dict[str, str]
    env: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def follow(self, page: Path) -> int:
        steps = [e for e in examples(page) if (e.not_run or "").startswith(STEP)]
        for step in steps:
            ready = READY_AT.search(step.not_run or "")
            if ready:
                self._start(step, self._swapped(ready[1]))
            else:
                self._run(step)
        return len(steps)

    def stop(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)

    def _swapped(self, text: str) -> str:
        for shown, used in {**self.swaps, **self.ids}.items():
            text = text.replace(shown, used)
        return text

    def _start(self, step: Example, ready: str) -> None:
        log = self.folder / f"step-{step.line}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                ["bash", "-c", self._swapped(step.script)],
                cwd=self.folder,
                env=self.env,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self.started.append(process)
        wait_until_serving(
            ready, alive=lambda: process.poll() is None, log=log.read_text, within=300
        )

    def _run(self, step: Example) -> None:
        deadline = time.monotonic() + (0.0 if "mutation" in step.script else SETTLE_SECONDS)
        while True:
            ids = dict(self.ids)
            result = subprocess.run(
                ["bash", "-c", self._swapped(step.script)], cwd=self.folder, env=self.env,
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            problems = check(step, result, ids)
            if not problems or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert not problems, f"{step}: " + "; ".join(problems)
        self.ids = ids


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[Reader]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(PORT=str(port), DATA_DIR=str(tmp_path / "data"))
    swaps = {"~/suspended-runs": str(ROOT), "127.0.0.1:8000": f"127.0.0.1:{port}"}
    reader = Reader(tmp_path, swaps, env)
    try:
        yield reader
    finally:
        reader.stop()


def test_your_own_python_agent(reader: Reader) -> None:
    shutil.copy(TUTORIALS / "my_agents.py", reader.folder)
    page = TUTORIALS / "python-agent.md"
    assert (TUTORIALS / "my_agents.py").read_text().strip() in page.read_text()
    assert reader.follow(page) == 3


def test_connect_your_mastra_app(reader: Reader, peer_node: Path) -> None:
    shutil.copy(TUTORIALS / "mastra-app.mjs", reader.folder)
    (reader.folder / "node_modules").symlink_to(PEER_DIR / "node_modules")
    page = (TUTORIALS / "connect-mastra.md").read_text()
    versions = json.loads((PEER_DIR / "package.json").read_text())["dependencies"]
    assert all(f"{name}@{version}" in page for name, version in versions.items())
    reader.swaps |= {"27017": str(free_port()), "4111": str(free_port())}
    reader.env["PATH"] = f"{peer_node.parent}:{reader.env['PATH']}"
    assert reader.follow(TUTORIALS / "connect-mastra.md") == 5


def test_connect_your_langgraph_app(reader: Reader) -> None:
    shutil.copy(TUTORIALS / "langgraph_app.py", reader.folder)
    (reader.folder / ".venv").symlink_to(ROOT / ".venv")
    reader.swaps["27017"] = str(free_port())
    assert reader.follow(TUTORIALS / "connect-langgraph.md") == 4


def test_your_first_decision(reader: Reader, peer_node: Path) -> None:
    assert reader.follow(TUTORIALS / "first-decision.md") == 5
