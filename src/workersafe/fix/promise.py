"""Static checks of what a fix promises, run on the rewritten code of every fix (re-linting
alone cannot see all of it: once the handle moved, a cursor left behind is no longer
recognised as one):
- no handle, and no object derived from one, is still set outside the opener in the method
  it was created in, and none survives pickling (`__getstate__` drops every one);
- every global name the fix introduces is bound at module level on every path;
- no attribute turned into a lazy property is probed with hasattr/getattr/`__dict__`."""

from __future__ import annotations

import builtins
import symtable
from collections import Counter
from typing import Mapping, Optional

import libcst as cst

from ..registry import Registry
from .cstutil import module_bindings, self_attr, small_statements, walk
from .getstate import left_out
from .handles import HandleNames
from .initplan import find_method
from .probes import probed_attrs


class PromiseBroken(Exception):
    """The rewritten code does not keep the fix's promise; the message says where."""


def check_class(module: cst.Module, registry: Registry, class_name: str,
                openers: tuple[str, ...], methods: tuple[str, ...],
                properties: tuple[str, ...], handles: tuple[str, ...] = (),
                factories: Optional[Mapping[str, str]] = None) -> None:
    """`factories`: the project calls that made the moved handles (a factory method, a holder
    class; see fix/factories.py): what they return counts as the handle."""
    cls = next((s for s in module.body if isinstance(s, cst.ClassDef)
                and s.name.value == class_name), None)
    if cls is None:
        raise PromiseBroken(f"class {class_name} is gone")
    names = HandleNames(module, registry, handles, factories)
    held: set[str] = set()
    for opener in openers:
        method = find_method(cls, opener)
        if method is None:
            raise PromiseBroken(f"{class_name}.{opener} is missing")
        held |= handle_attrs(method, names)
    public = held | {a.lstrip("_") for a in held} | set(properties)
    for name in methods:
        method = find_method(cls, name)
        if method is None:
            continue
        for attr in sorted(handle_attrs(method, names, public, fresh=False)):
            raise PromiseBroken(f"self.{attr} in {class_name}.{name} holds a handle or an object "
                                "derived from one, outside the opener")
    dropped = _dropped(cls)
    kept = sorted(held - dropped)
    if kept:
        raise PromiseBroken(f"self.{kept[0]} of {class_name} holds a handle and is kept when "
                            "pickling")
    probed = probed_attrs(cls, list(properties))
    if probed:
        attr, how = probed[0]
        raise PromiseBroken(f"{class_name}.{attr} became a property but is probed with {how}")


def handle_attrs(method: cst.FunctionDef, names: HandleNames, tracked: set[str] | None = None,
                 fresh: bool = True) -> set[str]:
    """Attributes of self the method sets to a handle it creates (unless not `fresh`: other
    handles are the re-lint's business) or to an object derived from one or from the
    `tracked` attributes, through locals too; and `tracked` attributes it sets at all."""
    attrs: set[str] = set(tracked or ())
    found: set[str] = set()
    local_handles: set[str] = set()

    def holds(value: cst.BaseExpression) -> bool:
        if not names.derives(value, attrs, local_handles):
            return False
        return fresh or _reads(value, attrs, local_handles)

    for _ in range(2):  # twice: loops feed later iterations
        for small in small_statements(method.body):
            value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute):
                container = self_attr(small.value.func.value)
                if container and any(holds(a.value) for a in small.value.args):
                    found.add(container)
                continue
            if value is None:
                continue
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                else [small.target] if isinstance(small, cst.AnnAssign) else []
            for target in targets:
                attr = self_attr(target) or (self_attr(target.value) if isinstance(
                    target, cst.Subscript) else None)
                if attr is not None and (holds(value) or (tracked and attr in tracked)):
                    found.add(attr)
                elif isinstance(target, cst.Name) and holds(value):
                    local_handles.add(target.value)
    return found


def _reads(node: cst.CSTNode, attrs: set[str], local_handles: set[str]) -> bool:
    for sub in walk(node):
        if isinstance(sub, cst.Attribute) and self_attr(sub) in attrs:
            return True
        if isinstance(sub, cst.Name) and sub.value in local_handles:
            return True
    return False


def _dropped(cls: cst.ClassDef) -> set[str]:
    """The attribute names `__getstate__` leaves out (the strings it names, and the keywords
    of `dict(self.__dict__, env=None)` it reads key by key)."""
    method = find_method(cls, "__getstate__")
    if method is None:
        return set()
    return {n.evaluated_value for n in walk(method) if isinstance(n, cst.SimpleString)
            and isinstance(n.evaluated_value, str) and n.evaluated_value.isidentifier()} \
        | (left_out(method) or set())


# --- names the fix introduces ---------------------------------------------------------------

def check_introduced_names(path: str, old_text: str, new_text: str, module: cst.Module) -> None:
    """Every global name a new or changed function reads is bound at module level on every
    path (an `import os` under `if __name__ == "__main__":` is not)."""
    new_refs = _global_refs(new_text, path)
    added = new_refs - _global_refs(old_text, path)
    bound = module_bindings(module) | set(dir(builtins)) | {"__file__", "__name__"}
    for _, name in sorted(added):
        if name not in bound:
            raise PromiseBroken(f"{path}: the fix reads {name!r}, which is not bound at module "
                                "level on every path")


def _global_refs(text: str, path: str) -> Counter[tuple[str, str]]:
    """(scope, name) for each global name read inside a function."""
    try:
        table = symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError, RecursionError):
        return Counter()
    refs: Counter[tuple[str, str]] = Counter()
    stack = [(table, "")]
    while stack:
        current, prefix = stack.pop()
        scope = f"{prefix}.{current.get_name()}" if prefix else current.get_name()
        if current.get_type() == "function":
            for symbol in current.get_symbols():
                if symbol.is_referenced() and symbol.is_global() and not symbol.is_assigned():
                    refs[(scope, symbol.get_name())] += 1
        stack.extend((child, scope) for child in current.get_children())
    return refs
