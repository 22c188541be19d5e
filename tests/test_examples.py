"""Every shell example in README.md and docs/ runs, against a real server this test starts
(`suspended-runs serve` on its own embedded MongoDB, seeded as `scripts/seed` seeds), and
answers what the documentation shows, ids and times masked.

A fence is a shell example when its language is `sh`, `bash` or `console`; the output
shown for it is the `json` or `text` fence right after it (nothing but prose between).
The fences of one page run in order in one shell state: a variable one sets (`RUN=...`)
is there for the next. An id the documentation shows in an answer (a new run's id) stands,
in the fences after it, for the id the server really answered. The only way out is a
comment on the line before the fence: `<!-- not run: why -->` (the set-up commands, or
what needs a replica set).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Server

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("sh", "bash", "console")
OUTPUTS = ("json", "text")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
SHOWN_URL = "http://127.0.0.1:8000"
SHOWN_WS_URL = "ws://127.0.0.1:8000"
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MASKS = [
    (UUID, "<id>"),
    (re.compile(r"pyd_ai_[0-9a-f]{32}"), "<tool-call-id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
]
ASSIGNED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=", re.M)
SETTLE_SECONDS = 60.0
"""How long a read whose answer differs is asked again: the follower indexes a seeded
snapshot within a second, but applies the README's 1,000 copies one change at a time, and
a conditional GET answers 304 only once the index stops changing."""


@dataclass
class Example:
    page: Path
    line: int
    script: str
    shown: str | None
    shown_lang: str | None
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The shell fences of `page`, each with the output fence that follows it, if any."""
    text = page.read_text()
    fences = list(FENCE.finditer(text))
    found = []
    for i, fence in enumerate(fences):
        if fence.group("lang") not in SHELLS:
            continue
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        shown = shown_lang = None
        following = fences[i + 1] if i + 1 < len(fences) else None
        if following is not None and following.group("lang") in OUTPUTS:
            between = text[fence.end() : following.start()]
            if "```" not in between:
                shown, shown_lang = _dedent(following), following.group("lang")
        line = text[: fence.start()].count("\n") + 1
        found.append(Example(page, line, _dedent(fence), shown, shown_lang, marker and marker[1]))
    return found


def _dedent(fence: re.Match[str]) -> str:
    indent = len(fence.group("indent"))
    return "".join(line[indent:] for line in fence.group("body").splitlines(keepends=True))


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
        state = self.workdir / "state.sh"
        names = sorted(set(ASSIGNED.findall(script)))
        keep = (
            f"declare -p {' '.join(names)} > {state}.new && mv {state}.new {state}" if names else ""
        )
        whole = f"[ -f {state} ] && source {state}\n{script}\n{keep}\n"
        env = {**os.environ, "DATA_DIR": str(self.server.env["DATA_DIR"]), "MONGODB_URI": ""}
        return subprocess.run(
            ["bash", "-c", whole], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )


def json_documents(text: str) -> list[Any]:
    """The JSON documents printed one after another (curl prints no newline after one)."""
    decoder, at = json.JSONDecoder(), 0
    found: list[Any] = []
    while (at := _skip_space(text, at)) < len(text):
        try:
            doc, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return found
        found.append(doc)
    return found


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def mask(value: str) -> str:
    for pattern, placeholder in MASKS:
        value = pattern.sub(placeholder, value)
    return value


def differences(shown: Any, actual: Any, ids: dict[str, str], path: str = "") -> list[str]:
    """Where `actual` differs from `shown` (`"..."` stands for any value); each id shown
    where `actual` has another is noted in `ids`, for the fences after."""
    if shown == "...":
        return []
    if isinstance(shown, dict) and isinstance(actual, dict):
        if shown.keys() != actual.keys():
            return [f"{path}: keys {sorted(shown)} != {sorted(actual)}"]
        return [d for k in shown for d in differences(shown[k], actual[k], ids, f"{path}.{k}")]
    if isinstance(shown, list) and isinstance(actual, list):
        if len(shown) != len(actual):
            return [f"{path}: {len(shown)} items shown, {len(actual)} answered"]
        return [
            d
            for i, pair in enumerate(zip(shown, actual, strict=True))
            for d in differences(*pair, ids, f"{path}[{i}]")
        ]
    if isinstance(shown, str) and isinstance(actual, str):
        if mask(shown) != mask(actual):
            return [f"{path}: {shown!r} != {actual!r}"]
        for seen, real in zip(UUID.findall(shown), UUID.findall(actual), strict=True):
            if seen != real:
                ids.setdefault(seen, real)
        return []
    return [] if shown == actual else [f"{path}: {shown!r} != {actual!r}"]


def check(
    example: Example, result: subprocess.CompletedProcess[str], ids: dict[str, str]
) -> list[str]:
    """What is wrong with one run of `example`: it failed, or answered unlike the page."""
    if result.returncode != 0:
        return [f"exit {result.returncode}: {result.stderr.strip()[-2000:]}"]
    if example.shown is None:
        return []
    if example.shown_lang == "text":
        shown, actual = example.shown.strip(), result.stdout.strip()
        return [] if mask(shown) == mask(actual) else [f"{shown!r} != {actual!r}"]
    answers = json_documents(result.stdout)
    if not answers:
        return [f"no JSON answer: {result.stdout[-2000:]!r}"]
    return differences(json.loads(example.shown), answers[-1], ids)


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
