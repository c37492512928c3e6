"""Whether a DataLoader call's `*args`/`**kwargs` may carry a `worker_init_fn`: the wiring
adds `worker_init_fn=` only when none can (a second one is a TypeError at run time).

`**kwargs` is known when its name is bound once in the function making the call, to a dict
display or a `dict(...)` of keywords (or a conditional choosing between such), with no
`worker_init_fn` key, and is used nowhere else in that function but as `**kwargs`, by
reading methods (`kwargs.get(...)`), and by updates that add other keys (`kwargs["shuffle"]
= True`, `kwargs.update(cuda_kwargs)` with a mapping known the same way): the shape of
`loader_kwargs = dict(batch_size=64, num_workers=args.workers, pin_memory=True)` shared by a
train and a validation loader, or pytorch/examples' `train_kwargs.update(cuda_kwargs)`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .cstutil import Located, walk

_READING = frozenset(("get", "keys", "items", "values", "copy"))
_KEY = "worker_init_fn"


def opaque_star(located: Located, call: cst.Call) -> bool:
    """The call takes `*args`, or a `**` mapping that is not provably free of the key. One
    naming `worker_init_fn=` itself is free of it: Python refuses a second value for it
    (`DataLoader(ds, worker_init_fn=seed_worker, **cfg.loader)`; the fix chains the named
    function)."""
    stars = [arg for arg in call.args if arg.star]
    if not stars:
        return False
    if any(arg.keyword is not None and arg.keyword.value == _KEY
           for arg in call.args):
        return False
    if any(arg.star == "*" or not isinstance(arg.value, cst.Name) for arg in stars):
        return True
    scope = _enclosing_function(located, call)
    if scope is None:  # module level: other modules may change it
        return True
    return not all(_known_mapping(scope, arg.value.value) for arg in stars
                   if isinstance(arg.value, cst.Name))


def _enclosing_function(located: Located, call: cst.Call) -> Optional[cst.FunctionDef]:
    line = located.positions[call].start.line
    found: Optional[cst.FunctionDef] = None
    span = 0
    for node in walk(located.module):
        if isinstance(node, cst.FunctionDef):
            start, end = located.lines_of(node)
            if start <= line <= end and (found is None or end - start < span):
                found, span = node, end - start
    return found


def _known_mapping(function: cst.FunctionDef, name: str, seen: frozenset[str] = frozenset()
                   ) -> bool:
    """`name` is bound once in `function`, to a mapping without the key, and only unpacked,
    read or given other keys there."""
    if name in seen or any(p.name.value == name for p in _params(function)):
        return False
    seen = seen | {name}
    values: list[cst.BaseExpression] = []
    allowed: set[int] = set()  # the Name nodes of its binding and of its allowed uses
    for node in walk(function.body):
        if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
            if len(node.targets) != 1:
                return False
            values.append(node.value)
            allowed.add(id(node.targets[0].target))
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 \
                and _names_key(node.targets[0].target, name):
            target = node.targets[0].target
            assert isinstance(target, cst.Subscript)
            allowed.add(id(target.value))
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and node.func.attr.value == "update":
            if node.func.value.value == name:
                if not all(_adds_other_keys(function, arg, seen) for arg in node.args):
                    return False
                allowed.add(id(node.func.value))
            allowed.update(id(a.value) for a in node.args  # read into another mapping
                           if not a.star and isinstance(a.value, cst.Name))
        elif isinstance(node, cst.Arg) and node.star == "**" and isinstance(node.value, cst.Name):
            allowed.add(id(node.value))
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
                and node.attr.value in _READING:
            allowed.add(id(node.value))
        elif isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if any(isinstance(n, cst.Name) and n.value == name for n in walk(node)):
                return False  # a closure might change it
    if len(values) != 1 or not _free_of_key(values[0]):
        return False
    return all(id(n) in allowed for n in walk(function.body)
               if isinstance(n, cst.Name) and n.value == name)


def _names_key(target: cst.BaseExpression, name: str) -> bool:
    """`name["shuffle"]`: a key other than worker_init_fn, set on the mapping `name`."""
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
            and target.value.value == name and len(target.slice) == 1):
        return False
    index = target.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) \
        and index.value.evaluated_value != _KEY


def _adds_other_keys(function: cst.FunctionDef, arg: cst.Arg, seen: frozenset[str]) -> bool:
    """An argument of `name.update(...)` that adds no worker_init_fn."""
    if arg.keyword is not None:
        return arg.keyword.value != _KEY
    if arg.star:
        return False
    if isinstance(arg.value, cst.Name):
        return _known_mapping(function, arg.value.value, seen)
    return _free_of_key(arg.value)


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def _free_of_key(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _free_of_key(value.body) and _free_of_key(value.orelse)
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                   and e.key.evaluated_value != _KEY for e in value.elements)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            and value.func.value == "dict":
        return all(a.keyword is not None and not a.star and a.keyword.value != _KEY
                   for a in value.args)
    return False
