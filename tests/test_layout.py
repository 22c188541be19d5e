"""The structure the design asks for, checked: layers import one way, functions stay short,
and each layer's `__all__` is sorted and names what it imports."""

from __future__ import annotations

import ast
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
