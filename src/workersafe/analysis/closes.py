"""Closes that run only when the method fails: `self.conn.close()` in an `except` handler, or
in a block that ends by raising (`if self.n == 0: self.conn.close(); raise ValueError`). On
the path that returns, the handle stays open, so such a close does not make it closed; one in
`finally`, or on the normal path, does."""

from __future__ import annotations

import ast
from typing import Union

from . import syntax
from .values import self_attr

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def error_path_closes(method: Function, closers: frozenset[str]) -> set[str]:
    """The attributes the method closes (`self.<attr>.<closer>()`) only on a failing path."""
    normal: set[str] = set()
    failing: set[str] = set()

    def block(body: list[ast.stmt], on_error: bool) -> None:
        here = on_error or (bool(body) and isinstance(body[-1], syntax.Raise))
        for stmt in body:
            if isinstance(stmt, _NESTED):
                continue
            for attr in _closed_here(stmt, closers):
                (failing if here else normal).add(attr)
            if isinstance(stmt, syntax.Try) or type(stmt).__name__ == "TryStar":
                for handler in getattr(stmt, "handlers", []):
                    block(handler.body, True)
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], syntax.stmt):
                    block(inner, here)
            for case in getattr(stmt, "cases", []) or []:
                block(case.body, here)

    block(method.body, False)
    return failing - normal


def _closed_here(stmt: ast.stmt, closers: frozenset[str]) -> set[str]:
    """`self.x.close()` calls in the statement's own expressions (not its nested blocks)."""
    out: set[str] = set()
    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, syntax.expr):
            continue
        for node in ast.walk(child):
            if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Attribute) \
                    and node.func.attr in closers:
                attr = self_attr(node.func.value)
                if attr:
                    out.add(attr)
    return out
