"""The layout holds: no import cycle among `src/workersafe` modules, the layers import only
downwards, and CONTRIBUTING's module map names every module.

The import graph is read from the source with `ast`, not by importing: every `import` and
`from ... import` anywhere in a module counts (module level, inside functions, inside `try`),
relative imports resolved. The one exclusion: imports under `if TYPE_CHECKING:` never run,
so they are left out (they cannot make a cycle at run time, and mypy handles them).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "workersafe"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Dict[str, Path] = {
    module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every import statement under `node`, skipping the bodies of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _import_nodes_of(other)
            continue
        yield from _import_nodes_of(child)


def _import_nodes_of(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _import_nodes(node)


def _own(name: str) -> Optional[str]:
    """`name` if it is one of our modules, else the longest of ours it lies in, else None."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> Set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return imports_in(tree, module, is_package=path.name == "__init__.py")


def imports_in(tree: ast.AST, module: str, is_package: bool = False) -> Set[str]:
    """Our modules that `tree`, the code of `module`, imports anywhere in it."""
    package = module if is_package else module.rpartition(".")[0]
    found: Set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from pkg import sub` imports the submodule `pkg.sub` when there is one
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        for target in targets:
            own = _own(target)
            if own is not None and own != module:
                found.add(own)
    return found


GRAPH: Dict[str, Set[str]] = {module: imports_of(module) for module in MODULES}


def _package_of(module: str) -> str:
    """A module importing `a.b.c` also runs `a/__init__` and `a/b/__init__`."""
    return module.rpartition(".")[0]


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle as a list of modules (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {m: WHITE for m in graph}
    stack: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == GREY:
                return stack[stack.index(nxt):] + [nxt]
            if colour[nxt] == WHITE:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        colour[node] = BLACK
        return None

    for start in sorted(graph):
        if colour[start] == WHITE:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_graph_reader_sees_all_kinds_of_import() -> None:
    # a guard on the reader itself: these edges exist today and are of each kind
    assert "workersafe.engine" in GRAPH["workersafe.cli"]  # module level, absolute or relative
    assert len(MODULES) > 40
    assert any(GRAPH[m] for m in MODULES if m.startswith("workersafe.fix."))
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_function_local_and_relative_imports_are_read(tmp_path: Path) -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "from . import engine\n"
        "from .fix import apply\n"
        "if TYPE_CHECKING:\n"
        "    from .cli import main\n"
        "def f():\n"
        "    import workersafe.report\n"
        "    try:\n"
        "        from .analysis.extract import extract_facts\n"
        "    except ImportError:\n"
        "        pass\n"
    )
    tree = ast.parse(code)
    names = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            names.add((node.level, node.module))
        else:
            assert isinstance(node, ast.Import)
            names.add((0, node.names[0].name))
    assert (1, "cli") not in names  # TYPE_CHECKING-only: excluded
    assert {(1, None), (1, "fix"), (0, "workersafe.report"), (1, "analysis.extract")} <= names
    # and resolved to our modules, as if this were the code of `workersafe.paths`
    assert imports_in(tree, "workersafe.paths") == {
        "workersafe.engine",  # `from . import engine`: the submodule, not the package
        "workersafe.fix.apply",
        "workersafe.report",
        "workersafe.analysis.extract",
    }


def test_no_import_cycle() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _reachable(start: str) -> Set[str]:
    seen: Set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        for nxt in GRAPH[module] | ({_package_of(module)} & set(MODULES)):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize(
    "lower, forbidden",
    [
        ("workersafe.analysis", "workersafe.fix"),
        ("workersafe.analysis", "workersafe.cli"),
        ("workersafe.rules", "workersafe.fix"),
        ("workersafe.rules", "workersafe.cli"),
        ("workersafe.link", "workersafe.fix"),
        ("workersafe.link", "workersafe.cli"),
    ],
)
def test_layers_import_downwards(lower: str, forbidden: str) -> None:
    """The analysis, the rules and the linker never reach the fixer or a front end, directly
    or through any module they import."""
    offenders = {
        (module, bad)
        for module in MODULES
        if _in(module, lower)
        for bad in _reachable(module)
        if _in(bad, forbidden)
    }
    assert not offenders, sorted(offenders)


FRONT_ENDS = {
    "workersafe.cli": {"workersafe.__main__"},
    "workersafe.flake8_plugin": set(),
    "workersafe.codemod": set(),
    "workersafe.lsp.server": {"workersafe.cli"},  # `workersafe server`
}


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_nothing_below_a_front_end_imports_it(front_end: str) -> None:
    importers = {m for m, deps in GRAPH.items() if front_end in deps}
    assert importers <= FRONT_ENDS[front_end], sorted(importers - FRONT_ENDS[front_end])


def test_engine_never_imports_the_fixer_or_a_front_end() -> None:
    """`check` runs the engine: the fixer (libcst) and the front ends are above it."""
    above = {m for m in MODULES if _in(m, "workersafe.fix") or m in FRONT_ENDS}
    assert not (_reachable("workersafe.engine") & above), sorted(_reachable("workersafe.engine") & above)


def test_contributing_names_every_module() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    missing = []
    for module, path in MODULES.items():
        rel = path.relative_to(SRC).as_posix()
        if path.name == "__init__.py" and path.parent.name != PACKAGE:
            continue  # a subpackage is named by its folder, e.g. `workersafe/fix/`
        if path.name in ("__init__.py", "__main__.py"):
            continue
        # a row may name siblings by file name after the first: `analysis/names.py`, `positions.py`
        folder, _, short = rel.rpartition("/")
        named_in_row = any(
            f"`{folder}/" in line and f"`{short}`" in line for line in text.splitlines()
        )
        if f"`{rel}`" not in text and not named_in_row:
            missing.append(rel)
    assert not missing, "CONTRIBUTING.md's module map does not name: " + ", ".join(missing)


