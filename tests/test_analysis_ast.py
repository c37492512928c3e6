"""The analysis runs on Python's `ast`: `check` never imports libcst (only `fix` does), the
flake8 plugin analyses the tree flake8 hands it (no parse of its own), and the facts do not
depend on the order they are asked for."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workersafe.config import Config
from workersafe.engine import Engine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

RUNNER = """
import sys
from workersafe.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
print("RESULT", rc, "libcst" in sys.modules)
"""


def _candidate_heavy_tree(root: Path) -> Path:
    """Every lint fixture and project fixture: candidates, most with findings."""
    root.mkdir()
    for path in sorted((FIXTURES / "lint").glob("*.py")):
        shutil.copy(path, root / path.name)
    for project in sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()):
        shutil.copytree(project, root / project.name)
    return root


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_never_imports_libcst(tmp_path: Path, jobs: str) -> None:
    tree = _candidate_heavy_tree(tmp_path / "tree")
    proc = subprocess.run([sys.executable, "-c", RUNNER, "check", "--no-cache", "-j", jobs,
                           str(tree)], capture_output=True, text=True, timeout=300)
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert result == ["RESULT 1 False"], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count(" WS1") >= 50  # the tree really was analysed, with findings


def test_check_of_stdin_never_imports_libcst(tmp_path: Path) -> None:
    text = (FIXTURES / "lint" / "alias_dataloader_submodule.py").read_bytes()
    proc = subprocess.run([sys.executable, "-c", RUNNER, "check", "--no-cache",
                           "--stdin-filename", "x.py", "-"], input=text.decode(),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.stdout.splitlines()[-1] == "RESULT 1 False", proc.stdout + proc.stderr


def test_flake8_plugin_analyses_flake8s_tree_without_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Given flake8's tree, the plugin never calls `ast.parse`; the findings are the ones a
    parse of its own gives."""
    from workersafe.flake8_plugin import WorkerSafeChecker

    path = FIXTURES / "lint" / "alias_dataloader_submodule.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    WorkerSafeChecker.parse_options(_Options())
    expected = list(WorkerSafeChecker(None, lines, str(path)).run())
    assert any(r[2].startswith("WS1") for r in expected)
    tree = ast.parse("".join(lines))

    def refuse(*args: object, **kwargs: object) -> ast.AST:
        raise AssertionError("the plugin parsed the file again")

    monkeypatch.setattr(ast, "parse", refuse)
    assert list(WorkerSafeChecker(tree, lines, str(path)).run()) == expected


class _Options:
    workersafe_extra_handles = workersafe_disable_handles = workersafe_dataset_bases = ""
    workersafe_index = False


def test_syntax_this_python_cannot_parse_is_one_ws001() -> None:
    text = (FIXTURES / "lint" / "ws102_lru_cache_client.py").read_text(encoding="utf-8")
    text = text.replace("\n\n", "\n\nprint 'old'\n", 1)
    findings = Engine(Config(), link=False).check_text("old.py", text)
    line = text.splitlines().index("print 'old'") + 1
    assert [(f.code, f.line) for f in findings] == [("WS001", line)]  # its own line
    assert "syntax error" in findings[0].message and "Missing parentheses" in findings[0].message


def test_facts_are_the_same_whatever_the_order_they_are_read() -> None:
    """`facts()` only reads the walk: assembling twice gives equal facts (a cached function's
    handle is not recorded into the module's handles as a side effect)."""
    from workersafe.analysis.extract import _facts
    from workersafe.analysis.positions import Positions
    from workersafe.analysis.walker import FactWalker
    from workersafe.registry import Registry

    text = (FIXTURES / "lint" / "ws102_lru_cache_client.py").read_text(encoding="utf-8")
    walker = FactWalker("x.py", "m", False, Registry(), Positions(text))
    walker.walk(ast.parse(text))
    first, second = _facts(walker), _facts(walker)
    assert first == second
    assert "s3_client" in {h.name for h in first.module_handles}  # the cached function
    assert not any(pair[1] for pair in walker.state.module_handles.values())


def test_libcst_guard_measures_every_node() -> None:
    """fix/cstguard.py: too deep for libcst even where the analysis does not walk (an
    annotation), fine at ordinary depth, and Python's message for text it cannot parse."""
    from workersafe.fix.cstguard import MAX_DEPTH, libcst_problem

    deep = "x: " + "list[" * (MAX_DEPTH + 5) + "int" + "]" * (MAX_DEPTH + 5) + " = []\n"
    shallow = "x: " + "list[" * 50 + "int" + "]" * 50 + " = []\n"
    assert "too deeply nested" in (libcst_problem(deep) or "")
    assert libcst_problem(shallow) is None
    assert "syntax error" in (libcst_problem("def f(:\n") or "")


def test_node_traversals_keep_asts_orders() -> None:
    """analysis/nodes.py: `subtree` is the pre-order of `ast.iter_child_nodes` (each node
    before its children, children in field order) and `breadth_first` is `ast.walk`'s order,
    both less contexts and operators, over every fixture; `child_nodes` likewise. The passes
    after the walk record what they find in these orders (uses, stores, lazy accessors)."""
    from workersafe.analysis.nodes import breadth_first, child_nodes, subtree

    leaves = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

    def children(node: ast.AST) -> list[ast.AST]:
        return [c for c in ast.iter_child_nodes(node) if not isinstance(c, leaves)]

    def preorder(node: ast.AST, into_lambdas: bool) -> list[ast.AST]:
        out = [node]
        if into_lambdas or not isinstance(node, ast.Lambda):
            for child in children(node):
                out.extend(preorder(child, into_lambdas))
        return out

    seen = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for into_lambdas in (True, False):
            assert [id(n) for n in subtree(tree, into_lambdas)] \
                == [id(n) for n in preorder(tree, into_lambdas)], path
        walked = [n for n in ast.walk(tree) if not isinstance(n, leaves)]
        assert [id(n) for n in breadth_first(tree)] == [id(n) for n in walked], path
        for node in walked:
            assert child_nodes(node) == children(node), path
        seen += 1
    assert seen > 100


def test_a_functions_own_imports_qualify_its_names_only() -> None:
    """What a function imports qualifies the names it reads (nested functions too), not those
    of the functions after it: the names qualified outside are kept aside, not recomputed."""
    import textwrap

    from workersafe.parse import file_facts
    from workersafe.registry import Registry

    source = textwrap.dedent("""
        from store import Client

        def local(p):
            from other import Client
            def inner(q):
                return Client.open(q)
            return Client.open(p), inner(p)

        def module_level(p):
            return Client.open(p)

        def later(p):
            import store as Client
            return Client.open(p)

        def last(p):
            return Client.open(p)
    """)
    facts = file_facts(source, "m.py", "m", False, Registry())
    assert [(f.name, f.calls) for f in facts.functions] == [
        ("local", ("other.Client.open",)), ("module_level", ("store.Client.open",)),
        ("later", ("store.open",)), ("last", ("store.Client.open",))]


def test_a_name_bound_again_adds_each_dataset_once() -> None:
    """The datasets a name may be are each kept once, however often one assignment names one
    (the same whether the analysis runs as Python or compiled with mypyc)."""
    import textwrap

    from workersafe.parse import file_facts
    from workersafe.registry import Registry

    source = textwrap.dedent("""
        from data import Other, Rows

        ds = Other("b")
        ds = [Rows("a"), Rows("a")]
    """)
    facts = file_facts(source, "m.py", "m", False, Registry())
    ((name, refs),) = facts.module_vars
    assert name == "ds" and [r.target for r in refs] == ["data.Other", "data.Rows"]
