"""The registry's handle classes as live classes: `module.Class` names resolved through
`sys.modules` only (a library the program never imported cannot have made an object), and
each object's type matched once (its MRO: subclasses count), then cached."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

from ..registry import DEFAULT_REGISTRY, HandleType, Registry


@dataclass(frozen=True)
class Match:
    """A live object of a handle class: its registry row, and whether it is derived from the
    handle (a cursor, a transaction, an HDF5 dataset) rather than the handle itself."""

    row: HandleType
    derived: bool
    name: str = ""  # the registry's `module.Class` (a C type may call its module `builtins`)


def resolve(name: str) -> Optional[type]:
    """`a.b.C` → the class, if module `a.b` (or `a`, then attributes) is already imported."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        value: object = module
        try:
            for attr in parts[cut:]:
                value = getattr(value, attr)
        except Exception:  # noqa: BLE001 - a lazy module attribute may fail: not imported
            return None
        return value if isinstance(value, type) else None
    return None


class TypeTable:
    """Which live types are handles. `refresh()` (cheap) re-resolves when modules were
    imported since; `match(obj)` is one dict lookup per type after the first."""

    def __init__(self, registry: Registry = DEFAULT_REGISTRY) -> None:
        self.names = registry.runtime_types()
        self._modules_seen = -1
        self._classes: dict[type, Match] = {}
        self._by_type: dict[type, Optional[Match]] = {}

    def refresh(self) -> None:
        if len(sys.modules) == self._modules_seen:
            return
        self._modules_seen = len(sys.modules)
        classes: dict[type, Match] = {}
        for name, (row, derived) in self.names.items():
            cls = resolve(name)
            if cls is not None:
                classes.setdefault(cls, Match(row, derived, name))
        if classes.keys() != self._classes.keys():
            self._classes = classes
            self._by_type = {}

    def match_type(self, kind: type) -> Optional[Match]:
        try:
            return self._by_type[kind]
        except KeyError:
            pass
        found: Optional[Match] = None
        try:
            mro = kind.__mro__
        except AttributeError:
            mro = (kind,)
        for cls in mro:
            found = self._classes.get(cls)
            if found is not None:
                break
        self._by_type[kind] = found
        return found
