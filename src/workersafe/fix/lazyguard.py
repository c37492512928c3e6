"""The fix for a lazy open without a process check (WS303/WS313): the accessor's test gains
one, so a process that inherited the handle (a forked DataLoader worker) opens its own:

    if self.env is None or self.__dict__.get("_env_pid") != os.getpid():
        self.env = lmdb.open(self.path)
        self._env_pid = os.getpid()

The process id is read through `self.__dict__.get`, as the lazy strategy's properties do, so
the fix works whether or not `__init__` sets anything. Statements deriving objects from the
handle in the same block (a transaction from an environment) stay in it and run again. A
library that allows one open per process (lmdb) gets the inherited handle, and what derives
from it, released first; a handle that does not pickle gets a `__getstate__` leaving it out,
so spawned workers (and copies) open their own."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional, Sequence, cast

import libcst as cst

from ..analysis.pickled import ALL_BUT, pickled_state
from ..facts import FileFacts, Span
from ..findings import FixPlan
from ..registry import Registry
from .classfix import custom_pickling
from .cstutil import (
    Located, ReplaceNames, ReplaceNodes, dotted, is_none, leading_lines, self_attr, single,
    statements, transform, walk, with_leading_lines,
)
from .getstate import kept_reason
from .handles import HandleNames
from .initplan import find_method
from .plan import Unfixable
from .style import max_line
from .probes import probed_attrs
from .promise import handle_attrs
from .templates import getstate_method

PICKLING = ("__getstate__", "__reduce__", "__reduce_ex__")


@dataclass(frozen=True)
class GuardedLazy:
    """A lazy open the fix gave a process check, for verification to re-check."""

    path: str
    class_qualname: str
    method: str
    attr: str


@dataclass
class GuardedClass:
    """The class with its lazy opens guarded, and what the rewrite touched."""

    cls: cst.ClassDef
    changed_lines: set[int] = field(default_factory=set)  # original lines rewritten in place
    guarded: list[tuple[str, str]] = field(default_factory=list)  # (method, attr)
    notes: list[str] = field(default_factory=list)
    # what the `__getstate__` this fix gave the class (or left to the one a base gains in this
    # run) leaves out, attribute → pickled as None; None when the fix added none
    pickled_out: Optional[dict[str, bool]] = None


@dataclass(frozen=True)
class _Test:
    """One part of an `if` test that asks whether `self.<attr>` is unset."""

    attr: str
    node: cst.BaseExpression
    absent: bool  # unset means "not an attribute" (hasattr, getattr default), not None


def guard_lazy_opens(located: Located, cls: cst.ClassDef, current: cst.ClassDef,
                     wanted: Sequence[tuple[FixPlan, Span]], registry: Registry,
                     inherited_pickling: str = "", base_strategy: str = "",
                     state_type: str = "",
                     base_pickled: Optional[tuple[str, dict[str, bool]]] = None
                     ) -> GuardedClass:
    """`cls`: the class as parsed (positions are read from it); `current`: the same class with
    the edits of other fixes of this run (or `cls`). `wanted`: the findings' plans and the
    spans of their creating calls. `inherited_pickling`: a pickling method a base class
    defines ("" when none); `base_strategy`: the strategy a base class was fixed with in this
    run ("" when none), whose `__getstate__` ours extends. `state_type`: the return annotation
    of a `__getstate__` added to an annotated class ("" none; `fix/annotate.py`).
    `base_pickled`: a base class this run's lazy guard gave a `__getstate__`, and what that
    leaves out: ours, which would hide it, is not added when it leaves out all we drop, else
    starts from the base's state. Raises Unfixable with the reason."""
    if any(_assigns_slots(s) for s in cls.body.body):
        raise Unfixable(f"{cls.name.value} defines __slots__, which has no room for the "
                        "process id: add the process check by hand")
    names_in_use = _names_in_use(cls)
    result = GuardedClass(current)
    replacements: dict[cst.CSTNode, cst.CSTNode] = {}
    dropped: dict[str, bool] = {}  # attribute → pickled as None (else left out)
    pids: dict[str, str] = {}
    for plan, span in wanted:
        if (plan.method, plan.attr) in result.guarded:
            continue
        method = find_method(cls, plan.method)
        if method is None:
            raise Unfixable(f"the lazy open of self.{plan.attr} is in {plan.method}, which "
                            f"{cls.name.value} does not define itself: add the process check "
                            "there by hand")
        node, test = _lazy_if(located, method, plan.attr, span)
        if node in replacements:
            continue  # one test checking two attributes: one process check is enough
        htype = registry.lookup(plan.handle)
        names = HandleNames(located.module, registry, [plan.handle])
        derived = _derived_attrs(cls, plan.attr, names)
        released = [*derived, plan.attr]
        # what "unset" is: the handle's test says; a derived attribute is left out (not None)
        # where the class asks whether it exists
        absent = {a: bool(probed_attrs(cls, [a])) for a in derived}
        absent[plan.attr] = test.absent
        pid = pids.get(plan.attr) or _free_attr(f"_{plan.attr.lstrip('_')}_pid", names_in_use)
        pids[plan.attr] = pid
        release = released if htype is not None and htype.drop_before_reopen else []
        replacements[node] = _guarded_if(located, node, test, pid, span, release, absent)
        result.changed_lines |= _header_lines(located, node)
        result.guarded.append((plan.method, plan.attr))
        if htype is not None and not htype.picklable:
            dropped.update((a, not absent[a]) for a in released)
            dropped.setdefault(pid, False)
    for original in replacements:
        if not any(sub is original for sub in walk(current)):
            raise Unfixable("another fix of this run rewrote the lazy open: run the fix again")
    new_cls = current.visit(ReplaceNodes(replacements))
    assert isinstance(new_cls, cst.ClassDef)
    if dropped:
        own = custom_pickling(cls) or inherited_pickling
        added = find_method(new_cls, "__getstate__")  # by another fix of this run
        mine = find_method(cls, "__getstate__")
        handles = [a for a in dropped if a not in pids.values()]
        if own and mine is not None and not kept_reason(cls.name.value, mine, handles):
            result.notes.append(f"the existing __getstate__ already leaves out "
                                f"{', '.join(handles)}")
        elif own:
            result.notes.append(f"pickling left to the existing {own}")
        elif added is not None:
            extended = _extended_getstate(new_cls, added, dropped)
            if extended is None and not kept_reason(cls.name.value, added, handles):
                # `dict(self.__dict__, env=None)`: a spawned worker's process id differs
                result.notes.append(f"the existing __getstate__ already leaves out "
                                    f"{', '.join(handles)}")
            elif extended is None:
                result.notes.append("pickling left to the existing __getstate__ (it returns "
                                    "no `state` dict to set the handle to None in)")
            else:
                new_cls = cast(cst.ClassDef, new_cls.visit(ReplaceNodes({added: extended})))
                result.notes.append("__getstate__ drops the handle too")
        elif base_pickled is not None and dropped.items() <= base_pickled[1].items():
            result.pickled_out = base_pickled[1]
            result.notes.append(f"the __getstate__ {base_pickled[0]} gains leaves it out")
        else:
            base = base_strategy or ("lazy" if base_pickled is not None else "")
            before = base_pickled[1] if base_pickled is not None else {}
            extra = {a: none for a, none in dropped.items() if before.get(a) != none}
            new_cls = _with_getstate(new_cls, extra, base, state_type)
            result.pickled_out = {**before, **dropped}
            result.notes.append("__getstate__ drops the handle")
    result.cls = new_cls
    return result


