"""wideml's import graph, read with ``ast`` (nothing is imported): no circle between files, no import inside a function.

Two rules keep the package's structure visible in its import lines:

(a) **No import circle between wideml's files**, counting every import: at module level, inside
    functions and under ``if TYPE_CHECKING:``. A circle held together by an import inside a
    function still makes the files one unit that can only be understood (and tested) together.
(b) **No wideml-internal import inside a function**, outside ``wideml/cli/`` (whose lazy imports
    keep ``wideml --help`` and Ctrl-C at start-up fast) and ``wideml/__init__.py`` (public names
    imported on first use). The few exceptions are listed in :data:`ALLOWED_FUNCTION_IMPORTS`,
    each with its reason.

The last tests plant a circle and a function-level import in a copy of the package and check
that the functions these rules use report them, so the rules can fail.
"""

from __future__ import annotations

import ast
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "wideml"

#: Modules whose function-level wideml imports are allowed as a whole: the command line (lazy imports keep
#: ``wideml --help`` and the Ctrl-C handling of its start-up fast) and the package's lazy public names.
LAZY_PACKAGES = ("wideml.cli",)
LAZY_MODULES = ("wideml",)

#: (importing module, imported module) -> why that import stays inside a function. Keep it short.
ALLOWED_FUNCTION_IMPORTS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    """One import of a wideml module, as written in ``source`` at ``line``."""

    source: str
    target: str
    line: int
    in_function: bool


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``package`` (a package is its ``__init__.py``)."""
    root = package.parent
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` names: itself, else the nearest enclosing module (``pkg.func`` -> ``pkg``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module of a ``from ... import`` (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _function_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a function (or method) body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(sub) for sub in ast.walk(node) if sub is not node)
    return inside


def imports_in(module: str, modules: dict[str, Path]) -> list[Import]:
    """Every import of a wideml module made by ``module``'s file: at module level, in functions, under TYPE_CHECKING.

    ``importlib.import_module("wideml.x")`` with a constant name counts too.
    """
    path = modules[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    inside = _function_nodes(tree)
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            names = [f"{base}.{alias.name}" if alias.name != "*" else base for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        for name in names:
            target = _resolve(name, modules) if name.split(".")[0] == module.split(".")[0] else None
            imp = Import(module, target, node.lineno, id(node) in inside) if target not in (None, module) else None
            if imp is not None and imp not in found:
                found.append(imp)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the wideml modules it imports (every kind of import)."""
    modules = module_files(package)
    return {module: {imp.target for imp in imports_in(module, modules)} for module in modules}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def _lazy_allowed(module: str) -> bool:
    return module in LAZY_MODULES or any(module == p or module.startswith(p + ".") for p in LAZY_PACKAGES)


def function_level_imports(package: Path = PACKAGE, allowed: dict | None = None) -> list[Import]:
    """wideml-internal imports made inside a function, outside the lazy modules and the allow-list."""
    allowed = ALLOWED_FUNCTION_IMPORTS if allowed is None else allowed
    modules = module_files(package)
    return [imp for module in modules if not _lazy_allowed(module)
            for imp in imports_in(module, modules)
            if imp.in_function and (imp.source, imp.target) not in allowed]


def _describe(imports: list[Import], package: Path = PACKAGE) -> str:
    files = module_files(package)
    return "\n".join(f"  {files[i.source].relative_to(package.parent)}:{i.line} imports {i.target}" for i in imports)


# ----------------------------------------------------------------------------- the rules, on wideml itself
def test_no_import_cycle_between_wideml_files():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles (counting imports inside functions and under TYPE_CHECKING):\n" + "\n".join(
        "  " + " <-> ".join(cycle) for cycle in cycles)


def test_no_wideml_import_inside_a_function():
    found = function_level_imports()
    assert not found, ("wideml imports inside functions (hoist them to module level, or add the pair to "
                       "ALLOWED_FUNCTION_IMPORTS with its reason):\n" + _describe(found))


