"""What a class's `__getstate__` pickles of the instance's attributes, key by key.

Read from the method's code, never guessed from names:
- a copy of `self.__dict__` (`self.__dict__.copy()`, `dict(self.__dict__)`, `vars(self)`,
  `super().__getstate__()`, `{**self.__dict__}`) minus the keys it drops — `state.pop("env")`,
  `del state["env"]`, `state["env"] = None`, `dict(self.__dict__, env=None)`, a loop over a
  literal (or class-level) tuple of names, a comprehension `{k: v for k, v in
  self.__dict__.items() if k not in ("env",)}` — pickles every other attribute ("all-but");
- any other returned value pickles just the attributes it reads (`return {"path":
  self.path}`: "only");
- what cannot be read (a key computed at run time, `__reduce__`) counts as deciding: "unknown"
  (nothing is taken to be pickled)."""

from __future__ import annotations

import ast
from typing import Optional, Union

from . import syntax
from ..facts import PickledState
from .values import is_self, self_attr, string

ALL_BUT, ONLY, UNKNOWN = "all-but", "only", "unknown"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Methods of the state dict that only read it.
_READS = frozenset({"get", "copy", "keys", "items", "values"})
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class _Unknown(Exception):
    """The method does something to the state that cannot be read key by key."""


def pickled_state(node: ast.ClassDef) -> Optional[PickledState]:
    """None when the class defines neither `__getstate__` nor `__reduce__`/`__reduce_ex__`."""
    methods = {m.name: m for m in node.body if isinstance(m, _FUNCTIONS)}
    if "__reduce__" in methods or "__reduce_ex__" in methods:
        return PickledState(UNKNOWN)
    getstate = methods.get("__getstate__")
    if getstate is None:
        return None
    try:
        return _GetState(_class_names(node)).read(getstate)
    except _Unknown:
        return PickledState(UNKNOWN)


def _class_names(node: ast.ClassDef) -> dict[str, tuple[str, ...]]:
    """Class-level tuples (lists, sets) of strings: `_HANDLES = ("env", "txn")`."""
    out: dict[str, tuple[str, ...]] = {}
    for stmt in node.body:
        if isinstance(stmt, syntax.Assign):
            names = _strings(stmt.value)
            if names is not None:
                out.update((t.id, names) for t in stmt.targets if isinstance(t, syntax.Name))
    return out


def _strings(node: ast.AST) -> Optional[tuple[str, ...]]:
    if isinstance(node, (syntax.Tuple, syntax.List, syntax.Set)):
        found = [string(e) for e in node.elts]
        if all(s is not None for s in found):
            return tuple(s for s in found if s is not None)
    return None


