"""Which statements of the creating method move into the opener, or why none can.

The moved statements are the one that creates the handle (a whole `if`/`try`/`for`/`with`
when the creation sits inside one), the statements that derive objects from it (cursors,
transactions, children, stubs; also through a local: `f = h5py.File(p)`, `self.x = f["x"]`),
the ones that configure it, and the local values only those need (`retry = Retry(...)`). The
opener runs where the first of them stood; the statements left in between (the parent's own
work, such as a query whose result `__init__` reads) stay where they are, except a plain
assignment setting what a moved statement reads (`self.name = cfg.name` between the client and
`self.bucket = client.bucket(self.name)`), which runs before the opener when nothing in between
depends on the order.

The opener runs again in every worker and on unpickling, so the plan refuses, naming the
statement, when a moved statement does more than bind locals and attributes and create,
derive or configure handles: writes a file, mutates a global or an argument, calls this
project's code or `self.<method>()`, consumes an iterator."""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Optional, Sequence

import libcst as cst

from ..findings import FixPlan
from ..registry import VARYING_CALLS
from .cstutil import (
    BUILTIN_NAMES, Located, bound_names, dotted, function_params, is_none, loaded_names,
    root_self_attr, self_attr, single, small_statements, target_names, walk,
)
from .handles import HandleNames, in_full
from .nodememo import NodeMemo
from .plan import AttrPlan, Unfixable
from .rerun import MUTATING, RerunCheck
from .setstate import reopening

_CONTAINERS = ("list", "dict", "set")
# The refusal of a creation that may keep the handle a caller passes in (`self.h5 = source`).
KEPT_PARAMETER = "may keep a handle its caller passes in"
# (a creation reading a value that differs from call to call: the worker-init fix reopens what
# the parent opened, with the value the parent got)
VARYING = "differs in each process"


