"""`scripts/demo`, run as a newcomer runs it: runs of all three runtimes wait, and one of
each is decided through the API and in the inbox, in Chromium."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from suspended_runs.server.embedded_mongodb import free_port
from tests.helpers import ROOT, wait_until_serving

RUNS = "{ suspendedRuns(perPage: 50) { runs { runId agentId runtime continuable } } }"


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo") / "demo.log"


@pytest.fixture(scope="module")
def demo(demo_log: Path, peer_node: Any) -> Iterator[str]:
    """`scripts/demo` on a free port (its Mastra server installed by scripts/test)."""
    port = free_port()
    log = demo_log
    with log.open("ab") as out:
        process = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "demo")],
            env={**os.environ, "PORT": str(port)},
            stdout=out,
            stderr=out,
            start_new_session=True,  # Ctrl-C's signal reaches the whole group
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(f"{url}/readyz", alive=lambda: process.poll() is None, log=log.read_text)
        deadline = time.monotonic() + 60
        while "ready: open" not in log.read_text():  # its Python runs start once it serves
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(60)


def waiting(url: str) -> list[dict[str, Any]]:
    body = httpx.post(f"{url}/graphql", json={"query": RUNS}, timeout=30).json()
    runs: list[dict[str, Any]] = body["data"]["suspendedRuns"]["runs"]
    return runs


def test_the_demo_has_runs_of_every_runtime_that_can_be_decided(demo: str) -> None:
    runs = waiting(demo)
    assert {r["runtime"] for r in runs} == {"PYTHON", "MASTRA", "LANGGRAPH"}, runs
    assert all(r["continuable"] for r in runs)


def test_suspended_runs_check_passes_on_the_demo(demo: str, demo_log: Path) -> None:
    said = next(line for line in demo_log.read_text().splitlines() if "check it: " in line)
    command = said.split("check it: ", 1)[1]
    result = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok    follower: " in result.stdout and "ok    LangGraph: " in result.stdout
    assert result.stdout.splitlines()[-1] == "nothing failed"


def test_one_run_of_each_runtime_is_decided_in_the_inbox(demo: str, browser: Browser) -> None:
    page = browser.new_page()
    page.goto(f"{demo}/")
    for answered, runtime in enumerate(("Python", "Mastra", "LangGraph"), start=1):
        approve = page.locator("button", has_text="Approve")
        badge = page.locator(f".badge:text-is('{runtime}')")
        card = page.locator("article.run").filter(has=badge).filter(has=approve).first
        expect(card).to_be_visible(timeout=15_000)
        card.locator("button", has_text="Approve").first.click()
        said = page.locator("#answers li")
        expect(said).to_have_count(answered, timeout=20_000)
        expect(said.first).to_contain_text("Approved")  # the newest first
    page.close()
