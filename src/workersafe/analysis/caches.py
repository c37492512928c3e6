"""Class-level handle caches: a container in a class body (`_envs = {}`) that a method fills
with handles (`Frames._envs[p] = lmdb.open(p)`, `cls._envs[p] = ...`, `self._envs[p] = ...`,
`Frames._envs.setdefault(p, lmdb.open(p))`). It is one object per process, shared by every
instance: what the parent puts there while constructing a dataset, forked workers inherit.

A small pass over each class after the main walk, on the same value model (the walk's import
scope, module bindings, handle lookups and process identities)."""

from __future__ import annotations

import ast
from typing import Union

from . import syntax
from ..records import field, record
from .nodes import breadth_first, child_nodes
from .state import ClassState, Env, FunctionState, Handle, MethodState, State
from .values import Evaluator, call_args, is_self, self_attr

# Calls that make an empty container (the class-level cache's initial value).
_CONTAINER_CALLS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict",
                              "WeakValueDictionary"})
# Methods that put a value into a container: `append(h)`, `setdefault(k, h)`, ...
_ADDERS = frozenset({"append", "add", "insert", "setdefault", "extend"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@record()
class ClassCaches:
    """What the pass found in one class."""

    stores: list[tuple[str, str, Handle]] = field(default_factory=list)  # (attr, method, h)
    containers: set[str] = field(default_factory=set)  # class-level containers filled so
    class_calls: list[tuple[str, str]] = field(default_factory=list)  # (method, `Cls.m()`)


def class_caches(node: ast.ClassDef, cls: ClassState, state: State, ev: Evaluator
                 ) -> ClassCaches:
    found = ClassCaches()
    containers = _class_containers(node)
    if not containers:
        return found
    # only the methods reading a container through self, cls or the class (the walk's reads)
    reading = {m.name for m in cls.methods if m.attrs_read & containers}
    methods = [m for m in node.body if isinstance(m, _FUNCTIONS)]
    for method in methods:
        if method.name in reading:
            _Method(found, containers, cls, method.name, state, ev).read(method)
    if found.stores:
        for method in methods:  # the others, for their `Frames._env(p)` calls
            if method.name not in reading:
                _Method(found, containers, cls, method.name, state, ev).read(method)
        # `self._envs = {}` in a method: an instance attribute after all
        shadowed = {attr for m in methods for attr in _instance_assigned(m)}
        found.stores = [s for s in found.stores if s[0] not in shadowed]
    else:
        found.class_calls = []
    found.containers = {attr for attr, _, _ in found.stores}
    return found


def _class_containers(node: ast.ClassDef) -> set[str]:
    """Names the class body binds to an empty-or-literal container."""
    out: set[str] = set()
    for stmt in node.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(stmt, syntax.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, syntax.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is not None and _is_container(value):
            out.update(t.id for t in targets if isinstance(t, syntax.Name))
    return out


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, (syntax.Dict, syntax.List, syntax.Set)):
        return True
    if isinstance(value, syntax.Call):
        func = value.func
        name = func.id if isinstance(func, syntax.Name) else \
            func.attr if isinstance(func, syntax.Attribute) else ""
        return name in _CONTAINER_CALLS
    return False


def _instance_assigned(method: Function) -> set[str]:
    """`self.x = ...` anywhere in the method: an instance attribute shadowing the class's."""
    return {attr for node in ast.walk(method) if isinstance(node, (syntax.Assign, syntax.AnnAssign))
            for target in (node.targets if isinstance(node, syntax.Assign) else [node.target])
            for attr in [self_attr(target)] if attr}


class _Method:
    """One method: the handles it stores in a class-level container, in statement order (its
    locals bound first), skipping stores keyed by, or guarded by, the process identity."""

    def __init__(self, found: ClassCaches, containers: set[str], cls: ClassState, name: str,
                 state: State, ev: Evaluator) -> None:
        self.found = found
        self.containers = containers
        self.cls = cls
        self.name = name
        self.state = state
        self.ev = ev
        # locals bound to a container (`bank = Frames._envs`): stores through them fill it
        self.aliases: dict[str, str] = {}

    def read(self, node: Function) -> None:
        state = self.state
        func = FunctionState(node.name, f"{self.cls.qualname}.{node.name}", False, False,
                             Env(state.module_env), MethodState(node.name))
        state.push(self.cls, func)
        try:
            self.block(node.body, False)
        finally:
            state.pop(2)

    def container(self, expr: ast.expr) -> str:
        """`self.x`, `cls.x` or `<Class>.x` for a class-level container x, or a local bound
        to one; else ""."""
        if isinstance(expr, syntax.Name):
            return self.aliases.get(expr.id, "")
        if not isinstance(expr, syntax.Attribute) or expr.attr not in self.containers:
            return ""
        value = expr.value
        if is_self(value) or (isinstance(value, syntax.Name) and value.id == self.cls.name):
            return expr.attr
        return ""

    def block(self, body: list[ast.stmt], guarded: bool) -> None:
        for stmt in body:
            self.statement(stmt, guarded)

    def statement(self, stmt: ast.stmt, guarded: bool) -> None:
        if isinstance(stmt, (*_FUNCTIONS, syntax.ClassDef)):
            return
        ev, env = self.ev, self.state.env
        if isinstance(stmt, syntax.Assign):
            handle = ev.handle_of(stmt.value)
            for target in stmt.targets:
                if isinstance(target, syntax.Name):
                    if handle is not None:
                        env.handles[target.id] = handle
                    env.assign(target.id, ev.value_of(stmt.value))
                    aliased = self.container(stmt.value)
                    if aliased:
                        self.aliases[target.id] = aliased
                    else:
                        self.aliases.pop(target.id, None)
                elif isinstance(target, syntax.Subscript) and handle is not None:
                    attr = self.container(target.value)
                    if attr and not guarded and not ev.is_identity(target.slice):
                        self.store(attr, handle)
        elif isinstance(stmt, syntax.If):
            inner = guarded or ev.is_identity(stmt.test)
            self.block(stmt.body, inner)
            self.block(stmt.orelse, inner)
            return
        for child in child_nodes(stmt):  # (ast.iter_child_nodes less operators: the same)
            if isinstance(child, syntax.stmt):
                self.statement(child, guarded)
            elif isinstance(child, syntax.expr):
                for node in breadth_first(child):  # (ast.walk's order: that of the stores)
                    if isinstance(node, syntax.Call):
                        self.call(node, guarded)
            else:  # except handlers, match cases, with items
                self.block([s for s in child_nodes(child) if isinstance(s, syntax.stmt)],
                           guarded)

    def call(self, node: ast.Call, guarded: bool) -> None:
        func = node.func
        if not isinstance(func, syntax.Attribute):
            return
        if isinstance(func.value, syntax.Name) and func.value.id == self.cls.name:
            self.found.class_calls.append((self.name, func.attr))  # `Frames._env(p)`
        attr = self.container(func.value)
        if not attr or func.attr not in _ADDERS or guarded:
            return
        args = call_args(node)
        if func.attr == "setdefault" and args and self.ev.is_identity(args[0].value):
            return
        for arg in args:
            handle = self.ev.handle_of(arg.value)
            if handle is not None:
                self.store(attr, handle)

    def store(self, attr: str, handle: Handle) -> None:
        if not handle.closed:
            self.found.stores.append((attr, self.name, handle))
