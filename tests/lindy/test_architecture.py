"""The shape issue 10 left, counted the way it was measured: every import, the ones inside
functions too. (import-linter in .ci/run holds the app layers; this holds the rest.)"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

from tests.imports import imports_of

ROOT = Path(__file__).resolve().parents[2]
APPS = ("lindy", "router", "memory", "hydration", "validator", "channels_app", "agent")
COMPOSITION_ROOT = {"lindy.settings", "lindy.urls", "lindy.api_root", "lindy.celery", "lindy.asgi", "lindy.wsgi"}


def _modules() -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        by_line: dict[int, set[str]] = defaultdict(set)
        for line, target in imports_of(path.read_text(), package):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                by_line[line].add(target)
        for targets in by_line.values():
            # `from pkg import mod` imports the module mod, not (for this count) pkg's own code.
            graph[name] |= {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_between_modules():
    assert _cycles(_graph()) == []


def test_no_circle_between_packages_and_the_core_imports_no_app():
    packages: dict[str, set[str]] = defaultdict(set)
    core_imports = []
    for source, targets in _graph().items():
        for target in targets:
            a, b = source.split(".")[0], target.split(".")[0]
            if a != b and source not in COMPOSITION_ROOT:
                packages[a].add(b)
                if a == "lindy":
                    core_imports.append(f"{source} -> {target}")
    assert core_imports == []
    assert _cycles(packages) == []


def test_no_runtime_files_are_tracked():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (an exported tree): nothing can be tracked
        return
    runtime = [p for p in tracked if p.split("/")[0] in {"control", "var"} or p.endswith((".sqlite3", ".pyc"))]
    assert runtime == []


MAX_MODULE_LINES = 500
# Product code: every module but the tests and the tools that drive the product from outside
# (bench/, loadtest/), the migrations (generated) and the virtualenv.
NOT_PRODUCT = {".venv", ".git", "tests", "bench", "loadtest", "migrations", "var", "node_modules"}


def test_no_product_module_is_over_500_lines():
    """Issue 27: a module over 500 lines does more than one job; split it along a real seam (a
    package, or a module of its own for one part)."""
    long = {}
    for path in ROOT.rglob("*.py"):
        if NOT_PRODUCT & set(path.relative_to(ROOT).parts):
            continue
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            long[str(path.relative_to(ROOT))] = lines
    assert long == {}


def test_no_file_keeps_a_merge_conflict():
    """A merge once left its conflict markers in a template, which rendered both sides as the page;
    the page's own tests passed, as each side held what they looked for."""
    skipped = {".venv", ".git", "var", "node_modules", "__pycache__", ".pytest_cache"}
    marker = re.compile(r"^(<{7}|>{7}) \S", re.M)
    kept = []
    for path in ROOT.rglob("*"):
        if not path.is_file() or skipped & set(path.relative_to(ROOT).parts) or path.suffix in {".png", ".pyc", ".gz"}:
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if marker.search(text):
            kept.append(str(path.relative_to(ROOT)))
    assert not kept
