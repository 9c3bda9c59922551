"""The structure the code keeps: no import cycles among app/ modules, no app/ module over 500 lines.

Imports are read with ``ast`` (nothing is imported): those at module level and inside functions
count, those under ``if TYPE_CHECKING:`` (annotations only) do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 500


def modules(package: str) -> dict[str, Path]:
    """``package.name`` -> its file, for every module of ``package`` (a folder of the repo)."""
    return {f"{package}.{path.stem}": path for path in sorted((REPO / package).glob("*.py")) if path.stem != "__init__"}


def runtime_imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports when it runs (TYPE_CHECKING blocks aside)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(package + "."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == package:  # from app import fileio
                found.update(f"{package}.{alias.name}" for alias in node.names)
            elif node.module.startswith(package + "."):
                found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_cycle_finder_finds_a_cycle_and_ignores_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_type_checking_imports_do_not_count_and_function_level_ones_do(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from app import fileio\n"
        "if TYPE_CHECKING:\n    from app.session import InfillSession\n"
        "def run():\n    from app.cli import main\n"
    )
    assert runtime_imports(source, "app") == {"app.fileio", "app.cli"}


def test_no_import_cycles_among_app_modules():
    graph = {name: runtime_imports(path, "app") for name, path in modules("app").items()}
    assert cycles(graph) == []


def test_no_app_module_over_500_lines():
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules("app").items()}
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}