def find_method(cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def plan_attr(located: Located, cls: cst.ClassDef, fix: FixPlan, line: int,
              names: HandleNames) -> AttrPlan:
    method = find_method(cls, fix.method)
    if method is None:
        raise Unfixable(f"cannot find {cls.name.value}.{fix.method}")
    if not isinstance(method.body, cst.IndentedBlock):
        raise Unfixable(f"{cls.name.value}.{fix.method} has a one-line body")
    members = [s for s in cls.body.body if isinstance(s, cst.BaseStatement)]
    if any(assigns_name(s, "__slots__") or _annotates(s, "__slots__") for s in members):
        raise Unfixable("the class uses __slots__ (the rewrite keeps state in __dict__)")
    body = list(method.body.body)
    index = _statement_at(located, body, line)
    if index is None:
        raise Unfixable(f"cannot find the statement of {fix.method} that creates the handle")
    mover = _Mover(located, method, body, index, names, cls)
    mover.track_creation(fix)
    mover.follow()
    mover.check_holding(fix)
    mover.pull_containers()
    mover.pull_locals()
    mover.check()
    moved = [body[i] for i in sorted(mover.moved)]
    varying = varying_call(moved, names.imports)
    if varying:
        raise Unfixable(f"the creation calls {varying}(), whose value {VARYING}: fix by hand")
    htype = names.registry.lookup(fix.handle)
    order = _target_order(moved)  # (ties: `self.x, self.y = ...` in the order written)
    attrs = sorted(mover.attrs, key=lambda a: (_first_assignment(moved, a),
                                               order.get(a, len(order)), a))
    if not attrs:  # `self.blobs = list(client.list_blobs(...))`: each blob keeps the client
        raise Unfixable(f"{fix.attr} holds values made from the {fix.handle} (which keep it), "
                        "not the handle itself: list them in each worker by hand")
    plan = AttrPlan(fix.attr, fix.handle, method, moved, attrs,
                    close_first=bool(htype and htype.drop_before_reopen),
                    results=sorted(mover.results - mover.attrs),
                    exports={name: "" for name in sorted(mover.exports)},
                    hoisted=[body[i] for i in sorted(mover.hoisted)])
    if f"self.{plan.opener}" in names.factories:  # `self.env = self._open_env(p)`
        plan.opener_name = f"_reopen_{attrs[0].lstrip('_')}"
    kept = _kept_parameter(plan)
    if kept:
        raise Unfixable(f"{cls.name.value}.{fix.method} {KEPT_PARAMETER} ({kept}): each worker "
                        "would keep using the parent's; pass a path and open it here (see "
                        "`workersafe rule WS104`)")
    first = min(mover.moved)
    _check_names(plan, located.module, body[:first], cls, mover.inner_names())
    plan.nulled = _check_other_assignments(cls, method, attrs, nulled=not mover.block)
    return plan


class _Mover:
    """The growing set of moved statements (indexes into the method's body)."""

    def __init__(self, located: Located, method: cst.FunctionDef,
                 body: list[cst.BaseStatement], index: int, names: HandleNames,
                 cls: cst.ClassDef) -> None:
        self.located = located
        self.method = method
        self.body = body
        self.index = index
        self.names = names
        self.cls = cls
        self.moved: set[int] = {index}
        self.attrs: set[str] = set()  # attributes holding the handle or derived objects
        self.locals: set[str] = set()  # locals holding them
        self.results: set[str] = set()  # other attributes the moved statements set
        self.exports: set[str] = set()  # plain locals they bind that the rest of the method reads
        self.hoisted: set[int] = set()  # statements left in place that run before the opener
        self.block = False  # the creation is inside a compound statement (moved whole)
        self.params = set(function_params(method))
        self.rerun = RerunCheck(located.module, names,
                                bound_names(list(method.body.body)) - self.params)

    def line(self, index: int) -> int:
        return self.located.lines_of(self.body[index])[0]

    # --- what the creation is kept in ------------------------------------------------------

    def track_creation(self, fix: FixPlan) -> None:
        statement = self.body[self.index]
        small = single(statement)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                else [small.target]
            if len(targets) != 1:
                raise Unfixable("the handle is not assigned directly to an attribute of self "
                                "(a chained assignment)")
            target = targets[0]
            attr = self_attr(target)
            if attr is not None:
                self.attrs.add(attr)
            elif isinstance(target, cst.Name):
                self.locals.add(target.value)
            else:
                raise Unfixable("the handle is not assigned directly to an attribute of self "
                                "(a tuple target or a container item)")
            return
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) \
                and root_self_attr(small.value.func.value) is not None:
            self.attrs.add(root_self_attr(small.value.func.value) or "")  # self.envs.append(...)
            return
        if isinstance(statement, cst.SimpleStatementLine):
            raise Unfixable("the handle is not assigned directly to an attribute of self")
        # a compound statement: it moves whole; what its statements keep the handle in
        for _ in range(2):  # twice: a loop feeds later iterations
            for small in small_statements(statement):
                self._scan(small)
        self.block = True
        self._check_rerunnable(self.index)

    def check_holding(self, fix: FixPlan) -> None:
        """A handle made in a block: every attribute holding it is set in the block or by the
        statements after it that derive from it (`if c: self.env = lmdb.open(a) else: ...`,
        then `self.txn = self.env.begin()`), which move with it."""
        missing = [a for a in fix.holding_attrs if a not in self.attrs]
        if self.block and missing:
            raise Unfixable(f"self.{missing[0]} is not set in the block that creates the handle")

    def _scan(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            handle = self.names.derives(small.value, self.attrs, self.locals)
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                else [small.target]
            for target in targets:
                attr = self_attr(target)
                if isinstance(target, cst.Name) and handle:
                    self.locals.add(target.value)
                elif attr is not None:
                    (self.attrs if handle else self.results).add(attr)
                elif isinstance(target, cst.Subscript) and self_attr(target.value):
                    (self.attrs if handle else self.results).add(self_attr(target.value) or "")
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in MUTATING \
                    and self_attr(func.value) is not None:
                handle = any(self.names.derives(a.value, self.attrs, self.locals)
                             for a in small.value.args)
                (self.attrs if handle else self.results).add(self_attr(func.value) or "")

    # --- what follows it -------------------------------------------------------------------

    def follow(self) -> None:
        for index in range(self.index + 1, len(self.body)):
            statement = self.body[index]
            small = single(statement)
            target = _only_target(small)
            value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
            pairs = _unpacked(target, value)
            if pairs and value is not None and self._reads_tracked(value):
                derived = [self.names.derives(v, self.attrs, self.locals) for _, v in pairs]
                if any(derived):  # `self.x, self.y = f["x"], f["y"]`: each target its value
                    self._add(index)
                    for (element, _), kept in zip(pairs, derived):
                        attr = self_attr(element)
                        if attr is not None:
                            (self.attrs if kept else self.results).add(attr)
                        elif kept and isinstance(element, cst.Name):
                            self.locals.add(element.value)
                    continue
            if target is not None and value is not None and self._reads_tracked(value) \
                    and self.names.derives(value, self.attrs, self.locals):
                self._add(index)
                attr = self_attr(target)
                if attr is not None:
                    self.attrs.add(attr)
                elif isinstance(target, cst.Name):
                    self.locals.add(target.value)
                continue
            if self.names.configures(statement, self.attrs, self.locals):
                self._add(index)
                continue
            if loaded_names(statement) & self.locals:
                self._through_local(index, small)
                continue
            self._not_again(index)

    def _reads_tracked(self, node: cst.CSTNode) -> bool:
        """Built on a tracked handle (not a new one of its own: that is another finding)."""
        return bool(_read_attrs(node) & self.attrs or loaded_names(node) & self.locals)

    def _through_local(self, index: int, small: Optional[cst.BaseSmallStatement]) -> None:
        """A statement reading the handle through a local: after the move the local is gone
        from `__init__`, so it moves too if it only binds (`self.n = len(f["x"])`)."""
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        if not targets or not all(self_attr(t) is not None or isinstance(t, cst.Name)
                                  for t in targets):
            raise Unfixable(f"line {self.line(index)} uses the handle through the local "
                            f"{sorted(loaded_names(self.body[index]) & self.locals)[0]!r} "
                            "for other work: fix by hand")
        self._add(index)
        for target in targets:
            attr = self_attr(target)
            if attr is not None:
                self.results.add(attr)

    def _not_again(self, index: int) -> None:
        """A statement left in place must not set or configure the handle again."""
        for node in walk(self.body[index]):
            if not isinstance(node, cst.BaseStatement):
                continue
            again = _assigned_attrs(node) & self.attrs if isinstance(
                node, cst.SimpleStatementLine) else set()
            if again or self.names.configures(node, self.attrs, set()):
                attr = sorted(again)[0] if again else self._configured(node)
                raise Unfixable(f"self.{attr} is configured again later in "
                                f"{self.method.name.value}, inside other code (line "
                                f"{self.line(index)}): fix by hand")

    def _configured(self, node: cst.BaseStatement) -> str:
        for sub in walk(node):
            if isinstance(sub, cst.Attribute):
                attr = root_self_attr(sub)
                if attr in self.attrs:
                    return attr
        return sorted(self.attrs)[0]

    def _add(self, index: int) -> None:
        self._check_rerunnable(index)
        self.moved.add(index)

    # --- what the moved statements need ----------------------------------------------------

    def pull_containers(self) -> None:
        """`self.envs = []` before a loop that fills it: it moves too (else a second open
        would add to the old list)."""
        filled = {a for i in self.moved for a in _filled_attrs(self.body[i])}
        assigned = {a for i in self.moved for a in _assigned_attrs(self.body[i])}
        for attr in sorted(filled - assigned):
            found = next((i for i in range(self.index - 1, -1, -1)
                          if attr in _assigned_attrs(self.body[i])), None)
            small = single(self.body[found]) if found is not None else None
            if found is None or not isinstance(small, cst.Assign) \
                    or not _plain_container(small.value):
                raise Unfixable(f"self.{attr} is filled by the handle's setup but not created "
                                "as a plain list, dict or set in the same method: fix by hand")
            between = range(found + 1, self.index)
            if any(attr in _read_attrs(self.body[i]) for i in between):
                raise Unfixable(f"self.{attr} is used before it is filled: fix by hand")
            self.moved.add(found)

    def pull_locals(self) -> None:
        """Locals that moved statements read, bound in between by statements left in place
        (`retry = Retry(total=3)` before `self.s.mount(..., HTTPAdapter(max_retries=retry))`):
        they move too when they are plain values nothing else reads."""
        changed = True
        while changed:
            changed = False
            first = min(self.moved)
            for index in sorted(self.moved):
                needed = loaded_names(self.body[index])
                for other in range(first, index):
                    if other in self.moved:
                        continue
                    binds = bound_names([self.body[other]]) & needed
                    if not binds:
                        continue
                    name = sorted(binds)[0]
                    if not self._pullable(other):
                        raise Unfixable(f"{name!r}, which the handle's setup reads, is computed "
                                        f"at line {self.line(other)} by other code: fix by hand")
                    self._add(other)
                    changed = True

    def _pullable(self, index: int) -> bool:
        statement = self.body[index]
        small = single(statement)
        if not isinstance(small, cst.Assign) or not all(
                isinstance(t.target, cst.Name) for t in small.targets):
            return False
        bound = bound_names([statement])
        later = [i for i in range(index + 1, len(self.body)) if i not in self.moved]
        if any(bound & loaded_names(self.body[i]) for i in later):
            return False
        return not (_read_attrs(statement) & self.attrs)

    def inner_names(self) -> set[str]:
        return bound_names([self.body[i] for i in self.moved])

    # --- the promise: re-running the moved statements is safe ---------------------------

    def check(self) -> None:
        first = min(self.moved)
        kept = [i for i in range(first, len(self.body)) if i not in self.moved]
        inner = self.inner_names() - self.params - _comprehension_names(
            [self.body[i] for i in self.moved])
        for index in kept:
            used = sorted(loaded_names(self.body[index]) & inner)
            for name in used:
                if not self._exportable(name):
                    raise Unfixable(f"{name!r}, set with the handle, is read later in "
                                    f"{self.method.name.value} (line {self.line(index)}): fix "
                                    "by hand")
                self.exports.add(name)
        for index in sorted(self.moved):
            reads = _read_attrs(self.body[index]) - self.attrs
            for between in [i for i in kept if i < index and i not in self.hoisted]:
                setting = _assigned_attrs(self.body[between]) & reads
                if setting and not self._hoistable(between):
                    raise Unfixable(f"the handle's setup at line {self.line(index)} reads "
                                    f"self.{sorted(setting)[0]}, which is set after the handle "
                                    "is created: fix by hand")
                if setting:
                    self.hoisted.add(between)
            earlier = [i for i in kept if i < index and i not in self.hoisted]
            if index > first and not self._derives_only(index):
                users = [i for i in earlier if _read_attrs(self.body[i]) & self.attrs]
                if users:
                    raise Unfixable(f"the handle is used at line {self.line(users[0])} before "
                                    f"it is configured at line {self.line(index)}: fix by hand")

    def _hoistable(self, index: int) -> bool:
        """A statement left in place between the creation and a moved statement reading what
        it sets can run before the opener instead: it only binds attributes and locals, calls
        nothing of self, and nothing from the creation on (moved or left) reads or binds what
        it binds, or binds what it reads."""
        statement = self.body[index]
        smalls = list(small_statements(statement))
        if not isinstance(statement, cst.SimpleStatementLine) or not all(
                isinstance(s, (cst.Assign, cst.AnnAssign)) and s.value is not None
                and all(self_attr(t) is not None or isinstance(t, cst.Name)
                        for t in _plain_targets(s)) for s in smalls):
            return False
        for node in walk(statement):  # what a method of self reads; another handle
            if isinstance(node, cst.Call) and (root_self_attr(node.func) is not None
                                               or self.names.creation(node) is not None):
                return False
            if isinstance(node, cst.Arg) and isinstance(node.value, cst.Name) \
                    and node.value.value == "self":
                return False
        binds = bound_names([statement])
        sets = _assigned_attrs(statement)
        reads = loaded_names(statement)
        reads_attrs = _read_attrs(statement)
        if reads_attrs & self.attrs:
            return False
        for other in range(min(self.moved), index):
            if other in self.hoisted:
                continue
            before = self.body[other]
            if binds & (loaded_names(before) | bound_names([before])) \
                    or sets & (_read_attrs(before) | _assigned_attrs(before)) \
                    or reads & bound_names([before]) or reads_attrs & _assigned_attrs(before):
                return False
        return True

    def _exportable(self, name: str) -> bool:
        """A local the moved statements bind only by plain `name = value` assignments whose
        values use no handle: the opener can leave it on self for the rest of the method."""
        moved = [self.body[i] for i in self.moved]
        if any(name in _other_binding_targets(node) for statement in moved
               for node in walk(statement)):
            return False  # bound by a loop, `as`, `:=` or an augmented assignment
        bindings = [s for statement in moved for s in small_statements(statement)
                    if name in bound_names([s])]
        for small in bindings:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)):
                return False
            if loaded_names(small.value) & (self.locals | {name}) \
                    or _read_attrs(small.value) & self.attrs:
                return False
        return bool(bindings) and name not in self.locals

    def _derives_only(self, index: int) -> bool:
        small = single(self.body[index])
        target = _only_target(small)
        return target is not None and (self_attr(target) in self.attrs or (
            isinstance(target, cst.Name) and target.value in self.locals))

    def _check_rerunnable(self, index: int) -> None:
        self.rerun.statement(self.body[index], f"line {self.line(index)}", self.locals)