def unguarded_left(guarded: Sequence[GuardedLazy], facts: dict[str, FileFacts]) -> str:
    """Verification, on the facts of the rewritten files: every lazy open the fix guarded is
    now process-checked (what WS303/WS313 read, whether or not WS313 is selected). The
    problem, or ""."""
    for item in guarded:
        file_facts = facts.get(item.path)
        classes = file_facts.remedies.classes if file_facts is not None else ()
        for remedy in classes:
            if remedy.qualname != item.class_qualname:
                continue
            for lazy in remedy.lazy:
                if (lazy.method, lazy.attr) == (item.method, item.attr) \
                        and not lazy.process_checked:
                    return (f"{item.path}: the lazy open of self.{item.attr} in "
                            f"{item.method} still has no process check")
    return ""


# --- finding the lazy open ------------------------------------------------------------------

def _lazy_if(located: Located, method: cst.FunctionDef, attr: str, span: Span
             ) -> tuple[cst.If, _Test]:
    """The `if` in `method` whose test asks whether `self.<attr>` is unset, and that part of
    its test; the one holding the creating call when there are several."""
    found = [(node, test) for node in walk(method) if isinstance(node, cst.If)
             for test in _unset_tests(node.test) if test.attr == attr]
    if not found:
        raise Unfixable(f"the lazy open of self.{attr} in {method.name.value} is not an `if` "
                        f"testing it (e.g. `self.{attr} = self.{attr} or ...`): write it as "
                        f"`if self.{attr} is None:` and run the fix again, or add the process "
                        "check by hand")
    if len(found) > 1:
        found = [(n, t) for n, t in found if _holds(located, n.body, span)] or found
    if len(found) > 1:
        raise Unfixable(f"{method.name.value} tests self.{attr} in several places: add the "
                        "process check by hand")
    node, test = found[0]
    if not any(part is test.node for part in _or_parts(node.test)):
        raise Unfixable(f"the test of self.{attr} is combined with `and` (or negated), so "
                        "`or <process changed>` would open it where it did not: add the "
                        "process check by hand")
    return node, test


