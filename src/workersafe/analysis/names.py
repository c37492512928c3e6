"""Qualified names through a file's own imports (cheaper than libcst's QualifiedNameProvider,
which costs about five parses per file)."""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from ..discovery import module_of_import  # noqa: F401 - re-exported for the extractor
from ..torchnames import (  # noqa: F401 - re-exported for the extractor
    CACHE_DECORATORS, DATASET_BASES, GET_CONTEXT, LOADERS, PARTIAL, SET_START_METHOD,
    TORCH_DATA, TORCH_STAR_NAMES, WRAPPERS,
)


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` → "a.b.c"; `Dataset[int]` → "Dataset"; anything else → None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Subscript):
        return dotted(node.value) if not parts else None
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


class Scope:
    """Local name → qualified name, with a parent (function-local imports shadow module ones)."""

    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self.parent = parent
        self.names: dict[str, str] = {}
        self.star_modules: list[str] = []

    def bind(self, local: str, qualified: str) -> None:
        self.names[local] = qualified

    def lookup(self, local: str) -> Optional[str]:
        scope: Optional[Scope] = self
        while scope is not None:
            if local in scope.names:
                return scope.names[local]
            scope = scope.parent
        return None

    def all_star_modules(self) -> Iterable[str]:
        scope: Optional[Scope] = self
        while scope is not None:
            yield from scope.star_modules
            scope = scope.parent


def bind_import(scope: Scope, node: cst.Import) -> None:
    for alias in node.names:
        full = dotted(alias.name) or ""
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            scope.bind(alias.asname.name.value, full)
        else:
            head = full.split(".", 1)[0]
            scope.bind(head, head)


def bind_import_from(scope: Scope, node: cst.ImportFrom, module: str, is_package: bool) -> None:
    name = dotted(node.module) if node.module is not None else ""
    source = module_of_import(module, is_package, len(node.relative), name or "")
    if isinstance(node.names, cst.ImportStar):
        scope.star_modules.append(source)
        return
    for alias in node.names:
        imported = dotted(alias.name) or ""
        local = imported
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        scope.bind(local, f"{source}.{imported}" if source else imported)


def qualify(name: str, scope: Scope, known: frozenset[str]) -> str:
    """Qualify a dotted name. Unresolvable heads stay bare (the linker may resolve them)."""
    head, _, rest = name.partition(".")
    target = scope.lookup(head)
    if target is None:
        for star in scope.all_star_modules():
            candidate = f"{star}.{head}"
            if candidate in known or (star == TORCH_DATA and head in TORCH_STAR_NAMES):
                target = candidate
                break
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target
