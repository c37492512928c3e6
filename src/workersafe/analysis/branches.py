"""Calls an `__init__` makes only in one branch of a test of one of its parameters
(`if readonly: self.env = lmdb.open(p, readonly=True) else: ...`): `ClassFacts.branch_params`;
and the methods it calls only there (`if preload: self.open_lmdb()`):
`ClassFacts.branch_calls`. So the linker can tell, from the arguments a construction gives,
which branch it runs."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from . import syntax
from .nodes import child_nodes, subtree
from .positions import Positions

Defaults = dict[str, Optional[bool]]
BranchParams = tuple[tuple[int, int, str, str, bool, Optional[bool]], ...]
BranchCalls = tuple[tuple[str, str, bool, Optional[bool]], ...]


def init_branches(node: ast.ClassDef, positions: Positions) -> tuple[BranchParams, BranchCalls]:
    """`branch_params` and `branch_calls` of the class, its `__init__` read once for both
    (and neither looked for when it holds no `if`)."""
    found = _init_defaults(node)
    if found is None:
        return (), ()
    return _branch_params(*found, positions), _branch_calls_of(*found)


def _branch_params(init: ast.FunctionDef, defaults: Defaults, positions: Positions
                   ) -> BranchParams:
    """(line, col, attr, param, taken_when, default) for each `self.<attr> = <call>` in
    `__init__` made only when
    `param` is truthy (`if param:`) or falsy (`if not param:`, the `else` of `if param:`);
    `default`: the truth of the parameter's constant default (None: no constant default).
    The innermost such test decides."""
    out = []
    for call, attr, param, taken in _branch_calls(init.body, defaults, None):
        span = positions.span(call)
        out.append((span.line, span.col, attr, param, taken, defaults[param]))
    return tuple(out)


def _branch_calls_of(init: ast.FunctionDef, defaults: Defaults) -> BranchCalls:
    """(method, param, taken_when, default) for each `self.<method>(...)` call `__init__`
    makes only in one branch of a test of `param` (as `branch_params`, the innermost such test
    deciding; the call anywhere inside that branch, not in a nested function or lambda).
    A method is listed only when every mention of `self.<method>` in `__init__` is such a
    call: a construction taking the other branch of each does not call it from `__init__`."""
    in_branch: list[tuple[ast.Call, str, str, bool]] = []
    mentions: dict[str, int] = {}  # `self.<method>` anywhere in `__init__`, by method
    stack: list[tuple[ast.AST, Optional[tuple[str, bool]], bool]] = \
        [(stmt, None, False) for stmt in reversed(init.body)]
    while stack:
        item, current, deferred = stack.pop()
        if isinstance(item, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef,
                             syntax.Lambda, syntax.GeneratorExp)):
            deferred = True  # run later, if at all: its calls are not the branch's
        elif type(item) is syntax.Attribute and type(item.value) is syntax.Name \
                and item.value.id == "self":
            mentions[item.attr] = mentions.get(item.attr, 0) + 1
        elif type(item) is syntax.Call and current is not None and not deferred:
            func = item.func
            if type(func) is syntax.Attribute and type(func.value) is syntax.Name \
                    and func.value.id == "self":
                in_branch.append((item, func.attr, current[0], current[1]))
        elif type(item) is syntax.If and not deferred:
            decided = _test_param(item.test, defaults)
            if decided is not None:
                param, truth = decided
                stack.extend((s, (param, not truth), False) for s in reversed(item.orelse))
                stack.extend((s, (param, truth), False) for s in reversed(item.body))
                stack.append((item.test, current, False))
                continue
        stack.extend((child, current, deferred) for child in reversed(child_nodes(item)))
    counts: dict[str, int] = {}
    for _, method, _, _ in in_branch:
        counts[method] = counts.get(method, 0) + 1
    return tuple((method, param, taken, defaults[param])
                 for _, method, param, taken in in_branch
                 if counts[method] == mentions.get(method, 0))


def _init_defaults(node: ast.ClassDef) -> Optional[tuple[ast.FunctionDef, Defaults]]:
    """The class's own `__init__` and its parameters it never assigns, each with the truth of
    its constant default (None: no constant default); None as well when it holds no `if` (no
    call is then made in a branch)."""
    init = next((s for s in node.body if type(s) is syntax.FunctionDef and s.name == "__init__"),
                None)
    if init is None:
        return None
    args = init.args
    positional = (*args.posonlyargs, *args.args)
    defaults: Defaults = {a.arg: None for a in (*positional, *args.kwonlyargs)}
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    for arg, default in pairs:
        if type(default) is syntax.Constant:
            defaults[arg.arg] = bool(default.value)
    # a parameter `__init__` assigns (`preload = preload or cfg.preload`) is not what the
    # construction gave by the time it is tested: its tests decide nothing
    branches = False
    for item in subtree(init):
        if type(item) is syntax.Name and type(item.ctx) is not syntax.Load:
            defaults.pop(item.id, None)
        elif type(item) is syntax.If:
            branches = True
    return (init, defaults) if branches else None


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
