"""Every shell example in README.md and docs/ runs, against a real server this test starts
(`suspended-runs serve` on its own embedded MongoDB, seeded as `scripts/seed` seeds), and
answers what the documentation shows, ids and times masked.

A fence is a shell example when its language is `sh`, `bash` or `console`; the output
shown for it is the `json` or `text` fence right after it (nothing but prose between).
Each fence runs in a fresh shell in the checkout (as a reader pastes one block into a
terminal there): what it needs, it sets. An id the documentation shows in an answer (a
new run's id) stands, in the fences of that page after it, for the id the server really
answered. The only way out is a
comment on the line before the fence: `<!-- not run: why -->` (the set-up commands, or
what needs a replica set).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.doc_examples import FENCE, SHOWN_URL, SHOWN_WS_URL, Example, check, examples
from tests.helpers import ROOT, Server

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)#\s]*)(#[^)\s]*)?\)")
HEADING = re.compile(r"^#+ (.+)$", re.M)
SETTLE_SECONDS = 60.0
"""How long a read whose answer differs is asked again: the follower indexes a seeded
snapshot within a second, but applies the README's 1,000 copies one change at a time, and
a conditional GET answers 304 only once the index stops changing."""


@dataclass
class Shell:
    """One page's shell state: its variables, and the ids its answers stood for."""

    server: Server
    workdir: Path
    ids: dict[str, str] = field(default_factory=dict)

    def run(self, example: Example) -> subprocess.CompletedProcess[str]:
        script = example.script.replace(SHOWN_URL, self.server.url)
        script = script.replace(SHOWN_WS_URL, self.server.url.replace("http", "ws", 1))
        for shown, actual in self.ids.items():
            script = script.replace(shown, actual)
        env = {**os.environ, "DATA_DIR": str(self.server.env["DATA_DIR"]), "MONGODB_URI": ""}
        return subprocess.run(  # a fresh shell: a reader copies one block, not the page
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`suspended-runs serve` with its defaults (the demo agents, no keys), as `scripts/serve`,
    with the Mastra fixture documents seeded as `scripts/seed` seeds them."""
    server = Server(tmp_path_factory.mktemp("examples") / "data")
    server.start()
    try:
        env = {**os.environ, "DATA_DIR": server.env["DATA_DIR"], "MONGODB_URI": ""}
        seeded = subprocess.run(
            ["scripts/seed"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert seeded.returncode == 0, seeded.stderr
        yield server
    finally:
        server.stop()


def test_the_pages_have_examples_and_every_page_is_read() -> None:
    """A fence this test does not recognise would be left out silently."""
    for page in PAGES:
        for fence in FENCE.finditer(page.read_text()):
            assert fence.group("lang"), f"{page.name}: a fence without a language"
    assert sum(len(examples(page)) for page in PAGES) >= 15


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_example_runs_and_answers_as_shown(
    page: Path, served: Server, tmp_path: Path
) -> None:
    shell = Shell(served, tmp_path)
    for example in examples(page):
        if example.not_run:
            continue
        reads_only = "mutation" not in example.script
        deadline = time.monotonic() + (SETTLE_SECONDS if reads_only else 0.0)
        while True:
            ids = dict(shell.ids)
            problems = check(example, shell.run(example), ids)
            if not problems or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert not problems, f"{example}: " + "; ".join(problems)
        shell.ids = ids


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings."""
    text = FENCE.sub("", page.read_text())
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in HEADING.findall(text)
    }


@pytest.mark.parametrize("page", [*PAGES, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_every_link_between_pages_leads_somewhere(page: Path) -> None:
    broken = []
    for target, anchor in LINK.findall(FENCE.sub("", page.read_text())):
        where = (page.parent / target) if target else page
        if not where.exists():
            broken.append(target)
        elif anchor and where.suffix == ".md" and anchor[1:] not in anchors(where):
            broken.append(f"{target}{anchor}")
    assert not broken, broken


def test_no_page_but_the_changelog_is_organised_by_date() -> None:
    """Pages say what is true now; how it changed is CHANGELOG.md's."""
    dated = [
        f"{page.relative_to(ROOT)}: {heading}"
        for page in PAGES
        for heading in HEADING.findall(FENCE.sub("", page.read_text()))
        if re.search(r"\d{4}-\d{2}-\d{2}", heading)
    ]
    assert not dated