def test_allow_list_entries_are_still_used_and_explained():
    modules = module_files()
    used = {(i.source, i.target) for m in modules for i in imports_in(m, modules) if i.in_function}
    stale = [pair for pair in ALLOWED_FUNCTION_IMPORTS if pair not in used]
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"
    assert all(len(reason.split()) >= 4 for reason in ALLOWED_FUNCTION_IMPORTS.values())


# ----------------------------------------------------------------------------- the checks can fail
@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A copy of wideml's source files (``.py`` only) to plant problems in."""
    copy = tmp_path / "wideml"
    shutil.copytree(PACKAGE, copy, ignore=lambda folder, names: [
        n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir() or n == "__pycache__"])
    return copy


def _plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + text + "\n", encoding="utf-8")


@pytest.mark.parametrize("how", ["module level", "in a function", "under TYPE_CHECKING", "relative, in a method"])
def test_a_planted_cycle_is_found(package_copy, how):
    """wideml.exceptions (which imports nothing of wideml) made to import wideml.runtime.config, which imports it."""
    before = find_cycles(import_graph(package_copy))
    assert not any("wideml.exceptions" in cycle for cycle in before)
    plant = {
        "module level": "from wideml.runtime.config import config_value",
        "in a function": "def _f():\n    from wideml.runtime import config\n    return config",
        "under TYPE_CHECKING": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import wideml.runtime.config",
        "relative, in a method": "class _C:\n    def f(self):\n        from .runtime.config import config_value\n"
                                 "        return config_value",
    }[how]
    _plant(package_copy / "exceptions.py", plant)
    after = find_cycles(import_graph(package_copy))
    assert any({"wideml.exceptions", "wideml.runtime.config"} <= set(cycle) for cycle in after), after


def test_a_planted_function_level_import_is_found(package_copy):
    target = package_copy / "runtime" / "scratch.py"
    _plant(target, "def _planted():\n    from wideml.exceptions import WidemlError\n    return WidemlError")
    line = target.read_text().splitlines().index("    from wideml.exceptions import WidemlError") + 1
    found = function_level_imports(package_copy, allowed={})
    assert Import("wideml.runtime.scratch", "wideml.exceptions", line, True) in found
    # the same import in the command line's lazy modules is allowed
    _plant(package_copy / "cli" / "argtypes.py", "def _lazy():\n    from wideml.exceptions import WidemlError\n")
    assert not any(i.source == "wideml.cli.argtypes" for i in function_level_imports(package_copy, allowed={}))
    # and an allow-list entry silences exactly its pair
    allowed = {("wideml.runtime.scratch", "wideml.exceptions"): "planted by this test"}
    assert not any(i.source == "wideml.runtime.scratch" for i in function_level_imports(package_copy, allowed))


def test_import_forms_resolve_to_modules(tmp_path):
    """``import a.b as c``, ``from a import b`` (a module), ``from a.b import name``, relative and importlib forms."""
    pkg = tmp_path / "wideml"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .leaf import VALUE\n")
    (pkg / "sub" / "leaf.py").write_text("VALUE = 1\n")
    (pkg / "one.py").write_text("import wideml.sub.leaf as leaf\nfrom wideml import sub\n")
    (pkg / "two.py").write_text("import importlib\ndef f():\n    importlib.import_module('wideml.one')\n"
                                "    from wideml.sub.leaf import VALUE\n    import numpy\n")
    graph = import_graph(pkg)
    assert graph == {"wideml": set(), "wideml.sub": {"wideml.sub.leaf"}, "wideml.sub.leaf": set(),
                     "wideml.one": {"wideml.sub.leaf", "wideml.sub"}, "wideml.two": {"wideml.one", "wideml.sub.leaf"}}
    assert {(i.source, i.target) for i in function_level_imports(pkg, allowed={})} == {
        ("wideml.two", "wideml.one"), ("wideml.two", "wideml.sub.leaf")}
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


if __name__ == "__main__":  # pragma: no cover - `python tests/test_import_graph.py` prints the current findings
    for cycle in find_cycles(import_graph()):
        print("cycle:", " <-> ".join(cycle))
    print(_describe(function_level_imports()))
    sys.exit(0)
