"""The per-file analysis reads node types as `syntax.X` in function bodies (scripts/gen_syntax.py):
compiled by mypyc, a C static instead of a lookup in the `ast` module on each use."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_syntax", ROOT / "scripts" / "gen_syntax.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_syntax"] = module
    spec.loader.exec_module(module)
    return module


def test_analysis_reads_node_types_from_syntax() -> None:
    """A failure here: code of analysis/ tests nodes with `ast.X` in a function body (or
    syntax.py is stale); run `python scripts/gen_syntax.py`. The results are the same, the
    compiled walk slower."""
    assert _script().main(["--check"]) == 0


def test_rewrite_keeps_annotations_defaults_and_module_code() -> None:
    gen = _script()
    source = (
        "import ast\n"
        "from .x import y\n"
        "KINDS = (ast.Call, ast.Name)\n"
        "def f(node: ast.expr, kind: type = ast.Name) -> ast.Call:\n"
        "    v: ast.Name = node\n"
        "    return node if type(node) is ast.Call and isinstance(v, (ast.Name, ast.AST)) \\\n"
        "        else ast.parse('x')\n"
    )
    assert gen.rewrite(source) == (
        "import ast\n"
        "from . import syntax\n"
        "from .x import y\n"
        "KINDS = (ast.Call, ast.Name)\n"
        "def f(node: ast.expr, kind: type = ast.Name) -> ast.Call:\n"
        "    v: ast.Name = node\n"
        "    return node if type(node) is syntax.Call and isinstance(v, (syntax.Name, ast.AST)) \\\n"
        "        else ast.parse('x')\n"
    )
    assert gen.rewrite(gen.rewrite(source)) == gen.rewrite(source)
    assert gen.syntax_module([gen.rewrite(source)]).endswith(
        "Call: Final = ast.Call\nName: Final = ast.Name\n")


def test_syntax_constants_are_the_ast_classes() -> None:
    import ast

    from workersafe.analysis import syntax

    classes = {n: v for n, v in vars(syntax).items() if isinstance(v, type) and n[:1] != "_"}
    assert len(classes) > 20
    for name, value in classes.items():
        assert value is getattr(ast, name)
