"""The package layout is the architecture: spec → sandbox → properties → grading → reports → commands.

Each sub-package may import only from the layers below it (and from
``grader.errors``, the one error root); the reference imports nothing from the
grader; no module imports itself back through a cycle; no module is longer than
the size we keep files to.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.spec.limits import ONE_THREAD

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "grader"
#: Each layer, and the layers (besides itself, grader.errors and the reference package) it may import.
ALLOWED = {
    "spec": set(),
    "sandbox": {"spec"},
    "properties": {"spec", "sandbox"},
    "grading": {"spec", "sandbox", "properties"},
    "reports": {"spec", "grading"},
    "animation": {"spec", "sandbox", "properties", "reports"},
    "commands": {"spec", "sandbox", "properties", "grading", "reports", "animation"},
}
MAX_LINES = 400
#: Lines of a function's body (without its docstring), at most.
MAX_FUNCTION_LINES = 50
#: Longer functions we keep, and why.
LONG_FUNCTIONS = {
    # The engine's compiled kernels: one event loop and one prediction each; splitting them adds calls and
    # array passing to the hot path of every collision (benchmarks/engine.py).
    ("reference/engine_core.py", "run"), ("reference/engine_core.py", "predict"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions (``from a import b`` counts a.b when b is one)."""
    found: set[str] = set()
    known = {module_name(p) for p in (ROOT / "grader").rglob("*.py")} | {module_name(p) for p in
                                                                         (ROOT / "reference").rglob("*.py")}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known}
    return {name for name in found if name.split(".")[0] in ("grader", "reference")}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "grader" and len(parts) > 1 and parts[1] in ALLOWED else None


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_from_layers_below(module):
    own = layer(module)
    if own is None:  # grader, grader.errors, grader.__main__
        return
    wrong = sorted(name for name in imports(MODULES[module])
                   if layer(name) not in (None, own, *ALLOWED[own]))
    assert not wrong, f"{module} (layer {own}) imports {wrong}; it may import only from {sorted(ALLOWED[own])}"


def test_the_reference_imports_nothing_from_the_grader():
    for path in sorted((ROOT / "reference").rglob("*.py")):
        assert not [n for n in imports(path) if n.startswith("grader")], path


def test_no_import_cycles():
    graph = {m: {n for n in imports(p) if n in MODULES} - {m} for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1 and not m.startswith(n + "."):  # a package's __init__ is not a cycle
                raise AssertionError("import cycle: " + " -> ".join([*trail[trail.index(n):], m, n]) if n in trail
                                     else f"import cycle through {m} -> {n}")
            if n not in state:
                visit(n, [*trail, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


@pytest.mark.parametrize("path", sorted([*PACKAGE.rglob("*.py"), *(ROOT / "reference").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_longer_than_we_keep_them(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


@pytest.mark.parametrize("package", sorted(p for p in PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.parent.name))
def test_every_package_says_what_it_owns(package):
    doc = ast.get_docstring(ast.parse(package.read_text()))
    assert doc and len(doc) > 80, f"{package} needs a docstring: what it owns and what it may import"


def test_importing_the_grader_changes_nothing_global():
    """No side effects at import: numpy's print options, Hypothesis's internals, the signal handlers and the
    environment stay (the commands set theirs in cli.main)."""
    code = """
import importlib, os, pkgutil, signal, sys
import numpy as np
from hypothesis.internal.conjecture import providers
before = (np.get_printoptions(), providers._get_local_constants, signal.getsignal(signal.SIGINT), sys.getrecursionlimit(),
          dict(os.environ))
import grader
for m in pkgutil.walk_packages(grader.__path__, "grader."):
    if not m.name.endswith("__main__") and ".courses" not in m.name:
        importlib.import_module(m.name)
after = (np.get_printoptions(), providers._get_local_constants, signal.getsignal(signal.SIGINT), sys.getrecursionlimit(),
         dict(os.environ))
assert before == after, (before, after)
print("unchanged", len(sys.modules))
"""
    # Without the variables the commands set (this test's process may have imported something that set them).
    clean = {name: value for name, value in os.environ.items() if name not in ONE_THREAD}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=clean)
    assert done.returncode == 0 and "unchanged" in done.stdout, done.stderr[-2000:]


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function without its docstring (argument lists and docstrings are not logic)."""
    first = function.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    start = function.body[1].lineno if docstring and len(function.body) > 1 else first.lineno
    return (function.end_lineno or start) - start + 1


@pytest.mark.parametrize("path", sorted([*PACKAGE.rglob("*.py"), *(ROOT / "reference").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_longer_than_we_keep_them(path):
    long = [f"{node.name} ({_body_lines(node)} lines)" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > MAX_FUNCTION_LINES
            and (str(path.relative_to(ROOT)), node.name) not in LONG_FUNCTIONS]
    assert not long, f"{path.relative_to(ROOT)}: split {', '.join(long)}"
