"""Guards for libcst, which only the fixer uses.

libcst's native parser is guarded by nothing: it recurses in native code (~1 KiB of stack a
level: `1+1+...+1` with 8,000 terms overflows an 8 MiB stack, a segfault that kills the whole
run) and takes quadratic time and memory on long chains (2,000 subscripts `x[0][0]...`: 14 s;
2,000 nested conditional expressions: 700 MiB). The analysis reports any file nested deeper
than `MAX_DEPTH` (measured on Python's own tree) and never produces a finding in it, so the
fixer only gives libcst files within that depth — with the recursion room below."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..analysis.walker import MAX_DEPTH
from ..parse import ParseError, deep_recursion, python_tree

__all__ = ["MAX_DEPTH", "deep_recursion", "libcst_problem", "nesting_problem"]

_LINE_END = re.compile(r"\r\n|\r|\n")


def libcst_problem(text: str) -> Optional[str]:
    """Why libcst must not be given this text (too deeply nested, or not Python), or None.
    The analysis stops at MAX_DEPTH levels of what it walks; this measures every node
    (annotations included)."""
    try:
        return nesting_problem(python_tree(text), text)
    except ParseError as exc:
        return str(exc)


def nesting_problem(tree: ast.AST, text: str, limit: int = MAX_DEPTH) -> Optional[str]:
    """Why this tree is too deeply nested to give to libcst, or None."""
    line = _deep_line(tree, text, limit)
    if line is None:
        return None
    return (f"too deeply nested to analyse (an expression more than {limit} levels deep, "
            f"line {line})")


def _deep_line(tree: ast.AST, text: str, limit: int) -> Optional[int]:
    """The line of a node nested deeper than `limit`, or None.

    A nesting level takes at least one character of source (at most two AST levels, e.g.
    `keyword`, `arguments`), so a subtree spanning `n` characters is at most `2 n` levels deep
    below its root: only long statements are walked node by node. Spans are whole lines (an
    over-estimate); positions inside f-strings are not trusted before 3.12."""
    starts = [0]
    starts.extend(m.end() for m in _LINE_END.finditer(text))
    starts.append(len(text) + 1)
    last = len(starts) - 1

    def span(node: ast.AST) -> int:
        first: Optional[int] = getattr(node, "lineno", None)
        end: Optional[int] = getattr(node, "end_lineno", None)
        if first is None or end is None:
            return limit  # no position (e.g. `arguments`): look inside
        return starts[min(end, last)] - starts[min(first, last) - 1]

    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]  # node, depth, statement line
    while stack:
        node, depth, line = stack.pop()
        if depth > limit:
            return line
        if isinstance(node, ast.stmt):
            line = node.lineno
        walk_all = isinstance(node, (ast.JoinedStr, ast.FormattedValue))
        for child in ast.iter_child_nodes(node):
            if walk_all or isinstance(child, (ast.stmt, ast.excepthandler)) \
                    or depth + 1 + 2 * span(child) > limit:
                stack.append((child, depth + 1, line))
    return None
