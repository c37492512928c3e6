"""Rewriting a class so each process opens its own handles (WS101/WS111/WS201 instance
handles, WS103/WS113 class attributes). What moves is planned in `initplan`; one strategy
applies to the whole class:
- worker-init: `open_handles()` holds the moved statements; `__init__` calls it where the
  first of them stood; `__getstate__` leaves the handles out; the generic worker init of the
  script building the loaders calls `open_handles()` in each worker.
- lazy: the statements write private names; a property per attribute reopens when the
  process id changed (running them itself, or `_open_<attr>()` when they open several
  attributes or `__init__` needs them too); `__getstate__` drops them. When the moved statements
  also set values the parent needs (`self.lengths`), `__init__` still runs the opener."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import libcst as cst

from .annotate import Typed
from .foldopener import NamedOnly, fold_emptied
from .handles import HandleNames
from .cstutil import (
    BUILTIN_NAMES, RenameSelfAttrs, ReplaceNames, bound_names, dotted, leading_lines,
    loaded_names, realigned, self_attr, single, statements, transform, walk,
    with_leading_lines,
)
from .getstate import (
    extended_getstate, kept_reason, left_out, live_problem, without_key_errors,
)
from .initplan import _assigned_attrs, _read_attrs, assigns_name, find_method
from .plan import AttrPlan, Unfixable
from .probes import probed_attrs
from .setstate import only_restores, reopened_by, reopening
from .style import max_line
from .wrap import WrapLong
from .templates import (
    BLANK, OPENER_NAME, getstate_method, lazy_property, open_method,
)


def find_class(module: cst.Module, name: str) -> Optional[cst.ClassDef]:
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == name:
            return statement
    return None


def plan_class_attr(module: cst.Module, cls: cst.ClassDef, attr: str, handle: str,
                    handles: HandleNames) -> AttrPlan:
    """A class attribute handle: it becomes a lazily created per-process instance attribute.
    The class body's statements configuring it after the creation
    (`session.headers.update(...)`) move with it, as `self.<attr>`; any other use of the
    bare name in the class body is refused."""
    body = statements(cls.body.body)
    statement = next((s for s in body if assigns_name(s, attr)), None)
    if statement is None:
        raise Unfixable(f"{cls.name.value}.{attr} is not a plain `{attr} = ...` class attribute")
    configures = _class_body_configures(module, body[body.index(statement) + 1:], attr,
                                        handles)
    for node in walk(module):
        if isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(
                node.value, (cst.Name, cst.Call)) and self_attr(node) is None:
            raise Unfixable(f"{attr} is read through the class (not self), which a "
                            "per-instance handle cannot serve")
    small = single(statement)
    assert isinstance(small, cst.Assign)
    created = cst.SimpleStatementLine(body=[cst.Assign(
        targets=[cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attr)))],
        value=small.value)])
    names = loaded_names(small.value) - BUILTIN_NAMES
    unknown = sorted(names - bound_names(list(module.body)))
    if unknown:
        raise Unfixable(f"the creation reads {unknown[0]!r}, a name of the class body")
    as_self = ReplaceNames({attr: cst.Attribute(cst.Name("self"), cst.Name(attr))})
    moved: list[cst.BaseStatement] = [created]
    moved += [realigned(s, transform(s, as_self)) for s in configures]
    method = cst.FunctionDef(cst.Name("__class_body__"), cst.Parameters(),
                             cst.IndentedBlock(moved))
    return AttrPlan(attr, handle, method, moved, [attr], class_statement=statement,
                    class_configures=configures)


def _class_body_configures(module: cst.Module, later: list[cst.BaseStatement], attr: str,
                           names: HandleNames) -> list[cst.BaseStatement]:
    """The class body's statements after the creation reading the bare name: each must only
    configure the handle (and read nothing else of the class body), else the fix refuses
    (the name is gone from the class body once the handle is per process)."""
    configures: list[cst.BaseStatement] = []
    module_names = bound_names(list(module.body))
    for statement in later:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue  # a bare name in a method is a global, not the class attribute
        read = loaded_names(statement)
        if attr not in read and attr not in bound_names([statement]):
            continue
        others = sorted(read - BUILTIN_NAMES - module_names - {attr})
        if not names.configures(statement, set(), {attr}) or others:
            line = cst.Module([]).code_for_node(statement).strip().splitlines()[0]
            raise Unfixable(f"the class body uses {attr} after creating it (`{line}`), "
                            "which a per-instance handle cannot serve: fix by hand")
        configures.append(statement)
    return configures


# --- rewriting ------------------------------------------------------------------------------

def rewrite_class(cls: cst.ClassDef, plans: list[AttrPlan], strategy: str, base: str = "",
                  typed: Optional[Typed] = None, named_only: Optional[NamedOnly] = None,
                  columns: Optional[tuple[int, int]] = None) -> cst.ClassDef:
    """The class with every plan applied (one strategy for the whole class). `base`: the
    strategy a base class was fixed with in the same run, whose pickling methods ours extend.
    `typed`: the class is annotated (`fix/annotate.py`), and so is what the fix adds.
    `named_only`: how the program names a method, for an emptied opener to fold away
    (`fix/foldopener.py`). `columns`: the class's column and the file's indent width, for the
    long lines of what the fix adds to be wrapped (`fix/wrap.py`; None: left as they are)."""
    none = "None" if typed is not None else ""
    existing = custom_pickling(cls)
    if existing:
        raise Unfixable(f"the class already defines {existing}: merge by hand")
    body = statements(cls.body.body)
    getstate = find_method(cls, "__getstate__")
    if getstate is not None and base:
        raise Unfixable("the class defines its own __getstate__, which would have to extend "
                        "its base class's: merge by hand")
    setstate = find_method(cls, "__setstate__")
    reopen = None  # a `__setstate__` opening the moved handles again: they give way to ours
    if setstate is not None and not only_restores(setstate):
        reopen = reopening(setstate, [a for p in plans for a in p.attrs])
        if reopen is None:
            raise Unfixable("the class already defines __setstate__, which does more than "
                            "restore __dict__ and reopen the handles: merge by hand")
    if strategy == "lazy":
        nulled = next((n for p in plans for n in p.nulled), "")
        if nulled:
            raise Unfixable(f"{nulled}, which a lazy property cannot take (the worker-init "
                            "strategy keeps it as written): fix by hand")
        attrs = [a for p in plans for a in p.attrs]
        probed = probed_attrs(cls, attrs)
        if probed:
            attr, how = probed[0]
            raise Unfixable(f"self.{attr} is probed with {how}, which a property would "
                            "always satisfy: use --strategy worker-init or fix by hand")
    names_in_use = _names_in_use(cls)
    merged = False
    if strategy == "worker-init":
        if OPENER_NAME in names_in_use:
            raise Unfixable(f"the class already has a member named {OPENER_NAME}")
        merged = _mergeable(plans)
        if merged:  # one opener: every handle's statements, where the first of them stood
            for plan in plans:
                plan.opener_name = OPENER_NAME
    new_members: list[cst.BaseStatement] = []
    merged_body: list[cst.BaseStatement] = []
    shared: dict[str, str] = {}  # merged: an `__init__` local kept once for every handle
    dropped: list[str] = []
    # lazy: the properties' own attributes (`self._h5` behind `h5`), never a kept argument's
    backing = {_private(a) for plan in plans for a in plan.attrs} if strategy == "lazy" \
        else set()
    for plan in plans:
        if plan.opener in names_in_use:
            raise Unfixable(f"the class already has a member named {plan.opener}")
        for kept in (plan.keeps, plan.exports):
            for local in kept:
                if merged and kept is plan.keeps and local in shared:  # one value, one attribute
                    kept[local] = plan.renames[local] = shared[local]
                    continue
                attr = f"_{local.lstrip('_')}"
                if attr in backing:  # `def __init__(self, h5)`: the argument as `self._h5_arg`
                    attr = f"{attr}_arg"
                while attr in names_in_use:
                    attr = f"_ws{attr}"
                kept[local] = attr
                plan.renames[local] = attr
                names_in_use.add(attr)
                if kept is plan.keeps:
                    shared[local] = attr
        opener_body = _prepared(plan, strategy, names_in_use, drop_first=not merged,
                                typed=typed is not None)
        # lazy, one attribute, no opener call left in `__init__`: the property opens it itself
        inline = strategy == "lazy" and len(plan.attrs) == 1 and not (
            plan.results or plan.exports)
        if merged:
            merged_body += opener_body
        elif not inline:
            doc = f"Open this process's {' and '.join(plan.attrs)}."
            new_members.append(open_method(plan.opener, opener_body, doc, none)
                               .with_changes(leading_lines=[BLANK]))
        if strategy == "lazy":
            pid = _pid_attr(plan)
            declared = declarations(cls, plan.attrs) if typed is not None else {}
            for attr in plan.attrs:
                returns = "" if typed is None else typed.handle(
                    plan.handle if _made_by(opener_body, _private(attr), plan.handle) else "",
                    _annotation(opener_body, _private(attr)) or _declared_type(declared, attr))
                if attr in declared:  # `conn: T` in the class body: the private one's now
                    body = _redeclared(body, declared[attr], _private(attr))
                new_members.append(lazy_property(attr, _private(attr), pid, plan.opener,
                                                 opener_body if inline else None, returns))
                dropped.append(_private(attr))
            dropped.append(pid)
            if inline:
                plan.opener_name = plan.attrs[0]  # what opens it: the property
        else:
            dropped += plan.attrs
        if plan.class_statement is not None:
            for removed in (*reversed(plan.class_configures), plan.class_statement):
                body = _remove_class_statement(body, removed)
        elif not merged:
            body = _replace_in_method(body, plan, strategy)
    if merged:
        body = _replace_merged(body, plans)
    folded = None
    if named_only is not None and all(p.class_statement is None for p in plans) \
            and len({p.method.name.value for p in plans}) == 1:
        folded = fold_emptied(body, plans[0].method.name.value, strategy, OPENER_NAME,
                              named_only)
    insert_at = -1
    if folded is not None:
        body, at = folded
        if strategy == "worker-init":  # where the emptied opener stood, what it adds below
            body.insert(at, _handles_opener(plans, merged_body, merged, none))
            insert_at = at + 1
    elif strategy == "worker-init":
        new_members.insert(0, _handles_opener(plans, merged_body, merged, none))
    if getstate is not None:  # kept when it leaves them out already, else extended in place
        why_not = kept_reason(cls.name.value, getstate, dropped)
        extended = extended_getstate(getstate, dropped) if why_not else getstate
        if extended is None:
            raise Unfixable(f"{why_not}: merge by hand")
        if strategy == "lazy":  # its keys of the attributes now properties may be missing
            extended = without_key_errors(extended, [a for p in plans for a in p.attrs])
            if extended is None:
                raise Unfixable("the class's own __getstate__ deletes the key of a handle "
                                "the lazy property no longer keeps in __dict__, in a `del` "
                                "of several targets: merge by hand")
        body = [extended if member is getstate else member for member in body]
    else:
        new_members.append(getstate_method(dropped, base=bool(base),
                                           returns=typed.state() if typed else ""))
    if setstate is not None and reopen is not None:
        own = reopened_by(setstate, reopen, OPENER_NAME if strategy == "worker-init" else None)
        body = [own if member is setstate else member for member in body]
    if insert_at < 0:
        insert_at = _after_init(body)
    if columns is not None:  # what the fix writes, within the line length
        new_members = [_wrapped(m, columns) for m in new_members]
        if folded is not None:
            body = [_wrapped(m, columns) if isinstance(m, cst.FunctionDef)
                    and m.name.value == OPENER_NAME else m for m in body]
    if _compact(cls):  # no blank line between the class's methods: none between ours either
        new_members = [m.with_changes(leading_lines=[]) for m in new_members]
        body = [m.with_changes(leading_lines=[]) if isinstance(m, cst.FunctionDef)
                and m.name.value == OPENER_NAME and folded is not None else m for m in body]
    body = body[:insert_at] + new_members + body[insert_at:]
    return cls.with_changes(body=cls.body.with_changes(body=body))


def custom_pickling(cls: cst.ClassDef) -> str:
    """The pickling method the class defines that the fix can neither extend nor keep (with
    why, for `__getstate__`), or "". A `__getstate__` read key by key (`fix/getstate.py`)
    passes here: whether it leaves out what the fix drops is known once that is planned."""
    for name in ("__getstate__", "__reduce__", "__reduce_ex__"):
        method = find_method(cls, name)
        if method is None:
            continue
        if name != "__getstate__":
            return name
        live = live_problem(method)
        setstate = find_method(cls, "__setstate__")
        if live and setstate is not None and not only_restores(setstate):
            return f"__getstate__ ({live}; its __setstate__ does more than restore __dict__)"
        if extended_getstate(method, ["_"]) is not None or left_out(method):
            continue  # the handles join what it leaves out (a copy of `__dict__` now, if it
            # changed the dataset's own), or it leaves them out already
        return f"__getstate__ ({live or 'in a shape the fix cannot extend'})"
    return ""


def _names_in_use(cls: cst.ClassDef) -> set[str]:
    names = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    for node in walk(cls):
        attr = self_attr(node) if isinstance(node, cst.Attribute) else None
        if attr:
            names.add(attr)
    return names


def _private(attr: str) -> str:
    return f"_{attr}" if not attr.startswith("_") else f"_ws{attr}"


def declarations(cls: cst.ClassDef, attrs: Sequence[str]) -> dict[str, cst.SimpleStatementLine]:
    """The class body's bare declarations (`conn: sqlite3.Connection`, no value) of `attrs`,
    which a property of the same name would redefine (mypy: no-redef)."""
    found: dict[str, cst.SimpleStatementLine] = {}
    for statement in cls.body.body:
        small = single(statement) if isinstance(statement, cst.SimpleStatementLine) else None
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(small, cst.AnnAssign) \
                and small.value is None and isinstance(small.target, cst.Name) \
                and small.target.value in attrs:
            found.setdefault(small.target.value, statement)
    return found


def _declared_type(declared: dict[str, cst.SimpleStatementLine], attr: str) -> str:
    statement = declared.get(attr)
    small = single(statement) if statement is not None else None
    if isinstance(small, cst.AnnAssign):
        return cst.Module([]).code_for_node(small.annotation.annotation)
    return ""


def _redeclared(body: list[cst.BaseStatement], declaration: cst.SimpleStatementLine,
                private: str) -> list[cst.BaseStatement]:
    """`body` with the declaration of the attribute made one of `private`, which the
    property returns."""
    small = single(declaration)
    assert isinstance(small, cst.AnnAssign)
    new = declaration.with_changes(body=[small.with_changes(target=cst.Name(private))])
    return [new if member is declaration else member for member in body]


def _annotation(body: Sequence[cst.BaseStatement], attr: str) -> str:
    """The annotation of `self.<attr>: T = ...` among `body`'s statements (at any depth)."""
    for statement in body:
        for node in walk(statement):
            if isinstance(node, cst.AnnAssign) and self_attr(node.target) == attr:
                return cst.Module([]).code_for_node(node.annotation.annotation)
    return ""


