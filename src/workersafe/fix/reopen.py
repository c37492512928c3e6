"""Reopening what the parent opened, with the same arguments: the worker-init fix of a handle
whose surroundings cannot move out of `__init__` (a local set with the handle is read later,
the handle is used through a local for other work, the creation reads a local that changes
later). `__init__` stays as written; the locals the creating call reads are kept on self just
before it (`self._zf_root = root`), and the opener makes the same call again from them in each
worker, then re-derives what the class keeps of the handle (a cursor, configuration)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from ..findings import FixPlan
from .cstutil import (
    BUILTIN_NAMES, Located, ReplaceNames, bound_names, function_params, is_absolute_import,
    loaded_names,
    module_bindings, self_attr, single, statements, transform, walk,
)
from .handles import HandleNames
from .classfix import _names_in_use, drop_statements
from .initplan import VARYING, find_method, varying_call
from .plan import Unfixable
from .templates import BLANK, OPENER_NAME, getstate_method, open_method


@dataclass
class ReopenPlan:
    """One handle reopened from the call the parent made."""

    attr: str  # the attribute holding the handle (the first, when a local feeds several)
    handle: str
    creation: cst.SimpleStatementLine  # `self.zf = ZipFile(root)` or `env = lmdb.open(p)`
    call: cst.Call
    local: str  # the local the creation binds ("" when it sets the attribute itself)
    holders: list[str]  # the attributes the handle is kept in (`self.env = env`)
    rerun: list[cst.BaseStatement] = field(default_factory=list)  # derive, configure again
    captured: dict[str, str] = field(default_factory=dict)  # local the call reads → attribute
    imports: list[cst.BaseStatement] = field(default_factory=list)  # `import x` of __init__
    nested: bool = False  # the creation sits in a block: the opener tests it happened
    derived: list[str] = field(default_factory=list)  # attributes derived from the handle
    close_first: bool = False
    # the project call making it (a holder class, a factory) → the handle's constructor
    factories: dict[str, str] = field(default_factory=dict)

    @property
    def marker(self) -> str:
        """The attribute whose presence says the parent made the handle."""
        return next(iter(self.captured.values()), f"_{self.attr.lstrip('_')}_opened")

    @property
    def attrs(self) -> list[str]:
        return [*self.holders, *self.derived]


def plan_reopen(located: Located, cls: cst.ClassDef, fix: FixPlan, line: int, col: int,
                names: HandleNames) -> ReopenPlan:
    """The reopen plan of the handle created at (line, col) in `__init__`, or Unfixable. A
    holder object (`self.reader = Reader(path)`) or a project call returning the handle
    (`self.env = open_env(p)`) is made again the same way: (line, col) is that call, which
    `names` knows (fix/factories.py checked it may run again)."""
    made_here = fix.kind == "instance" and not fix.via
    made_by_call = fix.kind in ("holder", "returned") and bool(fix.via)
    if fix.method != "__init__" or not (made_here or made_by_call):
        raise Unfixable("only a handle (or a holder of one) created in __init__ itself can be "
                        "reopened as made")
    method = find_method(cls, "__init__")
    call = located.call_at(line, col)
    if method is None or call is None or names.creation(call) is None:
        raise Unfixable("cannot find the creating call in __init__")
    creation = _statement_of(method, call)
    if creation is None:
        raise Unfixable("the creation is not a plain `x = <call>` statement")
    small = single(creation)
    assert isinstance(small, cst.Assign)
    target = small.targets[0].target
    attr = self_attr(target)
    local = target.value if isinstance(target, cst.Name) else ""
    if attr is None and not local:
        raise Unfixable("the creation is not assigned to an attribute of self or a local")
    if local and _bindings(method, local) != 1:
        raise Unfixable(f"the local {local!r} holding the handle is bound more than once")
    holders = [attr] if attr else _kept_from(method, local)
    bound = module_bindings(located.module) | BUILTIN_NAMES | {"self"}
    tracked_names = {local} if local else set()
    plan = ReopenPlan(holders[0] if holders else fix.attr, fix.handle, creation, call, local,
                      holders)
    plan.nested = not any(s is creation for s in method.body.body)
    if any(isinstance(n, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                          cst.GeneratorExp, cst.NamedExpr)) for n in walk(call)):
        raise Unfixable("the creating call holds a lambda, comprehension or `:=`")
    method_locals = set(function_params(method)) | bound_names(_simple_statements(method)) \
        | _block_targets(method)
    imported = {name: s for s in _simple_statements(method) if is_absolute_import(s)
                for name in bound_names([s])}
    used = _names_in_use(cls)
    for name in sorted(loaded_names(call) - {"self"}):
        if name in imported:
            plan.imports.append(imported[name].with_changes(leading_lines=[]))
        elif name in method_locals:
            plan.captured[name] = _free(_kept_name(plan.attr, name), used)
        elif name not in bound:
            raise Unfixable(f"the creating call reads {name!r}, which is not bound")
    htype = names.registry.lookup(fix.handle)
    plan.close_first = bool(htype and htype.drop_before_reopen)
    # with no attribute holding the handle itself, the opener binds the same local
    mapping = {local: cst.Attribute(cst.Name("self"), cst.Name(holders[0]))} \
        if local and holders else {}
    rebound = _rebound_after(method, creation)
    after = False
    for statement in _simple_statements(method):
        if statement is creation:
            after = True
            continue
        if not after:
            continue
        one = single(statement)
        kept = set(plan.attrs)
        derived_attr: Optional[str] = None
        if isinstance(one, cst.Assign) and len(one.targets) == 1:
            derived_attr = self_attr(one.targets[0].target)
            if derived_attr in plan.holders or (
                    derived_attr and not names.derives(one.value, kept, tracked_names)):
                derived_attr = None
        configures = derived_attr is None and names.configures(statement, kept, tracked_names)
        if derived_attr is None and not configures:
            continue
        reads = loaded_names(statement) - tracked_names - {"self"}
        for name in sorted(reads & method_locals):
            if name in rebound.get(id(statement), set()) or name in imported:
                raise Unfixable(f"what __init__ derives from the handle (line "
                                f"{located.positions[statement].start.line}) reads the local "
                                f"{name!r}, rebound after the handle is made")
            if name not in plan.captured:  # its value when the handle was made
                plan.captured[name] = _free(_kept_name(plan.attr, name), used)
        unknown = sorted(reads - bound - method_locals)
        if unknown:
            raise Unfixable(f"what __init__ derives from the handle (line "
                            f"{located.positions[statement].start.line}) reads {unknown[0]!r}, "
                            "which is not bound")
        captured_map = {n: cst.Attribute(cst.Name("self"), cst.Name(a))
                        for n, a in plan.captured.items() if n in reads}
        rerun: cst.BaseStatement = statement
        if captured_map:
            rerun = transform(rerun, ReplaceNames(captured_map))
        if mapping:
            rerun = transform(rerun, ReplaceNames(mapping))
        plan.rerun.append(rerun.with_changes(leading_lines=[]))
        if derived_attr:
            plan.derived.append(derived_attr)
    if fix.attr not in plan.attrs:
        raise Unfixable(f"the handle reaches self.{fix.attr} some other way than "
                        f"`self.{fix.attr} = {local or '...'}` or an object derived from it")
    if plan.marker in used:
        raise Unfixable(f"the class already uses self.{plan.marker}")
    varying = varying_call([plan.creation, *plan.rerun], names.imports)
    if varying:
        raise Unfixable(f"the creation calls {varying}(), whose value {VARYING}: made again, "
                        "it would differ from the parent's")
    return plan


def _kept_name(attr: str, local: str) -> str:
    """The attribute keeping the local `local` that the reopen of self.<attr> reads:
    `_zf_root` for `root`, `_h5_path` (not `_h5_h5_path`) for `h5_path`."""
    attr, local = attr.lstrip("_"), local.lstrip("_")
    return f"_{local}" if local.startswith(f"{attr}_") else f"_{attr}_{local}"


def _free(name: str, used: set[str]) -> str:
    while name in used:
        name = f"_ws{name}"
    return name


def _rebound_after(method: cst.FunctionDef, creation: cst.SimpleStatementLine
                   ) -> dict[int, set[str]]:
    """For each simple statement after the creation: the names bound since the creation (by
    the statements between, at any depth)."""
    out: dict[int, set[str]] = {}
    seen: set[str] = set()
    started = False
    for statement in _simple_statements(method):
        if statement is creation:
            started = True
            continue
        if started:
            out[id(statement)] = set(seen)
            seen |= bound_names([statement])
    return out


def rewrite_reopen(cls: cst.ClassDef, plans: list[ReopenPlan], state_type: str = ""
                   ) -> cst.ClassDef:
    """The class with the creations' locals kept on self, one opener making the same calls
    again, and the pickling methods. `state_type`: `__getstate__`'s return annotation in an
    annotated class ("" none; `fix/annotate.py`), whose opener returns None."""
    members = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
    taken = {m.name.value for m in members}
    for name in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", OPENER_NAME):
        if name in taken:
            raise Unfixable(f"the class already defines {name}: merge by hand")
    swap = {id(p.creation): p for p in plans}

    class Creations(cst.CSTTransformer):
        def leave_SimpleStatementLine(
                self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
        ) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement]]:
            plan = swap.get(id(original))
            if plan is None:
                return updated
            keeps = [cst.parse_statement(f"self.{attr} = {local}\n")
                     for local, attr in plan.captured.items()]
            if not keeps and plan.nested:
                keeps = [cst.parse_statement(f"self.{plan.marker} = True\n")]
            if not keeps:
                return updated
            keeps[0] = keeps[0].with_changes(leading_lines=original.leading_lines)
            return cst.FlattenSentinel([*keeps, updated.with_changes(leading_lines=[])])

    new = cls.visit(Creations())
    assert isinstance(new, cst.ClassDef)
    body: list[cst.BaseStatement] = []
    for plan in plans:
        inner: list[cst.BaseStatement] = list(plan.imports)
        if plan.close_first:
            inner += drop_statements(list(reversed(plan.attrs)), bool(state_type))
        mapping = {local: cst.Attribute(cst.Name("self"), cst.Name(attr))
                   for local, attr in plan.captured.items()}
        call = plan.call.visit(ReplaceNames(mapping)) if mapping else plan.call
        assert isinstance(call, cst.Call)
        target: cst.BaseAssignTargetExpression = cst.Attribute(
            cst.Name("self"), cst.Name(plan.holders[0])) if plan.holders else cst.Name(plan.local)
        inner.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], call)]))
        inner += [cst.parse_statement(f"self.{h} = self.{plan.holders[0]}\n")
                  for h in plan.holders[1:]]
        inner += plan.rerun
        if plan.nested:
            guard = cst.parse_statement(f'if "{plan.marker}" in vars(self):  # opened by the '
                                        "parent\n    pass\n")
            assert isinstance(guard, cst.If)
            body.append(guard.with_changes(body=guard.body.with_changes(body=inner)))
        else:
            body += inner
    what = " and ".join(p.attr for p in plans)
    opener = open_method(OPENER_NAME, body, f"Reopen this process's {what} as __init__ opened "
                         "it (in each DataLoader worker).", "None" if state_type else ""
                         ).with_changes(leading_lines=[BLANK])
    # an attribute __init__ also sets some other way (`self.zf = None` in the other branch)
    # is left out only when the parent opened it: the other value must reach spawned workers
    init = find_method(cls, "__init__")
    set_twice = _set_more_than_once(init) if init is not None else set()
    opened = [(p.marker, p.attrs) for p in plans if p.nested and set_twice & set(p.attrs)]
    conditional = {a for _, attrs in opened for a in attrs}
    dropped = [a for p in plans for a in p.attrs if a not in conditional]
    added = [opener, getstate_method(dropped, opened=opened, returns=state_type)]
    old = statements(new.body.body)
    at = next((i + 1 for i, s in enumerate(old)
               if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), len(old))
    return new.with_changes(body=new.body.with_changes(body=[*old[:at], *added, *old[at:]]))


def _set_more_than_once(method: cst.FunctionDef) -> set[str]:
    """The attributes of self that the method's statements assign more than once."""
    counts: dict[str, int] = {}
    for statement in _simple_statements(method):
        for small in statement.body:
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            while targets:
                target = targets.pop()
                if isinstance(target, (cst.Tuple, cst.List)):
                    targets += [e.value for e in target.elements]
                elif attr := self_attr(target):
                    counts[attr] = counts.get(attr, 0) + 1
    return {a for a, n in counts.items() if n > 1}