def _unset_tests(test: cst.BaseExpression) -> list[_Test]:
    """The parts of a test asking whether an attribute of self is unset: `self.x is None`,
    `self.x == None`, `getattr(self, "x", None) is None`, `not self.x`,
    `not hasattr(self, "x")`, anywhere in it."""
    found: list[_Test] = []
    for node in walk(test):
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            target = node.comparisons[0]
            if isinstance(target.operator, (cst.Is, cst.Equal)) and is_none(target.comparator):
                attr = self_attr(node.left)
                absent = attr is None
                attr = attr or _self_getattr(node.left)
                if attr:
                    found.append(_Test(attr, node, absent))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            attr = self_attr(node.expression)
            if attr:
                found.append(_Test(attr, node, False))
            elif _self_call(node.expression, "hasattr", 2):
                name = _string_arg(node.expression)
                if name:
                    found.append(_Test(name, node, True))
    return found


def _or_parts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands `or` joins at the top of a test (the test itself when it is no `or`)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return [*_or_parts(test.left), *_or_parts(test.right)]
    return [test]


def _holds(located: Located, block: cst.CSTNode, span: Span) -> bool:
    for node in walk(block):
        if isinstance(node, cst.Call):
            pos = located.positions.get(node)
            if pos is not None and (pos.start.line, pos.start.column) == (span.line, span.col):
                return True
    return False


# --- the rewrite ----------------------------------------------------------------------------