def _made_by(body: Sequence[cst.BaseStatement], attr: str, handle: str) -> bool:
    """`self.<attr>` is assigned a call of the `handle` constructor among `body`'s statements
    (`lmdb.open(...)`, not `self._env.begin()`, which derives from it)."""
    last = handle.rsplit(".", 1)[-1]
    for statement in body:
        for node in walk(statement):
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Call) \
                    and any(self_attr(t) == attr for t in _targets(node)):
                called = dotted(node.value.func)
                return called == handle or called.rsplit(".", 1)[-1] == last
    return False


def _targets(node: Union[cst.Assign, cst.AnnAssign]) -> list[cst.BaseExpression]:
    if isinstance(node, cst.AnnAssign):
        return [node.target]
    return [t.target for t in node.targets]


def _handles_opener(plans: list[AttrPlan], merged_body: list[cst.BaseStatement],
                    merged: bool, returns: str = "") -> cst.FunctionDef:
    """`open_handles()`: the one opener of a class fixed with worker-init, which `__init__`
    and the generic worker init call. `merged`: it holds every handle's statements; else
    it calls each handle's own opener (created apart in `__init__`, with code in between)."""
    attrs = list(dict.fromkeys(a for p in plans for a in p.attrs))
    what = attrs[0] if len(attrs) == 1 else ", ".join(attrs[:-1]) + " and " + attrs[-1]
    doc = f"Open this process's {what} (again in each DataLoader worker)."
    body: list[cst.BaseStatement] = []
    if merged:
        stored = [a for p in plans if p.close_first for a in reversed(p.attrs)]
        body += dropped_first(stored, merged_body, bool(returns))
    else:
        body += [cst.parse_statement(f"self.{p.opener}()\n") for p in plans]
    return open_method(OPENER_NAME, body, doc, returns).with_changes(leading_lines=[BLANK])