def _comprehension_names(statements: list[cst.BaseStatement]) -> set[str]:
    """Names only comprehensions bind (their own scope: nothing outside sees them)."""
    comp = {n for s in statements for node in walk(s) if isinstance(node, cst.CompFor)
            for n in target_names(node.target)}
    other = {n for s in statements for node in walk(s)
             if isinstance(node, (cst.AssignTarget, cst.For, cst.AsName, cst.NamedExpr))
             for n in target_names(node.name if isinstance(node, cst.AsName) else node.target)}
    return comp - other


def _plain_container(value: cst.BaseExpression) -> bool:
    """`[]`, `{}`, `[0]`, `list()`, `set()`: a container made of constants only."""
    if isinstance(value, cst.Call):
        return dotted(value.func) in _CONTAINERS and not value.args
    return isinstance(value, (cst.List, cst.Dict, cst.Set, cst.Tuple)) and not any(
        isinstance(n, (cst.Name, cst.Call, cst.Attribute)) for n in walk(value))


def _plain_targets(small: cst.BaseSmallStatement) -> list[cst.BaseExpression]:
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets]
    return [small.target] if isinstance(small, cst.AnnAssign) else []


def _only_target(small: Optional[cst.BaseSmallStatement]) -> Optional[cst.BaseExpression]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return small.targets[0].target
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return small.target
    return None


