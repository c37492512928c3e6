"""Code that asks whether an attribute exists (`hasattr(self, "txn")`, `getattr(self, "txn",
None)`, `"txn" in self.__dict__`, `vars(self)`): a property always exists, so turning such an
attribute into a lazy property silently changes what that code does."""

from __future__ import annotations

import libcst as cst

from .cstutil import dotted, walk


def probed_attrs(node: cst.CSTNode, attrs: list[str]) -> list[tuple[str, str]]:
    """(attribute, how it is probed) for each of `attrs` that code inside `node` probes."""
    wanted = set(attrs)
    found: list[tuple[str, str]] = []
    for sub in walk(node):
        if isinstance(sub, cst.Call):
            name = dotted(sub.func)
            if name in ("hasattr", "getattr", "delattr") and len(sub.args) >= 2:
                key = _string(sub.args[1].value)
                if key in wanted:
                    found.append((key, f"{name}()"))
            elif name == "vars" and sub.args:
                found += [(a, "vars()") for a in attrs]
            elif name.endswith("__dict__.get") or name.endswith("__dict__.pop") \
                    or name.endswith("__dict__.setdefault"):
                key = _string(sub.args[0].value) if sub.args else None
                if key in wanted:
                    found.append((key, "__dict__"))
        elif isinstance(sub, cst.Subscript) and dotted(sub.value).endswith("__dict__"):
            for element in sub.slice:
                if isinstance(element.slice, cst.Index):
                    key = _string(element.slice.value)
                    if key in wanted:
                        found.append((key, "__dict__"))
        elif isinstance(sub, cst.Comparison):
            for target in sub.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)) \
                        and dotted(target.comparator).endswith("__dict__"):
                    key = _string(sub.left)
                    if key in wanted:
                        found.append((key, "`in __dict__`"))
    return sorted(set(found))


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