def dropped_first(stored: list[str], body: list[cst.BaseStatement], typed: bool = False
                  ) -> list[cst.BaseStatement]:
    """`body` after the statement dropping the `stored` attributes, but those it rebinds to a
    new empty container (or None) before anything else (`self.shards = []`): that drops them.
    `typed`: in an annotated class (`drop_statements`)."""
    rebound: set[str] = set()
    for statement in body:
        small = single(statement)
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            continue
        if not (isinstance(small, cst.Assign) and _empty(small.value)):
            break
        rebound |= {a for t in small.targets if (a := self_attr(t.target)) is not None}
    kept = [name for name in stored if name not in rebound]
    return [*drop_statements(kept, typed), *body] if kept else list(body)


def _empty(value: cst.BaseExpression) -> bool:
    """`[]`, `{}`, `()`, `None`, or a call of list/dict/set/tuple without arguments."""
    if isinstance(value, (cst.List, cst.Dict, cst.Tuple, cst.Set)):
        return not value.elements
    if isinstance(value, cst.Name):
        return value.value == "None"
    return isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Name) \
        and value.func.value in ("list", "dict", "set", "tuple")


def drop_statements(stored: list[str], typed: bool = False) -> list[cst.BaseStatement]:
    """`drop_statement`; in an annotated class (`typed`), the attributes are popped from
    `__dict__` instead of set to None, which would make the checker type the handle Optional
    (`self.h5 = None` then `self.h5 = h5py.File(...)`) in every method reading it."""
    if not typed:
        return [drop_statement(stored)]
    comment = "  # one open per process: drop the old first"
    code = [f'self.__dict__.pop("{name}", None)' for name in stored]
    if len(code[0]) + len(comment) > max_line() - 8:  # in a method: 8 columns of indent
        return [cst.parse_statement(f"{comment.strip()}\n{code[0]}\n"),
                *(cst.parse_statement(f"{line}\n") for line in code[1:])]
    return [cst.parse_statement(f"{code[0]}{comment}\n"),
            *(cst.parse_statement(f"{line}\n") for line in code[1:])]


