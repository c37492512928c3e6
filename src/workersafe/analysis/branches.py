"""Calls an `__init__` makes only in one branch of a test of one of its parameters
(`if readonly: self.env = lmdb.open(p, readonly=True) else: ...`): `ClassFacts.branch_params`,
so the linker can tell, from the arguments a construction gives, which branch it runs."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from . import syntax
from .positions import Positions


def branch_params(node: ast.ClassDef, positions: Positions
                  ) -> tuple[tuple[int, int, str, str, bool, Optional[bool]], ...]:
    """(line, col, attr, param, taken_when, default) for each `self.<attr> = <call>` in
    `__init__` made only when
    `param` is truthy (`if param:`) or falsy (`if not param:`, the `else` of `if param:`);
    `default`: the truth of the parameter's constant default (None: no constant default).
    The innermost such test decides."""
    init = next((s for s in node.body if type(s) is syntax.FunctionDef and s.name == "__init__"),
                None)
    if init is None:
        return ()
    args = init.args
    positional = (*args.posonlyargs, *args.args)
    defaults: dict[str, Optional[bool]] = {a.arg: None for a in (*positional, *args.kwonlyargs)}
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    for arg, default in pairs:
        if type(default) is syntax.Constant:
            defaults[arg.arg] = bool(default.value)
    out = []
    for call, attr, param, taken in _branch_calls(init.body, defaults, None):
        span = positions.span(call)
        out.append((span.line, span.col, attr, param, taken, defaults[param]))
    return tuple(out)


def _test_param(test: ast.expr, params: dict[str, Optional[bool]]
                ) -> Optional[tuple[str, bool]]:
    """`param` → (param, True); `not param` → (param, False); else None."""
    if type(test) is syntax.Name and test.id in params:
        return test.id, True
    if type(test) is syntax.UnaryOp and type(test.op) is syntax.Not:
        inner = _test_param(test.operand, params)
        return (inner[0], not inner[1]) if inner is not None else None
    return None


def _branch_calls(body: list[ast.stmt], params: dict[str, Optional[bool]],
                  current: Optional[tuple[str, bool]]
                  ) -> Iterator[tuple[ast.Call, str, str, bool]]:
    for stmt in body:
        if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            continue
        if type(stmt) is syntax.If:
            decided = _test_param(stmt.test, params)
            if decided is not None:
                param, truth = decided
                yield from _branch_calls(stmt.body, params, (param, truth))
                yield from _branch_calls(stmt.orelse, params, (param, not truth))
                continue
        if current is None:
            if hasattr(stmt, "body"):  # `with`, `try`, `for`, `if`: tests inside them count
                for field in ("body", "orelse", "finalbody"):
                    yield from _branch_calls(getattr(stmt, field, []), params, None)
                for handler in getattr(stmt, "handlers", []):
                    yield from _branch_calls(handler.body, params, None)
            continue
        attr = _kept_call(stmt)
        if attr is not None:
            yield attr[0], attr[1], current[0], current[1]


def _kept_call(stmt: ast.stmt) -> Optional[tuple[ast.Call, str]]:
    """`self.<attr> = <call>`: the call and the attribute."""
    if type(stmt) is not syntax.Assign or len(stmt.targets) != 1 \
            or type(stmt.value) is not syntax.Call:
        return None
    target = stmt.targets[0]
    if type(target) is syntax.Attribute and type(target.value) is syntax.Name \
            and target.value.id == "self":
        return stmt.value, target.attr
    return None