def _unpacked(target: Optional[cst.BaseExpression], value: Optional[cst.BaseExpression]
              ) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """`self.x, self.y = f["x"], f["y"]`: each target (an attribute of self or a name) with
    the value it gets; empty for any other assignment (one target, a starred element, a value
    that is not a display of as many elements)."""
    if not isinstance(target, (cst.Tuple, cst.List)) \
            or not isinstance(value, (cst.Tuple, cst.List)) \
            or len(target.elements) != len(value.elements) or len(target.elements) < 2:
        return []
    pairs = []
    for left, right in zip(target.elements, value.elements):
        if isinstance(left, cst.StarredElement) or isinstance(right, cst.StarredElement) \
                or not (self_attr(left.value) is not None or isinstance(left.value, cst.Name)):
            return []
        pairs.append((left.value, right.value))
    return pairs


def _assigned_attrs(statement: cst.CSTNode) -> set[str]:
    """Attributes of self a statement (re)binds, anywhere inside it."""
    found: set[str] = set()
    for node in walk(statement):
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            attr = self_attr(node.target)
            if attr is not None:
                found.add(attr)
            elif isinstance(node.target, (cst.Tuple, cst.List)):
                found |= {a for e in node.target.elements
                          for a in [self_attr(e.value)] if a is not None}
    return found