def drop_statement(stored: list[str]) -> cst.BaseStatement:
    """Drop (not close) the inherited handles first: lmdb and h5py open a file once per
    process. Derived objects come first in `stored` (assigned left to right)."""
    code = " = ".join(f"self.{name}" for name in stored) + " = None"
    comment = "# one open per process: drop the old first"
    if len(code) + len(comment) + 10 > max_line() - 8:  # in a method: 8 columns of indent
        return cst.parse_statement(f"{comment}\n{code}\n")
    return cst.parse_statement(f"{code}  {comment}\n")


def _mergeable(plans: list[AttrPlan]) -> bool:
    """Whether every handle's statements can run together where the first of them stands:
    one method, and nothing left between them binds what a later one reads."""
    if any(p.class_statement is not None for p in plans):
        return False
    methods = {p.method.name.value for p in plans}
    if len(methods) != 1:
        return False
    method = plans[0].method
    body = statements(method.body.body)
    moved = {id(s) for p in plans for s in p.statements}
    positions = [i for i, s in enumerate(body) if id(s) in moved]
    if len(positions) != len(moved):
        return False  # a statement inside a block: keep the openers apart
    bound: set[str] = set()
    for statement in body[positions[0]:positions[-1] + 1]:
        if id(statement) in moved:
            if (loaded_names(statement) | _read_attrs(statement)) & bound:
                return False
            continue
        if isinstance(statement, (cst.If, cst.For, cst.While, cst.Try, cst.With)) or any(
                isinstance(n, (cst.Return, cst.Raise)) for n in walk(statement)):
            return False  # control flow between them: keep the openers where they were
        if any(isinstance(n, cst.Call) and not (isinstance(n.func, cst.Name)
                                                and n.func.value in _PURE_BUILTINS)
               for n in walk(statement)):
            return False  # a call between them may prepare a later one (a folder, a file)
        bound |= bound_names([statement]) | _assigned_attrs(statement)
    return True


