"""Guards for libcst, which only the fixer uses.

libcst's native parser is guarded by nothing: it recurses in native code (~1 KiB of stack a
level: `1+1+...+1` with 8,000 terms overflows an 8 MiB stack, a segfault that kills the whole
run) and takes quadratic time and memory on long chains (2,000 subscripts `x[0][0]...`: 14 s;
2,000 nested conditional expressions: 700 MiB). The analysis reports any file nested deeper
than `MAX_DEPTH` (measured on Python's own tree) and never produces a finding in it, so the
fixer only gives libcst files within that depth — with the recursion room below."""

from __future__ import annotations

from typing import Optional

from ..parse import MAX_DEPTH, ParseError, deep_recursion, nesting_problem, python_tree

__all__ = ["MAX_DEPTH", "deep_recursion", "libcst_problem"]


def libcst_problem(text: str) -> Optional[str]:
    """Why libcst must not be given this text (too deeply nested, or not Python), or None."""
    try:
        return nesting_problem(python_tree(text), text)
    except ParseError as exc:
        return str(exc)
