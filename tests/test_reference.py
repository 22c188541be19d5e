"""The reference pages against the code: every setting the server reads is in the full
table (docs/operating.md) and in the README's, whose `PREFIX_*` rows may stand for a
family; every error code the server can answer is in the API reference; and the
documented defaults are the code's."""

from __future__ import annotations

import ast
import re

from suspended_runs.server.settings import Settings
from tests.helpers import ROOT

NAME = re.compile(r"`([A-Z][A-Z0-9_*]+)`")
CODE_LIKE = re.compile(r"[A-Z]+(_[A-Z]+)+")
ERROR_PAGES = ("api.md", "graphql-over-http.md", "subscriptions.md")


def settings() -> list[str]:
    return [name.upper() for name in Settings.model_fields]


def section(text: str, start: str, end: str | None = None) -> str:
    after = text[text.index(start) :]
    return after[: after.index(end)] if end else after


def rows(text: str) -> dict[str, str]:
    """Each row's first-column names (`A`, `B`), with the row's default column."""
    found = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            for name in NAME.findall(cells[0]):
                found[name] = cells[1]
    return found


def test_every_setting_is_in_the_full_table() -> None:
    full = rows(section((ROOT / "docs" / "operating.md").read_text(), "## Configuration in full"))
    assert [name for name in settings() if name not in full] == []
    assert [name for name in full if name not in settings()] == []  # none that is gone


def test_every_setting_is_in_the_readmes_table() -> None:
    readme = (ROOT / "README.md").read_text()
    shown = rows(section(readme, "## Configuration", "## Commands"))
    families = [re.compile(name.replace("*", "[A-Z_]+")) for name in shown if "*" in name]
    missing = [
        name
        for name in settings()
        if name not in shown and not any(f.fullmatch(name) for f in families)
    ]
    assert missing == []


def test_the_documented_plain_defaults_are_the_codes() -> None:
    """A default shown as one literal (`8000`, `mastra`) is the field's default."""
    full = rows(section((ROOT / "docs" / "operating.md").read_text(), "## Configuration in full"))
    wrong = []
    for name, field in Settings.model_fields.items():
        shown = full.get(name.upper(), "")
        literal = re.fullmatch(r"`([^`]*)`", shown)
        default = field.default
        if not literal or isinstance(default, bool):
            continue
        text = literal[1].replace(",", "")
        if isinstance(default, int | float):
            same = re.fullmatch(r"-?[\d.]+", text) is not None and float(text) == default
        else:
            same = not isinstance(default, str) or literal[1] == default
        if not same:
            wrong.append(f"{name.upper()}: shown {literal[1]!r}, default {default!r}")
    assert wrong == []


def error_codes() -> set[str]:
    """The codes the layers that answer requests name: their string literals shaped like
    one, less the settings and module constants they also name."""
    found: set[str] = set()
    exported: set[str] = set()
    for layer in ("server", "resolvers", "schema"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and CODE_LIKE.fullmatch(str(node.value)):
                    found.add(str(node.value))
                if isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    exported |= {t.id for t in targets if isinstance(t, ast.Name)}
    not_codes = set(settings()) | exported
    return {c for c in found if c not in not_codes and not c.startswith(("OTEL_", "SC_"))}


def test_every_error_code_is_in_the_reference() -> None:
    pages = " ".join((ROOT / "docs" / page).read_text() for page in ERROR_PAGES)
    codes = error_codes() | {"FORBIDDEN", "UNAUTHENTICATED"}
    assert len(codes) >= 10, codes  # the scan still finds them
    assert sorted(c for c in codes if f"`{c}`" not in pages) == []