# Calls between two creations that cannot prepare the second (no side effect).
_PURE_BUILTINS = frozenset({"len", "int", "float", "str", "bool", "list", "tuple", "dict", "set",
                            "frozenset", "sorted", "range", "min", "max", "sum", "abs", "round",
                            "isinstance", "enumerate", "zip"})


def _replace_merged(body: list[cst.BaseStatement], plans: list[AttrPlan]
                    ) -> list[cst.BaseStatement]:
    """Every moved statement leaves the method; `self.open_handles()` (after the locals it
    needs, kept on self, and before those it exports) takes the place of the first."""
    keeps = dict(item for p in plans for item in p.keeps.items())
    replacement: list[cst.BaseStatement] = [
        cst.parse_statement(f"self.{attr} = {local}\n") for local, attr in keeps.items()]
    replacement.append(cst.parse_statement(f"self.{OPENER_NAME}()\n"))
    replacement += [cst.parse_statement(f"{local} = self.{attr}\n")
                    for p in plans for local, attr in p.exports.items()]
    return _replace_moved(body, plans, replacement)


def _replace_moved(body: list[cst.BaseStatement], plans: list[AttrPlan],
                   replacement: list[cst.BaseStatement], comments_moved: bool = False
                   ) -> list[cst.BaseStatement]:
    """The plans' moved statements (and the imports moved with them) leave their method (one
    method, the plans share it); `replacement` takes the place of the first of them."""
    name = plans[0].method.name.value
    moved = {id(s) for p in plans for s in p.statements}
    gone = moved | {id(s) for p in plans for s in p.moved_imports}
    out: list[cst.BaseStatement] = []
    for member in body:
        if not (isinstance(member, cst.FunctionDef) and member.name.value == name):
            out.append(member)
            continue
        old = statements(member.body.body)
        first = next((i for i, s in enumerate(old) if id(s) in moved), None)
        if first is None:  # another definition of the same name (a class defining it twice)
            out.append(member)
            continue
        hoisted_ids = {id(h) for p in plans for h in p.hoisted}
        hoisted = [s for s in old if id(s) in hoisted_ids]
        if any(id(s) in gone for s in hoisted):
            raise Unfixable("a statement one handle's setup reads moves with another handle: "
                            "fix by hand")
        above = list(leading_lines(old[first]))
        if comments_moved:  # with the code (lazy): only the blank lines above it stay
            above = above[:len(above) - len(_from_first_comment(above))]
        here = list(replacement)
        if here:
            here[0] = with_leading_lines(here[0], above)
        elif hoisted:
            hoisted[0] = with_leading_lines(hoisted[0], [
                *above, *_from_first_comment(leading_lines(hoisted[0]))])
        here = [*hoisted, *here]  # what the moved statements read runs first
        kept: list[cst.BaseStatement] = []
        for index, statement in enumerate(old):
            if index == first:
                kept += here
            elif id(statement) not in gone and id(statement) not in hoisted_ids:
                kept.append(statement)
        if not kept:
            kept = [cst.parse_statement("pass\n")]
        elif id(old[0]) in gone:
            kept[0] = with_leading_lines(  # the body's new first statement follows the `def`
                kept[0], _from_first_comment(leading_lines(kept[0])))  # line directly
        rewritten = member.with_changes(body=member.body.with_changes(body=kept))
        out.append(rewritten)
        for plan in plans:  # later plans on the same method see the rewritten method
            plan.method = rewritten
    return out


