"""How a class's `__init__` calls its base's `__init__` (`ClassFacts.base_init`): which of its
parameters go to which of the base's, so the linker can follow a call of a DataLoader subclass
(`LTRLoader(name, dataset, num_workers=4)`) to what torch's DataLoader is given."""

from __future__ import annotations

import ast
from typing import Container, Iterator, Optional

from . import syntax
from ..facts import BaseInit
from .nodes import child_nodes
from .values import call_args, int_value, is_self, is_super

# id() of an `__init__` → its first call of the base's `__init__` (None: it makes none)
Found = dict[int, Optional[ast.Call]]


def base_init(node: ast.ClassDef, calling: Optional[Container[int]] = None,
              found: Optional[Found] = None) -> Optional[BaseInit]:
    """The first `super().__init__(...)` / `Base.__init__(self, ...)` call of the class's
    `__init__` (outside nested functions), read argument by argument; None without either.
    `calling`: if given, id() of every method definition that may make such a call (what the
    main walk saw); the `__init__` is searched only if it is one. `found`: the calls searched
    for so far (shared with `init_callables`: one search per `__init__`)."""
    init = next((s for s in node.body if type(s) is syntax.FunctionDef and s.name == "__init__"),
                None)
    if init is None or (calling is not None and id(init) not in calling):
        return None
    call = _first_base_init_call(init, found)
    if call is None:
        return None
    args = init.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]
    names = set(positional) | {a.arg for a in args.kwonlyargs}
    varargs = args.vararg.arg if args.vararg is not None else ""
    varkw = args.kwarg.arg if args.kwarg is not None else ""
    passed = call_args(call)
    if not is_super(_receiver(call)):
        passed = passed[1:]  # `Base.__init__(self, ...)`
    out: list[tuple[str, str]] = []
    position = 0
    for arg in passed:
        value = arg.value
        if type(value) is syntax.Name and value.id in names:
            source = f"p:{value.id}"
        elif type(value) is syntax.Name and value.id in (varargs, varkw) and arg.star:
            source = "*" if value.id == varargs else "**"
        elif (number := int_value(value)) is not None:
            source = f"={number}"
        else:
            source = "?"
        if arg.star == "**":
            out.append(("**", source))
        elif arg.star:
            out.append((f"*{position}", source))
        elif arg.keyword is not None:
            out.append((arg.keyword, source))
        else:
            out.append((f"#{position}", source))
            position += 1
    return BaseInit(len(positional), bool(varargs), bool(varkw), tuple(out))


def init_callables(node: ast.ClassDef, calling: Optional[Container[int]] = None,
                   found: Optional[Found] = None) -> tuple[tuple[str, str], ...]:
    """Bare names `__init__` may keep as a callable attribute (`ClassFacts.init_callables`):
    ("p:<param>", name) for a parameter defaulting to a name (`loader=default_loader`), and
    (slot, name) for a name it passes to its base's `__init__` (slot as in `BaseInit.args`).
    `calling`, `found`: as for `base_init`."""
    init = next((s for s in node.body if type(s) is syntax.FunctionDef and s.name == "__init__"),
                None)
    if init is None:
        return ()
    args = init.args
    positional = (*args.posonlyargs, *args.args)
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    out = [(f"p:{arg.arg}", default.id) for arg, default in pairs
           if type(default) is syntax.Name and default.id != "None"]
    if calling is not None and id(init) not in calling:
        return tuple(out)
    call = _first_base_init_call(init, found)
    if call is None:
        return tuple(out)
    own = {a.arg for a in (*positional, *args.kwonlyargs)}
    passed = call_args(call)
    if not is_super(_receiver(call)):
        passed = passed[1:]
    position = 0
    for arg in passed:
        if arg.star:
            break  # positions after a `*x` are not known
        value = arg.value
        slot = arg.keyword if arg.keyword is not None else f"#{position}"
        if arg.keyword is None:
            position += 1
        if type(value) is syntax.Name and value.id not in own:
            out.append((slot, value.id))
    return tuple(out)


def _receiver(call: ast.Call) -> ast.expr:
    func = call.func
    return func.value if type(func) is syntax.Attribute else func


def _first_base_init_call(init: ast.FunctionDef, found: Optional[Found]) -> Optional[ast.Call]:
    if found is None:
        return next(_base_init_calls(init), None)
    key = id(init)
    if key not in found:
        found[key] = next(_base_init_calls(init), None)
    return found[key]


def _base_init_calls(func: ast.FunctionDef) -> Iterator[ast.Call]:
    stack: list[ast.AST] = list(reversed(func.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Lambda,
                             syntax.ClassDef)):
            continue
        if type(node) is syntax.Call and type(node.func) is syntax.Attribute \
                and node.func.attr == "__init__":
            receiver = node.func.value
            if is_super(receiver) or (node.args and is_self(node.args[0])):
                yield node
        children = child_nodes(node)  # (ast.iter_child_nodes less contexts: the same calls)
        children.reverse()
        stack.extend(children)