def _filled_attrs(statement: cst.CSTNode) -> set[str]:
    """Attributes of self a statement adds to: `self.envs.append(...)`, `self.envs[k] = ...`."""
    found: set[str] = set()
    for node in walk(statement):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in MUTATING:
            attr = self_attr(node.func.value)
            if attr is not None:
                found.add(attr)
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
            attr = self_attr(node.target.value)
            if attr is not None:
                found.add(attr)
    return found


def _other_binding_targets(node: cst.CSTNode) -> set[str]:
    """Names a node binds other than by a plain `=` assignment."""
    if isinstance(node, (cst.For, cst.CompFor, cst.NamedExpr, cst.AugAssign, cst.AnnAssign)):
        return target_names(node.target)
    if isinstance(node, cst.AsName):
        return target_names(node.name)
    return set()


def _read_attrs(statement: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    targets = {id(n.target) for n in walk(statement) if isinstance(n, cst.AssignTarget)}
    for node in walk(statement):
        if isinstance(node, cst.Attribute) and id(node) not in targets:
            attr = self_attr(node)
            if attr is not None:
                found.add(attr)
    return found


def _first_assignment(moved: list[cst.BaseStatement], attr: str) -> int:
    for position, statement in enumerate(moved):
        if attr in _assigned_attrs(statement) or attr in _filled_attrs(statement):
            return position
    return len(moved)


def _target_order(moved: list[cst.BaseStatement]) -> dict[str, int]:
    """The attributes of self the moved statements assign, in the order written (their
    targets, a tuple's elements one by one)."""
    order: dict[str, int] = {}
    for statement in moved:
        for small in small_statements(statement):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
            for target in targets:
                elements = [e.value for e in target.elements] \
                    if isinstance(target, (cst.Tuple, cst.List)) else [target]
                for element in elements:
                    attr = self_attr(element)
                    if attr is not None:
                        order.setdefault(attr, len(order))
    return order


def _annotates(statement: cst.BaseStatement, name: str) -> bool:
    small = single(statement)
    return isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
        and small.target.value == name


def assigns_name(statement: cst.BaseStatement, name: str) -> bool:
    small = single(statement)
    return (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name)


def _statement_at(located: Located, body: Sequence[cst.BaseStatement], line: int
                  ) -> Optional[int]:
    for index, statement in enumerate(body):
        start, end = located.lines_of(statement)
        if start <= line <= end:
            return index
    return None


# --- names the moved statements read ------------------------------------------------------

def _check_names(plan: AttrPlan, module: cst.Module, before: list[cst.BaseStatement],
                 cls: cst.ClassDef, inner: set[str]) -> None:
    """Every name the moved statements read must still be there in the new method."""
    method = plan.method
    locals_ = set(function_params(method)) | bound_names(list(method.body.body))
    module_names = bound_names(list(module.body))
    local_imports = {n: s for s in before for n in bound_names([s])
                     if isinstance(single(s), (cst.Import, cst.ImportFrom))}
    kept = {local: attr for local, attr in _kept_on_self(before).items()
            if _assigned_once_in_class(cls, attr)}
    read = set().union(*(loaded_names(s) for s in plan.statements)) - (inner - set(
        function_params(method)))
    for name in sorted(read):
        if name == "self" or name not in locals_:
            if name != "self" and name not in module_names and name not in BUILTIN_NAMES:
                raise Unfixable(f"the creation reads {name!r}, which is not defined at module "
                                "level")
            continue
        if name in local_imports:
            statement = local_imports[name]
            if statement not in plan.imports:
                plan.imports.append(statement)
                if not _used_outside(method, statement, plan.statements):
                    plan.moved_imports.append(statement)
        elif name in kept and _not_rebound(method, name):
            plan.renames[name] = kept[name]
        elif _bound_once_before(method, name, before):
            plan.keeps[name] = ""  # the attribute name is chosen with the class's names
        else:
            raise Unfixable(f"the creation reads {name!r}, a local of {method.name.value} that "
                            "changes after it is first set: fix by hand")


def varying_call(statements: Sequence[cst.BaseStatement],
                 imports: Mapping[str, str]) -> str:
    """The first call among `statements` whose value differs from call to call (registry
    `VARYING_CALLS`: `random.choice`, `uuid.uuid4`, `time.time`), or "". `imports`: the
    module's local names → what they import (`import_map`), so that `choice(paths)` after
    `from random import choice`, or `rnd.random()` after `import random as rnd`, is one."""
    for statement in statements:
        for node in walk(statement):
            if isinstance(node, cst.Call):
                name = dotted(node.func)
                full = in_full(name, imports)
                if name and any(full.startswith(v) if v.endswith(".") else full == v
                                for v in VARYING_CALLS):
                    return name
    return ""


def _used_outside(method: cst.FunctionDef, statement: cst.BaseStatement,
                  moved: list[cst.BaseStatement]) -> bool:
    """Does the method read a name this import binds anywhere but in the moved statements?"""
    names = bound_names([statement])
    skip = {id(s) for s in moved} | {id(statement)}
    return any(names & loaded_names(s) for s in method.body.body if id(s) not in skip)


def _kept_on_self(before: list[cst.BaseStatement]) -> dict[str, str]:
    """`self.url = url` before the creation: `url` can be read back as `self.url`."""
    kept: dict[str, str] = {}
    for statement in before:
        small = single(statement)
        if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and isinstance(small.value, cst.Name):
            attr = self_attr(small.targets[0].target)
            if attr is not None:
                kept.setdefault(small.value.value, attr)
    return kept


def _assigned_once_in_class(cls: cst.ClassDef, attr: str) -> bool:
    return _self_assignments(cls)[attr] == 1


def _count_self_assignments(cls: cst.ClassDef) -> Counter[Optional[str]]:
    """How often the class assigns each attribute of self (`=` and augmented)."""
    return Counter(self_attr(node.target) for node in walk(cls)
                   if isinstance(node, (cst.AssignTarget, cst.AugAssign)))


_self_assignments = NodeMemo(_count_self_assignments)


def _bound_once_before(method: cst.FunctionDef, name: str,
                       before: list[cst.BaseStatement]) -> bool:
    """A parameter never reassigned, or a local assigned once, at the top level, before the
    creation: its value there is final, so it can be kept on self for the new method."""
    assignments = _bindings(method.body)[name]
    if name in function_params(method):
        return assignments == 0
    return assignments == 1 and any(assigns_name(s, name) for s in before)


def _count_bindings(block: cst.BaseSuite) -> Counter[str]:
    """How many nodes of a block bind each name (an assignment, a loop, `as`, `:=`)."""
    counts: Counter[str] = Counter()
    for node in walk(block):
        counts.update(_binds(node))
    return counts


_bindings = NodeMemo(_count_bindings)


def _binds(node: cst.CSTNode) -> set[str]:
    if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For,
                         cst.CompFor, cst.NamedExpr)):
        target = node.target
        names = bound_names([cst.SimpleStatementLine([cst.Expr(target)])])
        return names | {target.value} if isinstance(target, cst.Name) else names
    if isinstance(node, cst.AsName):
        return {node.name.value} if isinstance(node.name, cst.Name) else set()
    return set()


