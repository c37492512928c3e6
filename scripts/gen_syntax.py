"""Rewrite the per-file analysis to read node types from `analysis/syntax.py`.

    python scripts/gen_syntax.py          # rewrite, and write analysis/syntax.py
    python scripts/gen_syntax.py --check  # exit 1 (and say where) if a rewrite is due

Compiled by mypyc, `ast.Call` in a function body is a lookup in the `ast` module on each use;
`syntax.Call`, a `Final` constant of a compiled module, is a C static. In each module of
`src/workersafe/analysis/` (but `syntax.py` itself), every `ast.<node class>` read inside a
function body becomes `syntax.<node class>` (annotations, decorators, default values and
module-level code keep `ast.X`: they run once, or not at all), `from . import syntax` is added
where needed, and `syntax.py` is written with each node class used. Run it after merging or
writing code that tests nodes with `ast.X`; `tests/test_syntax_constants.py` fails until
then (the results are the same either way: only the compiled speed differs). A rewritten
line may then be too long for flake8: wrap it by hand."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parent.parent / "src" / "workersafe" / "analysis"
SKIPPED = {"__init__.py", "syntax.py"}
HEADER = '''"""The `ast` node types the analysis tests nodes against, as module constants.

Compiled by mypyc, `syntax.Call` is a C static read, where `ast.Call` looks the name up in the
`ast` module (a generic attribute lookup) on every use: with the walk's own dispatch, a fifth of
what the compiled walk cost went there. Pure Python, the same lookup either way. Annotations
and module-level code keep `ast.X`. Written by scripts/gen_syntax.py (run it, do not edit)."""

from __future__ import annotations

import ast
from typing import Final

'''


def _outside_bodies(tree: ast.AST) -> set[int]:
    """id() of the nodes of annotations, decorators, bases and default values."""
    found: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            parts += [*node.decorator_list, *args.defaults,
                      *(d for d in args.kw_defaults if d is not None)]
            if node.returns is not None:
                parts.append(node.returns)
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                        args.kwarg):
                if arg is not None and arg.annotation is not None:
                    parts.append(arg.annotation)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        elif isinstance(node, ast.ClassDef):
            parts += [*node.bases, *node.decorator_list]
        for part in parts:
            found.update(id(n) for n in ast.walk(part))
    return found


def _is_node_class(name: str) -> bool:
    value = getattr(ast, name, None)
    return isinstance(value, type) and issubclass(value, ast.AST) and value is not ast.AST


def _uses(tree: ast.AST) -> list[ast.Attribute]:
    """The `ast.<node class>` reads inside function bodies."""
    outside = _outside_bodies(tree)
    found: dict[int, ast.Attribute] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in function.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "ast" and id(node) not in outside \
                        and _is_node_class(node.attr):
                    found[id(node)] = node
    return list(found.values())


def _with_import(text: str) -> str:
    if "\nfrom . import syntax\n" in text:
        return text
    if "\nfrom ." in text:
        at = text.index("\nfrom .") + 1
        return text[:at] + "from . import syntax\n" + text[at:]
    last = max(n.end_lineno or n.lineno for n in ast.parse(text).body
               if isinstance(n, (ast.Import, ast.ImportFrom)))
    lines = text.split("\n")
    lines.insert(last, "\nfrom . import syntax")
    return "\n".join(lines)


def rewrite(source: str) -> str:
    """`source` with `ast.X` in function bodies read as `syntax.X`."""
    uses = _uses(ast.parse(source))
    if not uses:
        return source
    lines = source.split("\n")
    for node in sorted(uses, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        line = lines[node.lineno - 1]
        assert line[node.col_offset:node.end_col_offset] == f"ast.{node.attr}"
        lines[node.lineno - 1] = (line[:node.col_offset] + f"syntax.{node.attr}"
                                  + line[node.end_col_offset:])
    return _with_import("\n".join(lines))


# Node classes newer than the oldest Python supported (3.9): None there (no node is of it).
LATER = {"Match": "3.10", "MatchValue": "3.10", "MatchSingleton": "3.10",
         "MatchSequence": "3.10", "MatchMapping": "3.10", "MatchClass": "3.10",
         "MatchStar": "3.10", "MatchAs": "3.10", "MatchOr": "3.10", "match_case": "3.10",
         "TryStar": "3.11", "TypeAlias": "3.12", "TypeVar": "3.12", "ParamSpec": "3.12",
         "TypeVarTuple": "3.12"}


def _constant(name: str) -> str:
    if name in LATER:
        return (f"{name}: Final = getattr(ast, {name!r}, None)  # Python {LATER[name]}+"
                " (None before)\n")
    return f"{name}: Final = ast.{name}\n"


def syntax_module(sources: list[str]) -> str:
    used = set()
    for source in sources:
        used.update(re.findall(r"(?<![.\w])syntax\.([A-Za-z_]+)", source))
    return HEADER + "".join(_constant(name) for name in sorted(used))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = sorted(p for p in ANALYSIS.glob("*.py") if p.name not in SKIPPED)
    due = []
    sources = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        new = rewrite(source)
        sources.append(new)
        if new != source:
            due.append(str(path))
            if not check:
                path.write_text(new, encoding="utf-8")
    syntax = ANALYSIS / "syntax.py"
    expected = syntax_module(sources)
    if not syntax.exists() or syntax.read_text(encoding="utf-8") != expected:
        due.append(str(syntax))
        if not check:
            syntax.write_text(expected, encoding="utf-8")
    if check and due:
        print("node types read through `ast.X` in function bodies (run scripts/gen_syntax.py):"
              + "".join(f"\n  {path}" for path in due))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