def _guarded_if(located: Located, node: cst.If, test: _Test, pid: str, span: Span,
                release: list[str], absent: dict[str, bool]) -> cst.If:
    check = cst.parse_expression(f'self.__dict__.get("{pid}") != os.getpid()')
    new_test = cst.BooleanOperation(node.test, cst.Or(), check)
    start = located.positions[node].start
    header = len(cst.Module([]).code_for_node(new_test)) + start.column + len("if :")
    tabs = "\t" in located.module.default_indent
    if header > max_line() and start.line == located.positions[node.test].end.line and not tabs:
        # too long for one line: the process check continues on the next, in parentheses
        indent = cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), empty_lines=[], indent=False,
            last_line=cst.SimpleWhitespace(" " * (start.column + 8)))
        new_test = cst.BooleanOperation(
            node.test, cst.Or(whitespace_before=indent), check,
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):  # `if x is None: x = open()`: a block
        body = cst.IndentedBlock([cst.SimpleStatementLine(body.body)])
    assert isinstance(body, cst.IndentedBlock)
    old = statements(body.body)
    at = _open_statement(located, node, old, span)
    if isinstance(single(old[at]), (cst.Return, cst.Raise)):
        raise Unfixable(f"the lazy block of self.{test.attr} returns as it opens: record the "
                        "process there by hand")
    new = _release(release, absent) if release else []
    if new:  # the comments above the open stay above the statements of the reopen
        new[0] = with_leading_lines(new[0], leading_lines(old[at]))
        new.append(with_leading_lines(old[at], []))
    else:
        new.append(old[at])
    new.append(cst.parse_statement(f"self.{pid} = os.getpid()\n"))
    body = body.with_changes(body=[*old[:at], *new, *old[at + 1:]])
    return node.with_changes(test=new_test, body=body)


def _open_statement(located: Located, node: cst.If, block: list[cst.BaseStatement],
                    span: Span) -> int:
    """The statement of the block that opens the handle: it holds the creating call, else it
    calls a method of self (the opener)."""
    for index, statement in enumerate(block):
        if _holds(located, statement, span):
            return index
    for index, statement in enumerate(block):
        if any(isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute)
               and dotted(sub.func.value) == "self" for sub in walk(statement)):
            return index
    start, _ = located.lines_of(node)
    raise Unfixable(f"cannot find the open in the lazy block at line {start}")


def _release(attrs: list[str], absent: dict[str, bool]) -> list[cst.BaseStatement]:
    """Drop the inherited handle and what derives from it before opening again (the library
    refuses a second open of the same file in one process): set to None, or removed where
    the class's code asks whether the attribute exists."""
    comment = "  # one open per process: drop the old one first"
    code: list[str] = []
    none = [a for a in attrs if not absent[a]]
    if none:
        code.append(" = ".join(f"self.{a}" for a in none) + " = None")
    code += [f'self.__dict__.pop("{a}", None)' for a in attrs if absent[a]]
    code[0] += comment
    return [cst.parse_statement(f"{line}\n") for line in code]


def _getstate(dropped: dict[str, bool], base_strategy: str = "", state_type: str = ""
              ) -> cst.FunctionDef:
    reset = [a for a, none in dropped.items() if none]
    gone = [a for a, none in dropped.items() if not none]
    return getstate_method(gone, base=bool(base_strategy), reset=reset, returns=state_type)


def _with_getstate(cls: cst.ClassDef, dropped: dict[str, bool], base_strategy: str,
                   state_type: str = "") -> cst.ClassDef:
    body = statements(cls.body.body)
    at = next((i + 1 for i, s in enumerate(body)
               if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), len(body))
    method = _getstate(dropped, base_strategy, state_type)
    return cls.with_changes(body=cls.body.with_changes(body=[*body[:at], method, *body[at:]]))


def _extended_getstate(cls: cst.ClassDef, method: cst.FunctionDef, dropped: dict[str, bool]
                       ) -> Optional[cst.FunctionDef]:
    """`method`, the `__getstate__` of `cls`, if it ends in `return state` (another fix of
    this run wrote it, or the class's own filters a copy of `__dict__`), also leaving out
    these handles: the template's statements between its copy and its `return state` go
    before that return, without the names it already drops. None when it returns something
    else."""
    body = statements(method.body.body)
    last = single(body[-1]) if body else None
    if not isinstance(last, cst.Return) or not isinstance(last.value, cst.Name):
        return None
    done = _dropped_keys(cls)
    wanted = {a: none for a, none in dropped.items() if a not in done}
    if not wanted:
        return method
    ours = statements(_getstate(wanted).body.body)[2:-1]  # docstring, copy, ..., return
    if last.value.value != "state":
        ours = [transform(s, ReplaceNames({"state": cst.Name(last.value.value)})) for s in ours]
    return method.with_changes(body=method.body.with_changes(
        body=[*body[:-1], *ours, body[-1]]))