def _not_rebound(method: cst.FunctionDef, name: str) -> bool:
    count = sum(1 for node in walk(method.body)
                if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name)
                and node.target.value == name)
    return count == 0


def _check_other_assignments(cls: cst.ClassDef, method: cst.FunctionDef, attrs: list[str],
                             nulled: bool = False) -> list[str]:
    """Refuses another method's assignment of a moved attribute. With `nulled` (the creation
    is not inside a block of its method, such as a lazy accessor's `if self.zf is None:`,
    whose own remedy is a process check), but for `self.env = None` (`__init__` setting it
    before calling the creating method, `close()` after closing it): the methods setting it
    to None, which the worker-init opener leaves as they are (the lazy strategy's property
    has no setter: it refuses them, `classfix.rewrite_class`)."""
    allow_none = nulled
    nulled_in: list[str] = []
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef) or statement is method:
            continue
        if statement.name.value == "__setstate__" and reopening(statement, attrs) is not None:
            continue  # the remedy reopening them after unpickling: it calls the opener now
        for node in walk(statement):
            if allow_none and isinstance(node, cst.Assign) and is_none(node.value) \
                    and statement.name.value != "__setstate__":
                nulled_in += [f"self.{a} = None in {statement.name.value}" for a in
                              (self_attr(t.target) for t in node.targets) if a in attrs]
                continue
            if isinstance(node, cst.AssignTarget) and self_attr(node.target) in attrs \
                    and not (allow_none and _nulling(statement, node)):
                why = ", which does more than restore __dict__ and reopen the handles: merge " \
                    "by hand" if statement.name.value == "__setstate__" else \
                    ": the rewrite cannot follow it"
                raise Unfixable(f"self.{self_attr(node.target)} is also assigned in "
                                f"{statement.name.value}{why}")
    return nulled_in