def _prepared(plan: AttrPlan, strategy: str, names_in_use: set[str], drop_first: bool = True,
              typed: bool = False) -> list[cst.BaseStatement]:
    """The moved statements, as they read inside the new method (`typed`: of an annotated
    class, see `drop_statements`)."""
    statements: list[cst.BaseStatement] = [
        s.with_changes(leading_lines=[]) for s in plan.imports]
    mapping = {n: cst.Attribute(cst.Name("self"), cst.Name(a)) for n, a in plan.renames.items()}
    renames = {a: _private(a) for a in plan.attrs} if strategy == "lazy" else {}
    if strategy == "lazy":
        taken = [renames[a] for a in plan.attrs if renames[a] in names_in_use]
        if taken:
            raise Unfixable(f"the class already uses self.{taken[0]}")
    moved: list[cst.BaseStatement] = []
    for index, original in enumerate(plan.statements):
        statement = original
        if mapping:
            statement = transform(statement, ReplaceNames(mapping))
        if renames:
            statement = transform(statement, RenameSelfAttrs(renames))
        if statement is not original:
            statement = realigned(original, statement)
        if index == 0:  # lazy: comments above move with the code, not the blank lines
            kept = leading_lines(statement) if strategy == "lazy" else []
            statement = with_leading_lines(statement, _from_first_comment(kept))
        moved.append(statement)
    if plan.close_first and drop_first:  # the library opens a file once per process: drop
        return statements + dropped_first([renames.get(a, a) for a in reversed(plan.attrs)],
                                          moved, typed)
    return statements + moved