def _dropped_keys(cls: cst.ClassDef) -> set[str]:
    """The keys the class's `__getstate__` already leaves out of (or sets to None in) the
    state, as the analysis reads them (analysis/pickled.py). Read on the class as this run
    left it, not from its facts: those describe the file as it was, and another fix of this
    run may have written the method or extended it. Nothing when it cannot be read key by
    key."""
    tree = ast.parse(cst.Module([cls]).code)
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    state = pickled_state(node)
    return set(state.names) if state is not None and state.mode == ALL_BUT else set()


# --- helpers --------------------------------------------------------------------------------

def _derived_attrs(cls: cst.ClassDef, attr: str, names: HandleNames) -> list[str]:
    """Attributes the class sets to objects derived from `self.<attr>` (a transaction from an
    environment), in the order they are first seen."""
    found: list[str] = []
    for member in cls.body.body:
        if isinstance(member, cst.FunctionDef):
            for other in sorted(handle_attrs(member, names, {attr}, fresh=False) - {attr}):
                if other not in found:
                    found.append(other)
    return found


def _names_in_use(cls: cst.ClassDef) -> set[str]:
    names = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    names |= {a for node in walk(cls) if isinstance(node, cst.Attribute)
              for a in [self_attr(node)] if a}
    return names


def _free_attr(wanted: str, names_in_use: set[str]) -> str:
    name = wanted
    while name in names_in_use:
        name = f"_ws{name}"
    return name


def _header_lines(located: Located, node: cst.If) -> set[int]:
    start, _ = located.lines_of(node)
    end = located.positions[node.test].end.line
    if isinstance(node.body, cst.SimpleStatementSuite):
        end = located.lines_of(node.body)[1]
    return set(range(start, end + 1))


def _assigns_slots(statement: cst.CSTNode) -> bool:
    small = single(statement) if isinstance(statement, cst.SimpleStatementLine) else None
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, cst.AnnAssign):
        targets = [small.target]
    return any(isinstance(t, cst.Name) and t.value == "__slots__" for t in targets)


def _self_call(node: cst.BaseExpression, name: str, arity: int) -> bool:
    return isinstance(node, cst.Call) and dotted(node.func) == name \
        and len(node.args) == arity and dotted(node.args[0].value) == "self"


def _self_getattr(node: cst.BaseExpression) -> Optional[str]:
    """`getattr(self, "x", None)` → "x"."""
    if _self_call(node, "getattr", 3) and isinstance(node, cst.Call) \
            and is_none(node.args[2].value):
        return _string_arg(node)
    return None


def _string_arg(call: cst.BaseExpression) -> Optional[str]:
    if not isinstance(call, cst.Call) or len(call.args) < 2:
        return None
    value = call.args[1].value
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return None


def chained_getstate(cls: cst.ClassDef) -> Optional[cst.ClassDef]:
    """`cls` with the `__getstate__` another fix of this run gave it (state taken from
    `self.__dict__`) starting from its base's instead (`super().__getstate__()`): the base
    gains one leaving out its own handles, which that one would hide. None when it has no such
    `__getstate__`."""
    method = find_method(cls, "__getstate__")
    if method is None:
        return None
    # `self.__dict__.copy()` whole (the base's state is a new dict already), else
    # `self.__dict__` (`{k: v for k, v in self.__dict__.items() if ...}`): the outer wins
    base = cst.parse_expression("super().__getstate__()")
    replacements: dict[cst.CSTNode, cst.CSTNode] = {
        node: base for node in walk(method)
        if _is_self_dict(node) or (isinstance(node, cst.Call) and not node.args
                                   and isinstance(node.func, cst.Attribute)
                                   and node.func.attr.value == "copy"
                                   and _is_self_dict(node.func.value))}
    if not replacements:
        return None
    return cast(cst.ClassDef, cls.visit(ReplaceNodes(replacements)))


def _is_self_dict(node: object) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "__dict__" \
        and isinstance(node.value, cst.Name) and node.value.value == "self"