def _nulling(method: cst.FunctionDef, target: cst.AssignTarget) -> bool:
    """The target of a `self.x = None` assignment of the method (accepted above)."""
    return method.name.value != "__setstate__" and any(
        isinstance(node, cst.Assign) and is_none(node.value)
        and any(t is target for t in node.targets) for node in walk(method))


def _kept_parameter(plan: AttrPlan) -> str:
    """`self.h5 = source` among the moved statements, `source` a parameter of the method, also
    as one alternative (`source if isinstance(source, h5py.File) else h5py.File(source)`,
    `h5 or h5py.File(p)`): the handle may come in open, and reopening would keep the
    caller's."""
    params = set(function_params(plan.method)[1:])
    for statement in plan.statements:
        for node in walk(statement):
            if not isinstance(node, cst.Assign):
                continue
            kept = next((name for name in _alternatives(node.value) if name in params), None)
            if kept is None:
                continue
            for target in node.targets:
                attr = self_attr(target.target)
                if attr in plan.attrs:
                    return f"self.{attr} = {kept}"
    return ""


def _alternatives(value: cst.BaseExpression) -> list[str]:
    """The names an expression may evaluate to as it is: `x`, each branch of `a if c else b`,
    each operand of `a or b`."""
    if isinstance(value, cst.Name):
        return [value.value]
    if isinstance(value, cst.IfExp):
        return _alternatives(value.body) + _alternatives(value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return _alternatives(value.left) + _alternatives(value.right)
    return []