def _from_first_comment(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The lines above a statement without the blank lines before the first comment (the
    statement opens a new method: it follows the docstring directly)."""
    first = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    return list(lines[first:])


def _pid_attr(plan: AttrPlan) -> str:
    """The attribute recording the process a lazy group was opened in (one per group: its
    handles open together)."""
    return f"_{plan.attrs[0].lstrip('_')}_pid"


def _replace_in_method(body: list[cst.BaseStatement], plan: AttrPlan, strategy: str
                       ) -> list[cst.BaseStatement]:
    """The moved statements leave the method; the opener call (and the locals it needs, kept
    on self) takes the place of the first of them."""
    replacement: list[cst.BaseStatement] = [
        cst.parse_statement(f"self.{attr} = {local}\n") for local, attr in plan.keeps.items()]
    if strategy == "worker-init" or plan.results or plan.exports:
        replacement.append(cst.parse_statement(f"self.{plan.opener}()\n"))
        if strategy == "lazy":  # opened here: the first use in this process keeps it
            replacement.append(cst.parse_statement(f"self.{_pid_attr(plan)} = os.getpid()\n"))
    replacement += [cst.parse_statement(f"{local} = self.{attr}\n")
                    for local, attr in plan.exports.items()]
    return _replace_moved(body, [plan], replacement, comments_moved=strategy == "lazy")


def _remove_class_statement(body: list[cst.BaseStatement], statement: cst.BaseStatement
                            ) -> list[cst.BaseStatement]:
    index = next(i for i, s in enumerate(body) if s is statement)
    rest = body[index + 1:]
    if rest and leading_lines(statement):  # the comments above it stay where they were
        rest[0] = with_leading_lines(rest[0], [*leading_lines(statement),
                                               *leading_lines(rest[0])])
    elif rest and index == 0:  # the class now opens with what followed: no blank line first
        rest[0] = with_leading_lines(rest[0], _from_first_comment(leading_lines(rest[0])))
    out = body[:index] + rest
    return out or [cst.parse_statement("pass\n")]


def _wrapped(member: cst.BaseStatement, columns: tuple[int, int]) -> cst.BaseStatement:
    column, width = columns
    done = member.visit(WrapLong(column + 2 * width, width))
    assert isinstance(done, cst.BaseStatement)
    return done


def _compact(cls: cst.ClassDef) -> bool:
    """Whether the class writes its methods with no blank line between them (two or more
    methods, none after the first with a blank line or comment above it)."""
    methods = [s for s in statements(cls.body.body) if isinstance(s, cst.FunctionDef)]
    return len(methods) > 1 and not any(leading_lines(m) for m in methods[1:])


def _after_init(body: list[cst.BaseStatement]) -> int:
    for index, statement in enumerate(body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            return index + 1
    return len(body)
