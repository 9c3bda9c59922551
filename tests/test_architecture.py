"""The layering rules, checked from the source: imports are read with ``ast``, never executed.

Imports under ``if TYPE_CHECKING:`` are for type checkers only and do not count. Function-level
(lazy) imports do count: a cycle through one still ties the modules together.
"""

from __future__ import annotations

import ast
import fnmatch
import graphlib
import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["sfumato.model", "sfumato.app"]
# installed name -> the repo folder it is installed from (pyproject.toml's package-dir)
FOLDERS = {"sfumato.model": "model", "sfumato.app": "app"}
MAX_LINES = 500
TRANSFORMERS_ADAPTER = "sfumato.model.diffusion_gemma_library"
ARCHITECTURE = "docs/architecture.md"
STANDARD_PRIVATE = {"os._exit"}  # the standard library's private names the project may call
SUBMODULES = ("encoder", "decoder")  # ``model.model.encoder``: a transformers model's own layout


def modules(package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` and its subpackages."""
    folder = REPO / FOLDERS.get(package, package)
    found = {}
    for path in sorted(folder.rglob("*.py")):
        parts = (package, *path.relative_to(folder).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def within(name: str, package: str) -> bool:
    """Whether dotted ``name`` is ``package`` or lies in it."""
    return name == package or name.startswith(package + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(node: ast.AST, in_functions: bool = True):
    """Every node under ``node``, leaving out the bodies of ``if TYPE_CHECKING:`` (and of functions
    unless ``in_functions``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other, in_functions)
            continue
        if not in_functions and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield child
        yield from _runtime_nodes(child, in_functions)


def imported_names(name: str, path: Path, in_functions: bool = True) -> set[str]:
    """Dotted names module ``name`` imports at run time: ``from a.b import c`` gives ``a.b.c``.
    Without ``in_functions``, only those imported when the module itself is imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in _runtime_nodes(tree, in_functions):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies in (``a.b.c`` -> ``a.b`` for a class c)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a package's ``__init__`` counts as one)."""
    known = modules(package)
    graph = {}
    for name, path in known.items():
        targets = {resolve(imported, known) for imported in imported_names(name, path)}
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order), or None when it has none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def long_modules(package: str, limit: int = MAX_LINES) -> dict[str, int]:
    """Modules of ``package`` longer than ``limit`` lines, with their lengths."""
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules(package).items()}
    return {name: lines for name, lines in lengths.items() if lines > limit}


def unresolved_imports(package: str) -> set[str]:
    """Imports of ``package``'s own modules that name no module, no module's attribute and no name
    the package binds in this checkout (an editable install of another checkout would otherwise
    answer them, hiding a missed move)."""
    known = modules(package)
    missing = set()
    for name, path in known.items():
        for imported in imported_names(name, path):
            if not within(imported, package) or imported in known:
                continue
            parent, _, leaf = imported.rpartition(".")
            if parent in known and (not _is_package(known[parent]) or leaf in _bound_names(known[parent])):
                continue
            missing.add(f"{name}: {imported}")
    return missing


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _bound_names(path: Path) -> set[str]:
    """Names an ``__init__.py`` defines or imports at its top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def private_calls(package: str, prefix: str) -> dict[str, set[str]]:
    """Module -> the attributes starting with ``prefix`` it calls (``model._prepare_sampler(...)``)."""
    found = {}
    for name, path in modules(package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        called = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith(prefix)
        }
        if called:
            found[name] = called
    return found


def private_reaches(package: str, defined: set[str]) -> dict[str, set[str]]:
    """Module -> what it reaches of another library's internals: private attributes that no name
    in ``defined`` explains (``model._from_config``), and a model's ``model.encoder`` /
    ``model.decoder`` submodules."""
    found = {}
    for name, path in modules(package).items():
        reached = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            dotted = f"{node.value.id}.{node.attr}" if isinstance(node.value, ast.Name) else node.attr
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and node.attr not in defined and dotted not in STANDARD_PRIVATE:
                reached.add(node.attr)
            elif node.attr in SUBMODULES and isinstance(node.value, ast.Attribute) and node.value.attr == "model":
                reached.add(f"model.{node.attr}")
        if reached:
            found[name] = reached
    return found


def defined_names(*packages: str) -> set[str]:
    """Every name the packages define or bind: functions, classes, assigned names and attributes,
    arguments, imports."""
    names = set()
    for package in packages:
        for path in modules(package).values():
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.arg):
                    names.add(node.arg)
                elif isinstance(node, ast.alias):
                    names.add((node.asname or node.name).split(".")[-1])
    return names


def documented_modules(label: str) -> set[str]:
    """The modules the architecture page lists on its line that starts ``- {label}:``."""
    text = (REPO / ARCHITECTURE).read_text(encoding="utf-8")
    (line,) = [line for line in text.splitlines() if line.startswith(f"- {label}:")]
    return {"sfumato." + path.removesuffix(".py").replace("/", ".") for path in re.findall(r"`([\w/]+\.py)`", line)}


def app_imports_of_model(in_functions: bool) -> dict[str, set[str]]:
    """Module of ``model`` -> the app's modules that import it (when imported, or also inside functions)."""
    known = modules("sfumato.model")
    users: dict[str, set[str]] = {}
    for name, path in modules("sfumato.app").items():
        for imported in imported_names(name, path, in_functions):
            if within(imported, "sfumato.model"):
                users.setdefault(resolve(imported, known), set()).add(name)
    return users


def loaded_with(names: set[str], package: str) -> set[str]:
    """``names`` and every module of ``package`` they load when imported, transitively."""
    known = modules(package)
    loaded, waiting = set(), list(names)
    while waiting:
        name = waiting.pop()
        if name in loaded:
            continue
        loaded.add(name)
        waiting += [resolve(imported, known) for imported in imported_names(name, known[name], in_functions=False)
                    if within(imported, package) and resolve(imported, known) is not None]
    return loaded


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    assert import_cycle(import_graph(package)) is None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_the_line_limit(package):
    assert long_modules(package) == {}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_import_of_the_package_resolves_in_this_checkout(package):
    assert unresolved_imports(package) == set()


def test_the_runtime_never_imports_training():
    graph = import_graph("sfumato.model")
    runtime = {name: targets for name, targets in graph.items() if not name.startswith("sfumato.model.training")}
    offending = {name: sorted(t for t in targets if t.startswith("sfumato.model.training")) for name, targets in runtime.items()}
    assert {name: targets for name, targets in offending.items() if targets} == {}


def test_the_app_imports_training_only_inside_the_commands_that_train_or_evaluate():
    loaded_with_the_app = {
        name: sorted(imported for imported in imported_names(name, path, in_functions=False) if imported.startswith("sfumato.model.training"))
        for name, path in modules("sfumato.app").items()
    }
    assert {name: names for name, names in loaded_with_the_app.items() if names} == {}


def test_transformers_private_generation_api_is_called_from_one_module():
    calls = private_calls("sfumato.model", "_prepare_")
    assert set(calls) == {TRANSFORMERS_ADAPTER}


def test_transformers_internals_are_reached_from_one_module():
    """Any private attribute the project does not define (``_from_config``), and a model's own
    submodules, only in the fence."""
    defined = defined_names(*PACKAGES)
    reached = {**private_reaches("sfumato.model", defined), **private_reaches("sfumato.app", defined)}
    outside = {name: names for name, names in reached.items() if name != TRANSFORMERS_ADAPTER}
    assert outside == {}
    assert {"_prepare_sampler", "model.encoder", "model.decoder"} <= reached[TRANSFORMERS_ADAPTER]


def test_the_model_never_imports_the_app():
    graph = {name: {imported for imported in imported_names(name, path) if within(imported, "sfumato.app")}
             for name, path in modules("sfumato.model").items()}
    assert {name: names for name, names in graph.items() if names} == {}


def test_the_app_loads_with_it_exactly_the_model_modules_the_architecture_names():
    allowed = documented_modules("App import time")
    loaded = loaded_with(set(app_imports_of_model(in_functions=False)), "sfumato.model")
    assert loaded - {"sfumato.model", "sfumato.model.remote"} == allowed  # the packages' __init__ come with their modules


def test_the_app_imports_other_model_modules_only_inside_the_functions_the_architecture_names():
    allowed = documented_modules("App import time") | documented_modules("App functions")
    assert set(app_imports_of_model(in_functions=True)) <= allowed
    assert documented_modules("App functions") <= set(app_imports_of_model(in_functions=True))


def test_the_app_decides_nothing_by_a_backends_kind():
    """What the app must know of a backend is in ``ModelInfo`` and ``Draft``, not its class or kind."""
    found = []
    for name, path in modules("sfumato.app").items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Attribute) and o.attr == "backend" for o in operands):
                    found.append(f"{name}: compares a ModelInfo.backend")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
                kinds = ast.unparse(node.args[1]) if len(node.args) == 2 else ""
                if "Backend" in kinds:
                    found.append(f"{name}: isinstance(..., {kinds})")
    assert found == []


def test_transformers_is_capped_below_its_next_major_version_and_installed_within_the_range():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (transformers,) = [Requirement(line) for line in project["dependencies"] if Requirement(line).name == "transformers"]
    assert any(spec.operator in {"<", "<=", "==", "~="} for spec in transformers.specifier)
    assert transformers.specifier.contains(version("transformers"))


# The helpers must see what they are meant to catch, or the checks above prove nothing.


def test_the_helpers_find_a_cycle_a_long_module_and_a_missed_move(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text("def f():\n    from pkg import a\n" + "x = 1\n" * MAX_LINES)
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nfrom pkg import gone\n"
        "x._prepare_sampler(config)\ndef later():\n    import pkg.b\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    graph = import_graph("pkg")
    assert graph["pkg.c"] == {"pkg", "pkg.b"}  # the TYPE_CHECKING import of a does not count
    assert imported_names("pkg.c", package / "c.py", in_functions=False) == {"typing.TYPE_CHECKING", "pkg.gone"}
    assert sorted(import_cycle(graph)[:2]) == ["pkg.a", "pkg.b"]
    assert import_cycle({"x": {"y"}, "y": {"z"}, "z": set()}) is None  # a chain is no cycle
    assert set(long_modules("pkg")) == {"pkg.b"}
    assert unresolved_imports("pkg") == {"pkg.c: pkg.gone"}
    assert private_calls("pkg", "_prepare_") == {"pkg.c": {"_prepare_sampler"}}
    (package / "d.py").write_text("import os\nself._mine = 1\nself._mine\nm._from_config(c)\nos._exit(0)\nm.model.encoder(x)\n")
    assert private_reaches("pkg", defined_names("pkg")) == {"pkg.c": {"_prepare_sampler"}, "pkg.d": {"_from_config", "model.encoder"}}
    assert loaded_with({"pkg.a"}, "pkg") == {"pkg.a", "pkg.b"}  # b's import of a is inside a function


def test_the_repo_explains_its_own_architecture():
    """Every module of the app and the runtime is named on the architecture page (by its file
    name, or a pattern such as ``folder*.py``)."""
    named = re.findall(r"`([\w*/]+\.py)`", (REPO / ARCHITECTURE).read_text(encoding="utf-8"))
    patterns = {Path(name).name for name in named}
    files = [path for package in PACKAGES for name, path in modules(package).items()
             if not name.startswith("sfumato.model.training") and path.name != "__init__.py"]
    unnamed = [str(path.relative_to(REPO)) for path in files if not any(fnmatch.fnmatch(path.name, p) for p in patterns)]
    assert unnamed == []