class _GetState:
    def __init__(self, class_names: dict[str, tuple[str, ...]]) -> None:
        self.class_names = class_names
        self.states: dict[str, set[str]] = {}  # local → the keys dropped from it
        self.loops: dict[str, tuple[str, ...]] = {}  # loop variable → the names it takes
        self.results: list[PickledState] = []
        self.others: set[str] = set()  # other locals assigned (what they hold is not read)

    def read(self, node: Function) -> PickledState:
        self.block(node.body)
        if not self.results:
            raise _Unknown()
        return _union(self.results)

    def names_of(self, node: ast.expr) -> Optional[tuple[str, ...]]:
        """The constant names an expression lists: a literal, or `self.X`/`X` of the class."""
        found = _strings(node)
        if found is not None:
            return found
        attr = self_attr(node)
        key = attr or (node.id if isinstance(node, syntax.Name) else "")
        return self.class_names.get(key)

    def key(self, node: ast.expr) -> tuple[str, ...]:
        """The key(s) a subscript or pop names: a constant, or a loop variable over names."""
        text = string(node)
        if text is not None:
            return (text,)
        if isinstance(node, syntax.Name) and node.id in self.loops:
            return self.loops[node.id]
        raise _Unknown()

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, syntax.Assign):
            self.assign(stmt)
        elif isinstance(stmt, syntax.Delete):
            for target in stmt.targets:
                self.drop_subscript(target)
        elif isinstance(stmt, syntax.Expr) and isinstance(stmt.value, syntax.Call):
            self.call(stmt.value)
        elif isinstance(stmt, syntax.Return):
            self.results.append(self.returned(stmt.value))
        elif isinstance(stmt, (syntax.For, syntax.AsyncFor)) \
                and isinstance(stmt.target, syntax.Name):
            names = self.names_of(stmt.iter)
            if names is None:
                raise _Unknown()
            self.loops[stmt.target.id] = names
            self.block(stmt.body)
            del self.loops[stmt.target.id]
        elif isinstance(stmt, (syntax.If, syntax.Try, syntax.With)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, syntax.stmt):
                    self.statement(child)
                elif isinstance(child, syntax.ExceptHandler):
                    self.block(child.body)
        elif not isinstance(stmt, (syntax.Pass, syntax.Expr)):
            raise _Unknown()

    def assign(self, stmt: ast.Assign) -> None:
        if isinstance(stmt.value, syntax.Call):
            self.call(stmt.value)  # `env = state.pop("env")`
        for target in stmt.targets:
            if isinstance(target, syntax.Name):
                dropped = self.copy_of_dict(stmt.value)
                if dropped is not None:
                    self.states[target.id] = dropped
                else:
                    self.states.pop(target.id, None)
                    self.others.add(target.id)
            elif isinstance(target, syntax.Subscript) and self.state_name(target.value):
                self.drop_subscript(target)  # `state["env"] = None`: replaced
            elif not isinstance(target, syntax.Name):
                raise _Unknown()

    def state_name(self, node: ast.expr) -> str:
        return node.id if isinstance(node, syntax.Name) and node.id in self.states else ""

    def drop_subscript(self, target: ast.expr) -> None:
        if isinstance(target, syntax.Subscript):
            name = self.state_name(target.value)
            if name:
                self.states[name].update(self.key(target.slice))
                return
        raise _Unknown()

    def call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, syntax.Attribute):
            name = self.state_name(func.value)
            if name and func.attr == "pop" and call.args:
                self.states[name].update(self.key(call.args[0]))
                return
            if name and func.attr == "update" and not call.args:
                self.states[name].update(k.arg for k in call.keywords if k.arg)
                return
            if name and func.attr not in _READS:
                raise _Unknown()  # `state.clear()`, `state.update(other)`, ...

    def copy_of_dict(self, value: ast.expr) -> Optional[set[str]]:
        """The keys dropped when `value` is a copy of the instance's `__dict__` (None: it is
        not one)."""
        if _is_instance_dict(value):
            return set()
        if isinstance(value, syntax.Call):
            func = value.func
            if isinstance(func, syntax.Attribute) and func.attr == "copy" and not value.args:
                inner = self.copy_of_dict(func.value)
                return set(inner) if inner is not None else None
            if isinstance(func, syntax.Name) and func.id == "dict" and len(value.args) == 1:
                inner = self.copy_of_dict(value.args[0])
                if inner is not None:  # `dict(self.__dict__, env=None)`
                    return inner | {k.arg for k in value.keywords if k.arg}
            if isinstance(func, syntax.Attribute) and func.attr in ("copy", "deepcopy") \
                    and isinstance(func.value, syntax.Name) and func.value.id == "copy" \
                    and len(value.args) == 1:
                return self.copy_of_dict(value.args[0])
        if isinstance(value, syntax.Name) and value.id in self.states:
            return set(self.states[value.id])
        if isinstance(value, syntax.Dict) and value.keys and value.keys[0] is None:
            inner = self.copy_of_dict(value.values[0])  # `{**self.__dict__, "env": None}`
            if inner is not None:
                keys = [string(k) if k is not None else None for k in value.keys[1:]]
                if all(keys):
                    return inner | {k for k in keys if k}
        if isinstance(value, syntax.DictComp):
            return self.filtered_dict(value)
        return None

    def filtered_dict(self, comp: ast.DictComp) -> Optional[set[str]]:
        """`{k: v for k, v in self.__dict__.items() if k not in ("env",)}`."""
        if len(comp.generators) != 1:
            return None
        gen = comp.generators[0]
        it = gen.iter
        if not (isinstance(it, syntax.Call) and isinstance(it.func, syntax.Attribute)
                and it.func.attr == "items" and self.copy_of_dict(it.func.value) is not None):
            return None
        target = gen.target
        if not (isinstance(target, syntax.Tuple) and len(target.elts) == 2
                and isinstance(target.elts[0], syntax.Name)
                and isinstance(target.elts[1], syntax.Name)
                and isinstance(comp.key, syntax.Name) and comp.key.id == target.elts[0].id
                and isinstance(comp.value, syntax.Name) and comp.value.id == target.elts[1].id):
            raise _Unknown()
        key = target.elts[0].id
        dropped = set(self.copy_of_dict(it.func.value) or ())
        for test in gen.ifs:
            dropped |= self.excluded(test, key)
        return dropped

    def excluded(self, test: ast.expr, key: str) -> set[str]:
        """The names a comprehension's condition leaves out: `k not in (...)`, `k != "env"`,
        joined by `and`."""
        if isinstance(test, syntax.BoolOp) and isinstance(test.op, syntax.And):
            return {n for value in test.values for n in self.excluded(value, key)}
        if isinstance(test, syntax.Compare) and len(test.ops) == 1 \
                and isinstance(test.left, syntax.Name) and test.left.id == key:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, syntax.NotIn):
                names = self.names_of(right)
                if names is not None:
                    return set(names)
            if isinstance(op, syntax.NotEq) and string(right) is not None:
                return {string(right) or ""}
        raise _Unknown()

    def returned(self, value: Optional[ast.expr]) -> PickledState:
        if value is None:
            raise _Unknown()
        dropped = self.copy_of_dict(value)
        if dropped is not None:
            return PickledState(ALL_BUT, tuple(sorted(dropped)))
        if any(isinstance(n, syntax.Name) and (n.id in self.states or n.id in self.others)
               for n in ast.walk(value)):
            raise _Unknown()  # `(self.__class__, state)`, a local built before
        if any(isinstance(n, syntax.Attribute) and n.attr == "__dict__" for n in ast.walk(value)):
            raise _Unknown()
        kept = {a for n in ast.walk(value) for a in [self_attr(n)] if a}
        return PickledState(ONLY, tuple(sorted(kept)))