def _imports_torch(module: str) -> bool:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in _import_nodes(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [])
        if any(name == "torch" or name.startswith("torch.") for name in names):
            return True
    return False


def test_only_the_guard_imports_torch_and_nothing_of_the_linter_imports_the_guard() -> None:
    """The linter never imports torch; the runtime guard (`workersafe/guard/`) does, in
    `install()` only, and only `cli.py`'s `guard` command and the pytest plugin reach it."""
    assert _imports_torch("workersafe.guard.hook")  # the reader sees the one that does
    torch_users = {m for m in MODULES if _imports_torch(m)}
    assert torch_users <= {"workersafe.guard.hook"}, sorted(torch_users)
    guard_users = {m for m, deps in GRAPH.items()
                   if not _in(m, "workersafe.guard") and any(_in(d, "workersafe.guard") for d in deps)}
    assert guard_users <= {"workersafe.cli", "workersafe.pytest_plugin"}, sorted(guard_users)
    for front in ("workersafe.engine", "workersafe.flake8_plugin", "workersafe.lsp.server"):
        assert not any(_in(m, "workersafe.guard") for m in _reachable(front)), front
    # the plugin is imported by every pytest run: off, it must import nothing of ours
    assert GRAPH["workersafe.pytest_plugin"] <= {"workersafe.guard"}
    tree = ast.parse(MODULES["workersafe.pytest_plugin"].read_text(encoding="utf-8"))
    assert all(not isinstance(n, (ast.Import, ast.ImportFrom)) or n.module in ("__future__",
               "typing") for n in tree.body)


def _load_time_imports(module: str) -> Set[str]:
    """Our modules `module` imports when it is loaded: module-level statements only (inside
    `if`/`try` too), not function bodies, nor `if TYPE_CHECKING:`."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    top = ast.Module(body=[n for n in tree.body
                           if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.ClassDef))], type_ignores=[])
    return imports_in(top, module, is_package=path.name == "__init__.py")


def _loaded_with(start: str) -> Set[str]:
    """Every module of ours that importing `start` loads (packages' `__init__` included)."""
    seen = {start}
    todo = [start]
    while todo:
        module = todo.pop()
        for nxt in _load_time_imports(module) | ({_package_of(module)} & set(MODULES)):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# What flake8 loads with the plugin on every run, before any file is read (most files flake8
# checks then stop at the prefilter): the configuration and the tables it reads, no more.
PLUGIN_AT_LOAD = {
    "workersafe", "workersafe.compiled", "workersafe.flake8_plugin", "workersafe.config",
    "workersafe.paths", "workersafe.records", "workersafe.record_inits", "workersafe.registry",
    "workersafe.ruletable", "workersafe.torchnames",
}


def test_what_loading_the_flake8_plugin_and_the_cli_imports() -> None:
    assert "workersafe.facts" in _loaded_with("workersafe.engine")  # the reader sees them
    assert _loaded_with("workersafe.flake8_plugin") == PLUGIN_AT_LOAD
    # `workersafe check` parses its arguments before it loads the engine
    assert _loaded_with("workersafe.cli") == PLUGIN_AT_LOAD - {"workersafe.flake8_plugin"} | {
        "workersafe.cli", "workersafe.exitcodes"}
    # one file (the plugin, an editor) loads the engine: not the cache, the file selection,
    # the parse pool, the index, the readers of files and notebooks or the reports
    assert not _loaded_with("workersafe.engine") & {
        "workersafe.cache", "workersafe.selection", "workersafe.parallel", "workersafe.index",
        "workersafe.reading", "workersafe.notebook", "workersafe.report", "workersafe.atomic",
        "workersafe.analysis.extract"}, sorted(_loaded_with("workersafe.engine"))
    # nor, until some file has facts, the linker and the rules; nor `# noqa` until a finding
    # is filtered (a run in which no file is a candidate needs none of them: the CLI's start)
    assert not _loaded_with("workersafe.engine") & {
        "workersafe.link", "workersafe.rules", "workersafe.noqa"}
