"""Extending a class's own `__getstate__` with the attributes the fix drops, when it has one of
two shapes the fix can follow:
- `state = <a copy of self.__dict__>`, any statements, `return state` (its only return, `state`
  bound nowhere else): the drops go right before the return;
- `return {k: v for k, v in self.__dict__.items() if k not in ("a", "b")}` (or `k != "a"`):
  the names join the excluded ones.
A copy is `self.__dict__.copy()`, `dict(self.__dict__)`, `copy.copy(self.__dict__)`,
`{**self.__dict__}` or a dict comprehension over `self.__dict__.items()`, with `vars(self)`
for `self.__dict__` as well.

A `__getstate__` the fix cannot extend is kept as it is when it already leaves out (or pickles
as None) every attribute the fix drops (`dict(self.__dict__, env=None)`, `{**self.__dict__,
"env": None}`, `dict(super().__getstate__(), env=None)`, ...: read key by key as the analysis
reads it, `analysis/pickled.py`). One that changes the instance's own `__dict__` (`state =
self.__dict__`, no copy, then `state["env"] = None`, as RepVGG's: pickling the dataset for a
spawned worker takes env from the parent's too) is extended with a copy in its place
(`self.__dict__.copy()`) where the rest of the class allows it (its `__setstate__` only
restores `__dict__`, `fix/classfix.py`), else refused with that reason, as is any other
shape (merge by hand)."""

from __future__ import annotations

import ast
from typing import Optional, Sequence, Union

import libcst as cst

from ..analysis.pickled import ALL_BUT, pickled_state
from .cstutil import dotted, function_params, single, target_names
from .templates import drop_code


def extended_getstate(method: cst.FunctionDef, dropped: Sequence[str]
                      ) -> Optional[cst.FunctionDef]:
    """`method` leaving `dropped` out of the state too; None when its shape is not one of the
    two above."""
    params = function_params(method)
    if len(params) != 1 or not isinstance(method.body, cst.IndentedBlock) or not dropped:
        return None
    me = params[0]
    body = list(method.body.body)
    returns = [n for n in _own_nodes(method) if isinstance(n, cst.Return)]
    last = single(body[-1]) if body else None
    if len(returns) != 1 or returns[0] is not last or last.value is None:
        return None
    value = last.value
    if isinstance(value, cst.DictComp):
        test = _excluding(value, me, dropped)
        if test is None:
            return None
        comp = value.for_in.with_changes(ifs=[value.for_in.ifs[0].with_changes(test=test)])
        new_last = body[-1].with_changes(body=[last.with_changes(
            value=value.with_changes(for_in=comp))])
        return method.with_changes(body=method.body.with_changes(body=[*body[:-1], new_last]))
    at = _copied_once(method, body, value.value, me) if isinstance(value, cst.Name) else None
    if at is None or not isinstance(value, cst.Name):
        return None
    copied = single(body[at])
    assert isinstance(copied, cst.Assign)
    if _is_own_dict(copied.value, me):  # `state = self.__dict__`: a copy now, so pickling
        body[at] = body[at].with_changes(body=[copied.with_changes(  # leaves the dataset be
            value=cst.parse_expression(f"{me}.__dict__.copy()"))])
    done = left_out(method, live=True) or set()  # what it leaves out already stays its own
    dropped = [name for name in dropped if name not in done]
    drops = cst.parse_module(drop_code(dropped, value.value)).body if dropped else []
    new = method.with_changes(body=method.body.with_changes(
        body=[*body[:-1], *drops, body[-1]]))
    return None if live_state(new) else new