def _block_targets(method: cst.FunctionDef) -> set[str]:
    """Names bound by `for`, `with ... as`, `except ... as` and `:=` anywhere in the method."""
    out: set[str] = set()
    for node in walk(method.body):
        target = None
        if isinstance(node, (cst.For, cst.CompFor, cst.NamedExpr)):
            target = node.target
        elif isinstance(node, cst.AsName):
            target = node.name
        if target is not None:
            out |= {n.value for n in walk(target) if isinstance(n, cst.Name)}
    return out


def _statement_of(method: cst.FunctionDef, call: cst.Call
                  ) -> Optional[cst.SimpleStatementLine]:
    for statement in _simple_statements(method):
        small = single(statement)
        if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
            return statement
    return None


def _simple_statements(method: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    """The method's simple statement lines, in order, at any depth (not in nested defs)."""
    out: list[cst.SimpleStatementLine] = []

    def visit(node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(child, cst.SimpleStatementLine):
                out.append(child)
            else:
                visit(child)
    visit(method.body)
    return out


def _bindings(method: cst.FunctionDef, name: str) -> int:
    count = 0
    for node in walk(method.body):
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name) \
                and node.target.value == name:
            count += 1
        elif isinstance(node, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign,
                               cst.NamedExpr, cst.AsName)):
            target = getattr(node, "target", None) or getattr(node, "name", None)
            if isinstance(target, cst.CSTNode) and any(
                    isinstance(n, cst.Name) and n.value == name for n in walk(target)):
                count += 2  # rebound some other way: not a plain single binding
    return count


def _kept_from(method: cst.FunctionDef, local: str) -> list[str]:
    """The attributes `self.x = <local>` statements set."""
    out: list[str] = []
    for statement in _simple_statements(method):
        small = single(statement)
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) \
                and small.value.value == local:
            for target in small.targets:
                attr = self_attr(target.target)
                if attr and attr not in out:
                    out.append(attr)
    return out
