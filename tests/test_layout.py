"""The structure the design asks for, checked: layers import one way, functions stay short,
and each layer's `__all__` is sorted and names what it imports."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
LAYERS = ("server", "schema", "resolvers", "runtime", "storage")
ALLOWED = {
    "server": {"schema", "resolvers", "runtime", "storage"},
    "schema": {"resolvers", "storage"},
    "resolvers": {"runtime", "storage"},
    "runtime": {"storage"},
    "storage": set(),
}
MAX_FUNCTION_LINES = 40


def _modules(*folders: str) -> list[Path]:
    return sorted(
        p
        for folder in folders
        for p in (ROOT / folder).rglob("*.py")
        if "node_modules" not in p.parts and ".node" not in p.parts
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = set()
    for path in _modules(layer):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "suspended_runs" and len(parts) > 1:
                    other = parts[1]
                    if other in LAYERS and other != layer and other not in ALLOWED[layer]:
                        wrong.add(f"{path.relative_to(ROOT)} imports {other}")
                if parts[0] in LAYERS:
                    wrong.add(f"{path.relative_to(ROOT)} imports top-level {parts[0]}")
    assert not wrong


def test_no_function_outside_scripts_is_longer_than_40_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"
        for path in _modules(*LAYERS, "tests")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert not long


@pytest.mark.parametrize("layer", LAYERS)
def test_all_is_sorted_and_complete(layer: str) -> None:
    tree = ast.parse((ROOT / layer / "__init__.py").read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    [exported] = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    ]
    assert set(exported) == imported
    assert exported == sorted(exported, key=lambda name: (not name.isupper(), name))


@functools.cache
def _parsed_layers() -> tuple[tuple[Path, ast.Module], ...]:
    """Each module of the five layers, parsed once for every check below."""
    return tuple((path, ast.parse(path.read_text())) for path in _modules(*LAYERS))


def _class_bases() -> dict[str, set[str]]:
    bases: dict[str, set[str]] = {}
    for _path, tree in _parsed_layers():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names = {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
                bases[node.name] = names
    return bases


def _exception_classes() -> set[str]:
    """Every class in the five layers that derives, within them, from an exception."""
    bases = _class_bases()
    errors: set[str] = set()
    roots = {"Exception", "ValueError", "GraphQLError", "HTTPException", "JSONDecodeError"}
    while True:
        more = {n for n, b in bases.items() if b & (roots | errors)} - errors
        if not more:
            return errors
        errors |= more


def test_the_error_tree_in_the_design_names_every_error_class() -> None:
    design = (ROOT / "docs" / "design.md").read_text()
    tree = design.split("## Errors", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    drawn = {line.split("── ", 1)[1].split()[0] for line in tree.splitlines() if "── " in line}
    assert drawn - {"GraphQLError", "HTTPException", "JSONDecodeError"} == _exception_classes()


def test_each_error_is_defined_in_a_layer_that_raises_it() -> None:
    """An error lives in the lowest layer that raises it or one of its subclasses."""
    errors = _exception_classes()
    defined = {
        node.name: path.relative_to(ROOT).parts[0]
        for path, tree in _parsed_layers()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name in errors
    }
    raised: dict[str, set[str]] = {}
    for path, tree in _parsed_layers():
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name) and func.id in defined:
                    raised.setdefault(func.id, set()).add(path.relative_to(ROOT).parts[0])
    bases = _class_bases()
    for _ in defined:  # a subclass's layers reach every ancestor, however deep
        for name, layers in list(raised.items()):
            for base in bases.get(name, set()) & set(defined):
                raised.setdefault(base, set()).update(layers)
    order = ("storage", "runtime", "resolvers", "schema", "server")
    misplaced = {
        name: (defined[name], sorted(layers))
        for name, layers in raised.items()
        if min(order.index(layer) for layer in layers) != order.index(defined[name])
    }
    assert not misplaced


MAX_MODULE_LINES = 400
MAX_PUBLIC_METHODS = 15


def _over_the_limits() -> set[str]:
    over = set()
    for path in sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*")):
        if path.suffix in (".py", ".js") and len(path.read_text().splitlines()) > MAX_MODULE_LINES:
            over.add(str(path.relative_to(ROOT)))
    for _path, tree in _parsed_layers():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                public = [
                    f
                    for f in node.body
                    if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not f.name.startswith("_")
                ]
                if len(public) > MAX_PUBLIC_METHODS:
                    over.add(node.name)
    return over


def test_no_module_is_over_400_lines_and_no_class_has_over_15_public_methods() -> None:
    assert not _over_the_limits()


INDEX_WRITES = {"update_one", "update_many", "bulk_write", "insert_one", "insert_many"}


def test_every_write_to_the_run_index_goes_through_its_tracked_writes() -> None:
    """A write straight to the collection would give no new version: caches, ETags and
    counts would miss it. Only `writes.py` writes to it (and retention's deletion of
    finished entries, which counts of suspended runs need not see)."""
    direct = []
    for path in sorted((ROOT / "storage" / "index").glob("*.py")):
        if path.name == "writes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in INDEX_WRITES
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "collection"
            ):
                direct.append(f"{path.name}:{node.lineno}")
    assert not direct


TIMING = re.compile(r"\b\d+(\.\d+)?\s?(s|ms|µs|seconds|minutes|hours)\b")
"""A measured time ("2.7 s", "30 ms"): it goes stale; docs/benchmarks.md keeps figures."""


def test_no_docstring_or_comment_quotes_a_timing() -> None:
    quoted = []
    for path, tree in _parsed_layers():
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                text = str(node.value.value)
                quoted += [f"{path}:{node.lineno} {m[0]}" for m in TIMING.finditer(text)]
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "#" in line and (found := TIMING.search(line.split("#", 1)[1])):
                quoted.append(f"{path}:{number} {found[0]}")
    assert not quoted


def test_tests_mirror_the_layers_and_import_no_other_tests_helpers() -> None:
    """A test of `storage/index/pages.py` is `tests/storage/index/test_pages.py`: each test
    module beneath a layer's folder names a module or package of that layer. Shared helpers
    live in builders.py, helpers.py and conftest.py, never in another test module."""
    strays, borrowed = [], []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        relative = path.relative_to(ROOT / "tests")
        if len(relative.parts) > 1:
            folder = ROOT.joinpath(*relative.parts[:-1])
            subject = path.stem.removeprefix("test_")
            if not ((folder / f"{subject}.py").exists() or (folder / subject).is_dir()):
                strays.append(str(relative))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and ".test_" in f".{node.module or ''}":
                borrowed.append(f"{relative}: {node.module}")
    assert not strays and not borrowed, (strays, borrowed)
