"""The code examples of README.md and docs/: a page's fences, and an answer compared with
the one the page shows (ids and times masked). Read by tests/test_examples.py (every
page's examples against one server) and tests/test_tutorials.py (a tutorial's steps)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import ROOT

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