def _own_nodes(method: cst.FunctionDef) -> list[cst.CSTNode]:
    """The nodes of `method`, not those of functions, lambdas and classes inside it."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = list(method.body.children)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            stack.extend(node.children)
    return found


def _copied_once(method: cst.FunctionDef, body: list[cst.BaseStatement], state: str, me: str
                 ) -> Optional[int]:
    """The index in the body of `state = <copy of me.__dict__>` (or `= me.__dict__` itself,
    which the extension copies), the only binding of `state` in the method; None when there
    is none."""
    bindings = 0
    for node in _own_nodes(method):
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For,
                             cst.CompFor, cst.NamedExpr, cst.AsName)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            bindings += state in target_names(target)
        elif isinstance(node, cst.Del):
            bindings += state in target_names(node.target)
    copies = [i for i, s in enumerate(body) if isinstance(small := single(s), cst.Assign)
              and len(small.targets) == 1 and target_names(small.targets[0].target) == {state}
              and isinstance(small.targets[0].target, cst.Name)
              and (_is_copy(small.value, me) or _is_own_dict(small.value, me))]
    return copies[0] if bindings == 1 and len(copies) == 1 else None


def _is_own_dict(expr: cst.BaseExpression, me: str) -> bool:
    """`me.__dict__` or `vars(me)`."""
    if dotted(expr) == f"{me}.__dict__":
        return True
    return (isinstance(expr, cst.Call) and dotted(expr.func) == "vars" and len(expr.args) == 1
            and isinstance(expr.args[0].value, cst.Name) and expr.args[0].value.value == me)


def _is_copy(expr: cst.BaseExpression, me: str) -> bool:
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "copy" and not expr.args:
            return _is_own_dict(func.value, me)
        if dotted(func) in ("dict", "copy.copy") and len(expr.args) == 1 \
                and not expr.args[0].keyword and not expr.args[0].star:
            return _is_own_dict(expr.args[0].value, me)
        return False
    if isinstance(expr, cst.Dict) and len(expr.elements) == 1:
        element = expr.elements[0]
        return isinstance(element, cst.StarredDictElement) and _is_own_dict(element.value, me)
    return isinstance(expr, cst.DictComp) and _item_names(expr, me) is not None


def _item_names(comp: cst.DictComp, me: str) -> Optional[str]:
    """The key name of `{k: v for k, v in me.__dict__.items() ...}`, else None."""
    loop = comp.for_in
    iterated = loop.iter
    if loop.inner_for_in is not None or not isinstance(iterated, cst.Call) or iterated.args \
            or not isinstance(iterated.func, cst.Attribute) \
            or iterated.func.attr.value != "items" or not _is_own_dict(iterated.func.value, me):
        return None
    target = loop.target
    if not (isinstance(target, cst.Tuple) and len(target.elements) == 2
            and isinstance(key := target.elements[0].value, cst.Name)
            and isinstance(comp.key, cst.Name) and comp.key.value == key.value):
        return None
    return key.value


def _excluding(comp: cst.DictComp, me: str, dropped: Sequence[str]
               ) -> Optional[cst.BaseExpression]:
    """The comprehension's condition excluding `dropped` as well: `k not in (...)` or
    `k != "..."` (its only condition) gets the names added; None for any other shape."""
    key = _item_names(comp, me)
    if key is None or len(comp.for_in.ifs) != 1:
        return None
    test = comp.for_in.ifs[0].test
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name)
            and test.left.value == key and len(test.comparisons) == 1):
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    excluded: list[cst.BaseExpression]
    if isinstance(operator, cst.NotEqual) and isinstance(right, cst.SimpleString):
        excluded = [right]
        brackets = "()"
    elif isinstance(operator, cst.NotIn) and isinstance(right, (cst.Tuple, cst.List, cst.Set)) \
            and all(isinstance(e.value, cst.SimpleString) for e in right.elements):
        excluded = [e.value for e in right.elements]
        brackets = {cst.Tuple: "()", cst.List: "[]", cst.Set: "{}"}[type(right)]
    else:
        return None
    code = cst.Module([]).code_for_node
    names = [code(e) for e in excluded] + [f'"{n}"' for n in dropped]
    return cst.parse_expression(f"{key} not in {brackets[0]}{', '.join(names)}{brackets[1]}")


def without_key_errors(method: cst.FunctionDef, absent: Sequence[str]
                       ) -> Optional[cst.FunctionDef]:
    """`method` (a `__getstate__` kept or extended) with each `del <state>["<name>"]` and
    `<state>.pop("<name>")` of a name in `absent` made `<state>.pop("<name>", None)`: the lazy
    strategy turns those attributes into properties, no longer in `__dict__`, so deleting
    their keys raises KeyError when the dataset is pickled for a spawned worker. None when a
    `del` of several targets names one (merge by hand)."""
    fixer = _TolerantDrops(frozenset(absent))
    new = method.visit(fixer)
    return None if fixer.refused or not isinstance(new, cst.FunctionDef) else new


def _absent_key(node: cst.BaseExpression, absent: frozenset[str]) -> Optional[str]:
    """The name of `<expr>["<name>"]` when it is one of `absent`."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return None
    key = index.value.evaluated_value
    return key if isinstance(key, str) and key in absent else None


class _TolerantDrops(cst.CSTTransformer):
    def __init__(self, absent: frozenset[str]) -> None:
        super().__init__()
        self.absent = absent
        self.refused = False

    def leave_Del(self, original_node: cst.Del, updated_node: cst.Del
                  ) -> Union[cst.BaseSmallStatement, cst.RemovalSentinel]:
        target = updated_node.target
        if isinstance(target, (cst.Tuple, cst.List)):
            self.refused = self.refused or any(
                _absent_key(e.value, self.absent) for e in target.elements)
            return updated_node
        key = _absent_key(target, self.absent)
        if key is None or not isinstance(target, cst.Subscript):
            return updated_node
        code = cst.Module([]).code_for_node(target.value)
        return cst.Expr(cst.parse_expression(f'{code}.pop("{key}", None)'))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "pop" \
                and len(updated_node.args) == 1 and not updated_node.args[0].keyword \
                and not updated_node.args[0].star \
                and isinstance(key := updated_node.args[0].value, cst.SimpleString) \
                and key.evaluated_value in self.absent:
            first = updated_node.args[0].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated_node.with_changes(args=[first, cst.Arg(cst.Name("None"))])
        return updated_node


