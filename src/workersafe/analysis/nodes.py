"""Fast traversal of Python's `ast` for the small passes after the main walk (remedies,
process checks): `ast.iter_child_nodes` and `ast.walk` go through a generator per node and
try every field, which made them the largest cost of those passes on ML code.

Both skip what no pass reads: expression contexts (`Load`, `Store`), operators, and the
fields that hold identifiers, flags or constants rather than nodes."""

from __future__ import annotations

import ast
from typing import Optional

from . import syntax

# Fields that never hold a node, on every node type that has them (or only contexts and
# operators: leaves without fields).
_NOT_NODES = frozenset({
    "ctx", "op", "ops", "id", "attr", "arg", "asname", "module", "level", "conversion",
    "simple", "is_async", "kind", "type_comment", "kwd_attrs", "rest",
    "lineno", "tag",  # (`TypeIgnore`'s: the only node type with them as fields)
})
# Fields that never hold a node on some node types only (`TypeAlias.name` is a `Name`).
_NOT_NODES_OF: dict[str, frozenset[str]] = {
    "name": frozenset({"FunctionDef", "AsyncFunctionDef", "ClassDef", "ExceptHandler", "alias",
                       "MatchAs", "MatchStar", "TypeVar", "ParamSpec", "TypeVarTuple"}),
    "names": frozenset({"Global", "Nonlocal"}),
    "value": frozenset({"Constant", "MatchSingleton"}),
}
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
# The same fields in reverse order, per node type: a traversal pushing each node's children
# onto a stack in this order pops them in field order (`subtree`, `remedies.expression`).
# Every such field holds a node, a list of nodes (and of None: `Dict.keys`), or None.
REVERSED_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(kind: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS[kind] = tuple(
        f for f in kind._fields
        if f not in _NOT_NODES and kind.__name__ not in _NOT_NODES_OF.get(f, ()))
    REVERSED_FIELDS[kind] = fields[::-1]
    return fields


def reversed_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """`REVERSED_FIELDS[kind]`, computed on first use."""
    found = REVERSED_FIELDS.get(kind)
    if found is None:
        _fields(kind)
        found = REVERSED_FIELDS[kind]
    return found


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The children of `node` in `ast.iter_child_nodes` order, less contexts and operators."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _fields(kind)
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    out.append(item)
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def subtree(node: ast.AST, into_lambdas: bool = True) -> list[ast.AST]:
    """`node` and every node under it (less contexts and operators), in source order: each
    node before its children, children in field order. Not under a lambda's node unless
    `into_lambdas` (a lambda passed as `worker_init_fn=` is read on its own)."""
    out: list[ast.AST] = []
    stack: list[Optional[ast.AST]] = [node]
    pop, push, extend, add = stack.pop, stack.append, stack.extend, out.append
    fields_of = REVERSED_FIELDS
    lam = syntax.Lambda
    while stack:
        current = pop()
        if current is None:
            continue  # (a list's None: `Dict.keys` of `**d`, `kw_defaults`)
        add(current)
        kind = type(current)
        fields = fields_of.get(kind)
        if fields is None:
            fields = reversed_fields(kind)
        if not fields or (kind is lam and not into_lambdas):
            continue
        for name in fields:  # (reversed: popped in field order)
            value = getattr(current, name, None)
            if type(value) is list:
                if value:
                    extend(reversed(value))
            elif value is not None:
                push(value)
    return out


def breadth_first(node: ast.AST) -> list[ast.AST]:
    """`node` and every node under it in `ast.walk` order (breadth first), less contexts and
    operators: where the first node of a kind found matters, the same one as `ast.walk`'s."""
    out: list[ast.AST] = [node]
    add, extend = out.append, out.extend
    fields_of = _FIELDS
    index = 0
    while index < len(out):
        current = out[index]
        index += 1
        fields = fields_of.get(type(current))
        if fields is None:
            fields = _fields(type(current))
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                if value:
                    extend(v for v in value if v is not None)
            elif value is not None:
                add(value)
    return out
