"""Instance handles (WS101/WS111/WS201): move creation out of `__init__` into a method.

`plan_attr` finds the statements to move (the creation and the contiguous statements that
configure the handle or derive objects from it) or says why that is unsafe. `rewrite_class`
applies one strategy to a class:
- worker-init: `_open_<attr>()` holds the statements; `__init__` calls it where they were;
  `__getstate__`/`__setstate__` drop and reopen; a module-level worker_init_fn reopens.
- lazy: the statements write private names in `_open_<attr>()`; a property per attribute
  reopens when the process id changed; `__getstate__` drops them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import libcst as cst

from ..registry import GENERIC_DERIVED_METHODS, Registry
from .cstutil import (
    BUILTIN_NAMES, Located, RenameSelfAttrs, ReplaceNames, bound_names, function_params,
    loaded_names, root_self_attr, self_attr, walk,
)
from .templates import BLANK, getstate_methods, lazy_property, open_method

# Statements that only configure a handle call one of these on it, or assign into it.
CONFIG_CALLS = frozenset({
    "mount", "update", "setdefault", "set", "add", "append", "extend", "register", "load",
    "set_trace_callback", "execute", "executescript", "row_factory", "create_function",
})


class Unfixable(Exception):
    """The fix would not be safe; the message says why (shown to the user)."""


@dataclass
class AttrPlan:
    """What moves for one handle attribute."""

    attr: str
    handle: str
    method: cst.FunctionDef
    statements: list[cst.BaseStatement]
    attrs: list[str]  # the handle attribute and attributes derived from it
    imports: list[cst.BaseStatement] = field(default_factory=list)  # function-local imports
    renames: dict[str, str] = field(default_factory=dict)  # `__init__` local → self attribute
    class_statement: Optional[cst.BaseStatement] = None  # a class attribute (WS103) instead
    keeps: dict[str, str] = field(default_factory=dict)  # local → new self attribute to store
    close_first: bool = False  # the library refuses a second open in one process (lmdb)
    moved_imports: list[cst.BaseStatement] = field(default_factory=list)

    @property
    def opener(self) -> str:
        return f"_open_{self.attrs[0].lstrip('_')}"


def find_class(module: cst.Module, name: str) -> Optional[cst.ClassDef]:
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == name:
            return statement
    return None


def find_method(cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def plan_attr(located: Located, cls: cst.ClassDef, method_name: str, attr: str, handle: str,
              line: int, col: int, registry: Registry) -> AttrPlan:
    method = find_method(cls, method_name)
    if method is None:
        raise Unfixable(f"cannot find {cls.name.value}.{method_name}")
    if not isinstance(method.body, cst.IndentedBlock):
        raise Unfixable(f"{cls.name.value}.{method_name} has a one-line body")
    if any(_assigns_name(s, "__slots__") or _annotates(s, "__slots__") for s in cls.body.body):
        raise Unfixable("the class uses __slots__ (the rewrite keeps state in __dict__)")
    body = list(method.body.body)
    index = _statement_at(located, body, line, col)
    if index is None:
        raise Unfixable(f"the handle is created inside a block (if/for/while/try/with) of "
                        f"{method_name}: move it out or fix by hand")
    first = body[index]
    created = _assigned_self_attr(first)
    if created is None:
        raise Unfixable("the handle is not assigned directly to an attribute of self "
                        "(a local variable, a tuple target or a container call)")
    attrs = [created]
    moved = [first]
    for statement in body[index + 1:]:
        derived = _derived_attr(statement, attrs, handle, registry)
        if derived is not None:
            attrs.append(derived)
        elif not _configures(statement, attrs):
            break
        moved.append(statement)
    rest = body[index + len(moved):]
    for statement in rest:
        for node in walk(statement):
            if isinstance(node, cst.BaseStatement) and (
                    _configures(node, attrs) or _assigned_self_attr(node) in attrs):
                raise Unfixable(f"self.{attrs[0]} is configured again later in {method_name}, "
                                "after other statements: move that configuration next to its "
                                "creation")
    htype = registry.lookup(handle)
    plan = AttrPlan(attr, handle, method, moved, attrs,
                    close_first=bool(htype and htype.single_open))
    _check_names(plan, located.module, body[:index], cls)
    _check_other_assignments(cls, method, attrs)
    return plan


def plan_class_attr(module: cst.Module, cls: cst.ClassDef, attr: str, handle: str) -> AttrPlan:
    """A class attribute handle: it becomes a lazily created per-process instance attribute."""
    statement = next((s for s in cls.body.body if _assigns_name(s, attr)), None)
    if statement is None:
        raise Unfixable(f"{cls.name.value}.{attr} is not a plain `{attr} = ...` class attribute")
    for node in walk(module):
        if isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(
                node.value, (cst.Name, cst.Call)) and self_attr(node) is None:
            raise Unfixable(f"{attr} is read through the class (not self), which a "
                            "per-instance handle cannot serve")
    small = _single(statement)
    assert isinstance(small, cst.Assign)
    created = cst.SimpleStatementLine(body=[cst.Assign(
        targets=[cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attr)))],
        value=small.value)])
    names = loaded_names(small.value) - BUILTIN_NAMES
    unknown = sorted(names - bound_names(list(module.body)))
    if unknown:
        raise Unfixable(f"the creation reads {unknown[0]!r}, a name of the class body")
    method = cst.FunctionDef(cst.Name("__class_body__"), cst.Parameters(),
                             cst.IndentedBlock([created]))
    return AttrPlan(attr, handle, method, [created], [attr], class_statement=statement)


def _annotates(statement: cst.BaseStatement, name: str) -> bool:
    small = _single(statement)
    return isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
        and small.target.value == name


def _assigns_name(statement: cst.BaseStatement, name: str) -> bool:
    small = _single(statement)
    return (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name)


def _statement_at(located: Located, body: Sequence[cst.BaseStatement], line: int, col: int
                  ) -> Optional[int]:
    for index, statement in enumerate(body):
        start, end = located.lines_of(statement)
        if start <= line <= end:
            return index if isinstance(statement, cst.SimpleStatementLine) else None
    return None


def _single(statement: cst.BaseStatement) -> Optional[cst.BaseSmallStatement]:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def _assigned_self_attr(statement: cst.BaseStatement) -> Optional[str]:
    small = _single(statement)
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return self_attr(small.targets[0].target)
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return self_attr(small.target)
    return None


def _derived_attr(statement: cst.BaseStatement, attrs: list[str], handle: str,
                  registry: Registry) -> Optional[str]:
    """`self.txn = self.env.begin()` / `self.data = self.f["x"]` → "txn" / "data"."""
    target = _assigned_self_attr(statement)
    small = _single(statement)
    if target is None or target in attrs or not isinstance(small, (cst.Assign, cst.AnnAssign)):
        return None
    value = small.value
    htype = registry.lookup(handle)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        method = value.func.attr.value
        derived = (htype.derived_methods if htype else ()) + tuple(GENERIC_DERIVED_METHODS)
        if method in derived and self_attr(value.func.value) in attrs:
            return target
    if isinstance(value, cst.Subscript) and self_attr(value.value) in attrs \
            and htype is not None and htype.derived_subscript and all(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
                for e in value.slice):
        return target
    if isinstance(value, cst.Call) and _callee_name(value).endswith("Stub") and any(
            self_attr(arg.value) in attrs for arg in value.args):
        return target
    return None


def _callee_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _configures(statement: cst.BaseStatement, attrs: list[str]) -> bool:
    """`self.s.headers.update(...)`, `self.s.mount(...)`, `self.s.auth = ...`, or an `if`
    whose branches only do that (`if token: self.s.headers["Authorization"] = ...`)."""
    if isinstance(statement, cst.If):
        branches = [statement.body]
        orelse = statement.orelse
        while orelse is not None:
            branches.append(orelse.body)
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        return all(isinstance(b, cst.IndentedBlock) and b.body
                   and all(_configures(s, attrs) for s in b.body) for b in branches)
    small = _single(statement)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        return isinstance(func, cst.Attribute) and root_self_attr(func.value) in attrs \
            and func.attr.value in CONFIG_CALLS
    if isinstance(small, cst.Assign):
        return all(root_self_attr(t.target) in attrs and self_attr(t.target) is None
                   for t in small.targets)
    if isinstance(small, cst.AugAssign):
        return root_self_attr(small.target) in attrs and self_attr(small.target) is None
    return False


def _check_names(plan: AttrPlan, module: cst.Module, before: list[cst.BaseStatement],
                 cls: cst.ClassDef) -> None:
    """Every name the moved statements read must still be there in the new method."""
    method = plan.method
    locals_ = set(function_params(method)) | bound_names(list(method.body.body))
    module_names = bound_names(list(module.body))
    local_imports = {n: s for s in before for n in bound_names([s])
                     if _single(s) is not None and isinstance(_single(s), (cst.Import,
                                                                             cst.ImportFrom))}
    kept = {local: attr for local, attr in _kept_on_self(before).items()
            if _assigned_once_in_class(cls, attr)}
    for name in sorted(set().union(*(loaded_names(s) for s in plan.statements))):
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
        small = _single(statement)
        if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and isinstance(small.value, cst.Name):
            attr = self_attr(small.targets[0].target)
            if attr is not None:
                kept.setdefault(small.value.value, attr)
    return kept


def _assigned_once_in_class(cls: cst.ClassDef, attr: str) -> bool:
    count = sum(1 for node in walk(cls) if isinstance(node, (cst.AssignTarget, cst.AugAssign))
                and self_attr(node.target) == attr)
    return count == 1


def _bound_once_before(method: cst.FunctionDef, name: str,
                       before: list[cst.BaseStatement]) -> bool:
    """A parameter never reassigned, or a local assigned once, at the top level, before the
    creation: its value there is final, so it can be kept on self for the new method."""
    assignments = sum(1 for node in walk(method.body) if _binds(node, name))
    if name in function_params(method):
        return assignments == 0
    return assignments == 1 and any(_assigns_name(s, name) for s in before)


def _binds(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For,
                         cst.CompFor, cst.NamedExpr)):
        target = node.target
        return name in bound_names([cst.SimpleStatementLine([cst.Expr(target)])]) or (
            isinstance(target, cst.Name) and target.value == name)
    if isinstance(node, cst.AsName):
        return isinstance(node.name, cst.Name) and node.name.value == name
    return False


def _not_rebound(method: cst.FunctionDef, name: str) -> bool:
    count = sum(1 for node in walk(method.body)
                if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name)
                and node.target.value == name)
    return count == 0


def _check_other_assignments(cls: cst.ClassDef, method: cst.FunctionDef, attrs: list[str]
                             ) -> None:
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef) or statement is method:
            continue
        for node in walk(statement):
            if isinstance(node, cst.AssignTarget) and self_attr(node.target) in attrs:
                raise Unfixable(f"self.{self_attr(node.target)} is also assigned in "
                                f"{statement.name.value}: the rewrite cannot follow it")


# --- rewriting ------------------------------------------------------------------------------

def rewrite_class(cls: cst.ClassDef, plans: list[AttrPlan], strategy: str) -> cst.ClassDef:
    """The class with every plan applied (one strategy for the whole class)."""
    for existing in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__"):
        if find_method(cls, existing) is not None:
            raise Unfixable(f"the class already defines {existing}: merge by hand")
    names_in_use = _names_in_use(cls)
    body = list(cls.body.body)
    new_members: list[cst.BaseStatement] = []
    dropped: list[str] = []
    for plan in plans:
        if plan.opener in names_in_use:
            raise Unfixable(f"the class already has a member named {plan.opener}")
        for local in plan.keeps:
            attr = f"_{local.lstrip('_')}"
            while attr in names_in_use:
                attr = f"_ws{attr}"
            plan.keeps[local] = attr
            plan.renames[local] = attr
            names_in_use.add(attr)
        statements = _prepared(plan, strategy, names_in_use)
        doc = f"Create this process's {plan.handle} (workersafe: once per DataLoader worker)."
        new_members.append(open_method(plan.opener, plan.handle, statements, doc)
                           .with_changes(leading_lines=[BLANK]))
        if strategy == "lazy":
            pid = f"_{plan.attrs[0].lstrip('_')}_pid"  # one per group: they open together
            for attr in plan.attrs:
                new_members.append(lazy_property(attr, _private(attr), pid, plan.opener,
                                                 plan.handle))
                dropped.append(_private(attr))
            dropped.append(pid)
        else:
            dropped += plan.attrs
        if plan.class_statement is not None:
            body = _remove_class_statement(body, plan.class_statement)
        else:
            body = _replace_in_method(body, plan, strategy)
    reopen = [p.opener for p in plans] if strategy == "worker-init" else []
    new_members += getstate_methods(dropped, reopen)
    insert_at = _after_init(body)
    body = body[:insert_at] + new_members + body[insert_at:]
    return cls.with_changes(body=cls.body.with_changes(body=body))


def _names_in_use(cls: cst.ClassDef) -> set[str]:
    names = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    for node in walk(cls):
        attr = self_attr(node) if isinstance(node, cst.Attribute) else None
        if attr:
            names.add(attr)
    return names


def _private(attr: str) -> str:
    return f"_{attr}" if not attr.startswith("_") else f"_ws{attr}"


def _prepared(plan: AttrPlan, strategy: str, names_in_use: set[str]) -> list[cst.BaseStatement]:
    """The moved statements, as they read inside the new method."""
    statements: list[cst.BaseStatement] = [
        s.with_changes(leading_lines=[]) for s in plan.imports]
    mapping = {n: cst.Attribute(cst.Name("self"), cst.Name(a)) for n, a in plan.renames.items()}
    renames = {a: _private(a) for a in plan.attrs} if strategy == "lazy" else {}
    if strategy == "lazy":
        taken = [renames[a] for a in plan.attrs if renames[a] in names_in_use]
        if taken:
            raise Unfixable(f"the class already uses self.{taken[0]}")
    if plan.close_first:  # the library allows one open per process: drop the old one first
        stored = [renames.get(a, a) for a in reversed(plan.attrs)]
        names = ", ".join(f'"{n}"' for n in stored) + ("," if len(stored) == 1 else "")
        statements.append(cst.parse_statement(
            f"for name in ({names}):  # one open per process: release the old one first\n"
            f"    self.__dict__.pop(name, None)\n"))
    for index, statement in enumerate(plan.statements):
        if mapping:
            statement = statement.visit(ReplaceNames(mapping))
        if renames:
            statement = statement.visit(RenameSelfAttrs(renames))
        if index == 0 and strategy != "lazy":  # lazy: comments above move with the code
            statement = statement.with_changes(leading_lines=[])
        statements.append(statement)
    return statements


def _replace_in_method(body: list[cst.BaseStatement], plan: AttrPlan, strategy: str
                       ) -> list[cst.BaseStatement]:
    out = []
    for member in body:
        if not (isinstance(member, cst.FunctionDef)
                and member.name.value == plan.method.name.value):
            out.append(member)
            continue
        statements = [s for s in member.body.body
                      if not any(s.deep_equals(i) for i in plan.moved_imports)]
        first = next(i for i, s in enumerate(statements) if s.deep_equals(plan.statements[0]))
        leading = statements[first].leading_lines
        count = len(plan.statements)
        keeps = [cst.parse_statement(f"self.{attr} = {local}\n")
                 for local, attr in plan.keeps.items()]
        if strategy == "worker-init":
            replacement = keeps + [cst.parse_statement(f"self.{plan.opener}()\n")]
        else:
            replacement = keeps
        if replacement:
            replacement[0] = replacement[0].with_changes(leading_lines=leading)
        statements = statements[:first] + replacement + statements[first + count:]
        if not statements:
            statements = [cst.parse_statement("pass\n")]
        out.append(member.with_changes(body=member.body.with_changes(body=statements)))
        plan.method = out[-1]  # later plans on the same method see the rewritten method
    return out


def _remove_class_statement(body: list[cst.BaseStatement], statement: cst.BaseStatement
                            ) -> list[cst.BaseStatement]:
    index = next(i for i, s in enumerate(body) if s is statement)
    rest = body[index + 1:]
    if rest and statement.leading_lines:  # the comments above it stay where they were
        rest[0] = rest[0].with_changes(leading_lines=[*statement.leading_lines,
                                                      *rest[0].leading_lines])
    out = body[:index] + rest
    return out or [cst.parse_statement("pass\n")]


def _after_init(body: list[cst.BaseStatement]) -> int:
    for index, statement in enumerate(body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            return index + 1
    return len(body)