# --- a `__getstate__` kept as it is ------------------------------------------------------------

# methods of a dict that change it
_MUTATING = frozenset({"pop", "popitem", "clear", "update", "setdefault", "__setitem__",
                       "__delitem__"})


def left_out(method: cst.FunctionDef, live: bool = False) -> Optional[set[str]]:
    """The attributes `method` (a `__getstate__`) leaves out of the state or pickles as None,
    read key by key from a copy of `__dict__` (`analysis/pickled.py`), without the keys it
    also sets to anything else (`state["cache"] = {}`); None when it cannot be read so, or
    (unless `live`) when it changes the instance's own `__dict__` (`live_state`)."""
    if not live and live_state(method):
        return None
    tree = ast.parse(f"class _C:\n{_indented(cst.Module([]).code_for_node(method))}")
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    state = pickled_state(node)
    if state is None or state.mode != ALL_BUT:
        return None
    return set(state.names) - _set_to_values(node)


def _indented(code: str) -> str:
    return "".join(f"    {line}" if line.strip() else line
                   for line in code.lstrip("\n").splitlines(keepends=True))


def _set_to_values(cls: ast.ClassDef) -> set[str]:
    """The keys the method sets to something other than None: `state["k"] = v`,
    `dict(..., k=v)`, `{**..., "k": v}`, `state.update(k=v)`."""
    found: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            found |= {key for t in node.targets if isinstance(t, ast.Subscript)
                      for key in [_constant(t.slice)] if key and not _none(node.value)}
        elif isinstance(node, ast.Call):
            found |= {k.arg for k in node.keywords if k.arg and not _none(k.value)}
        elif isinstance(node, ast.Dict):
            found |= {key for k, v in zip(node.keys, node.values) if k is not None
                      for key in [_constant(k)] if key and not _none(v)}
    return found


def _constant(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def live_state(method: cst.FunctionDef) -> str:
    """How `method` reaches the instance's own `__dict__` (`state = self.__dict__`, `vars(self)`
    or `super().__getstate__()`, which object's returns uncopied) to change it (`state["env"]
    = None`, `del`, `pop`, ...): that statement's code, or "" when it changes no such dict (a
    copy: pickling leaves the instance as it was)."""
    params = function_params(method)
    if len(params) != 1:
        return ""
    me = params[0]
    code = cst.Module([]).code_for_node
    aliases = {t.target.value: f"{t.target.value} = {code(node.value)}"
               for node in _own_nodes(method) if isinstance(node, cst.Assign)
               and _is_live(node.value, me) for t in node.targets
               if isinstance(t.target, cst.Name)}
    for node in _own_nodes(method):
        changed: Optional[cst.BaseExpression] = None
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) \
                else [node.target]
            subs = [t for t in targets if isinstance(t, cst.Subscript)]
            changed = subs[0].value if subs else None
        elif isinstance(node, cst.Del) and isinstance(node.target, cst.Subscript):
            changed = node.target.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in _MUTATING:
            changed = node.func.value
        if changed is None:
            continue
        if isinstance(changed, cst.Name) and changed.value in aliases:
            return aliases[changed.value]
        if _is_live(changed, me):
            return code(changed)
    return ""


def _is_live(expr: cst.BaseExpression, me: str) -> bool:
    """The instance's own `__dict__`: `me.__dict__`, `vars(me)`, `super().__getstate__()`."""
    if _is_own_dict(expr, me):
        return True
    return isinstance(expr, cst.Call) and not expr.args \
        and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "__getstate__" \
        and isinstance(expr.func.value, cst.Call) and dotted(expr.func.value.func) == "super"


def live_problem(method: cst.FunctionDef) -> str:
    """Why a `__getstate__` changing the instance's own `__dict__` cannot be kept nor extended
    ("" when it changes a copy)."""
    live = live_state(method)
    if not live:
        return ""
    what = f"`{live}` may be no copy (object's returns the dataset's own __dict__)" \
        if "super()" in live else f"`{live}` is no copy"
    return (f"which changes the dataset itself: {what}, so pickling it for a spawned worker "
            "also takes what it leaves out from the parent's dataset")


def kept_reason(cls_name: str, method: cst.FunctionDef, dropped: Sequence[str]) -> str:
    """Why the class's own `__getstate__`, which the fix cannot extend, cannot stay as it is
    either when the fix drops `dropped`; "" when it already leaves them all out."""
    live = live_problem(method)
    if live:
        return f"{cls_name} already defines __getstate__ ({live})"
    out = left_out(method)
    if out is None:
        return f"{cls_name} already defines __getstate__ (in a shape the fix cannot extend)"
    missing = [name for name in dropped if name not in out]
    if missing:
        return (f"{cls_name}.__getstate__ leaves out {_names(sorted(out))} but not "
                f"{_names(missing)}, in a shape the fix cannot extend")
    return ""


def _names(names: Sequence[str]) -> str:
    if not names:
        return "nothing"
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