def _is_instance_dict(node: ast.expr) -> bool:
    """`self.__dict__`, `vars(self)`, `super().__getstate__()`."""
    if isinstance(node, syntax.Attribute) and node.attr == "__dict__" and is_self(node.value):
        return True
    if isinstance(node, syntax.Call):
        func = node.func
        if isinstance(func, syntax.Name) and func.id == "vars" and len(node.args) == 1 \
                and is_self(node.args[0]):
            return True
        if isinstance(func, syntax.Attribute) and func.attr == "__getstate__" \
                and isinstance(func.value, syntax.Call) \
                and isinstance(func.value.func, syntax.Name) \
                and func.value.func.id == "super":
            return True
    return False


def _union(results: list[PickledState]) -> PickledState:
    """What some return carries: an attribute is pickled if any return pickles it."""
    if any(r.mode == UNKNOWN for r in results):
        return PickledState(UNKNOWN)
    every = [set(r.names) for r in results if r.mode == ALL_BUT]
    kept = {n for r in results if r.mode == ONLY for n in r.names}
    if every:
        dropped = set.intersection(*every) - kept
        return PickledState(ALL_BUT, tuple(sorted(dropped)))
    return PickledState(ONLY, tuple(sorted(kept)))


__all__ = ["pickled_state", "ALL_BUT", "ONLY", "UNKNOWN"]
