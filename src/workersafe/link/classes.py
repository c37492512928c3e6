"""The class hierarchy: project bases (the MRO), what a class is (a torch dataset, a
DataLoader subclass, a subclass of a handle constructor), the method a class runs for a
name, the `__init__` parameter it keeps as an attribute."""

from __future__ import annotations

from typing import Iterable, Optional

from ..facts import ClassFacts, FileFacts, MethodFacts
from ..torchnames import LOADERS
from .names import Names

# A class's effective methods: name → (the class that defines it, the method).
Methods = dict[str, tuple[ClassFacts, MethodFacts]]


class Hierarchy(Names):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._mros: dict[str, tuple[ClassFacts, list[ClassFacts]]] = {}
        self._reads: dict[str, set[str]] = {}
        self._datasets: dict[str, tuple[ClassFacts, bool]] = {}

    def base_classes(self, cls: ClassFacts) -> list[ClassFacts]:
        facts = self.class_file[cls.qualname]
        out = []
        for base in cls.bases:
            found = self.classes.get(self.resolve(base, facts))
            if found is not None and found.qualname != cls.qualname:
                out.append(found)
        return out

    def mro(self, cls: ClassFacts) -> list[ClassFacts]:
        """The class and its project bases, nearest first (depth-first, no repeats)."""
        cached = self._mros.get(cls.qualname)
        if cached is not None and cached[0] is cls:
            return list(cached[1])
        seen: dict[str, ClassFacts] = {}
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current.qualname in seen:
                continue
            seen[current.qualname] = current
            stack.extend(self.base_classes(current))
        found = list(seen.values())
        self._mros[cls.qualname] = (cls, found)
        return list(found)

    def handle_base(self, cls: ClassFacts) -> str:
        """The handle constructor (a registry key) a project class derives from, through
        its project bases (`class ApiSession(requests.Session)`, `class Mine(ApiSession)`):
        its instances are handles of that kind. "" when none."""
        for member in self.mro(cls):
            facts = self.class_file[member.qualname]
            for base in member.bases:
                resolved = self.resolve(base, facts)
                if resolved not in self.classes and self.registry.lookup(resolved) is not None:
                    return resolved
        return ""

    def is_torch_dataset(self, cls: ClassFacts) -> bool:
        """A class deriving from a torch (or configured) dataset base (asked several times per
        class by the rules: answered once)."""
        cached = self._datasets.get(cls.qualname)
        if cached is not None and cached[0] is cls:
            return cached[1]
        found = False
        for member in self.mro(cls):
            facts = self.class_file[member.qualname]
            if any(self._is_dataset_base(b, facts) for b in member.bases):
                found = True
                break
        self._datasets[cls.qualname] = (cls, found)
        return found

    def _is_dataset_base(self, base: str, facts: FileFacts) -> bool:
        resolved = self.resolve(base, facts)
        if resolved in self.dataset_bases or base in self.dataset_bases:
            return True
        if "." in base or resolved in self.classes:
            return False
        # A bare name from a star import of a module outside the checked files: a configured
        # (or torch) base of that module or of a module below that package.
        return any(short == base and (module == star or module.startswith(star + "."))
                   for star in facts.star_imports
                   for module, _, short in (b.rpartition(".") for b in self.dataset_bases))

    def is_loader_class(self, cls: ClassFacts) -> bool:
        """A project class whose bases lead to torch's DataLoader."""
        return any(self.resolve(b, self.class_file[m.qualname]) in LOADERS
                   for m in self.mro(cls) for b in m.bases)

    def _method_key(self, cls: ClassFacts, name: str) -> str:
        """"<defining class>.<name>" for the method `cls` has (its own or inherited)."""
        owner = next((m for m in self.mro(cls) if m.method(name) is not None), None)
        return f"{owner.qualname}.{name}" if owner is not None else ""

    def _kept_param(self, cls: ClassFacts, attr: str) -> Optional[tuple[ClassFacts, str]]:
        """The class whose `__init__` `cls` runs and its parameter ("<class>.__init__#<index>#
        <name>") kept as `self.<attr>`; None when no parameter is kept there."""
        owners = [m for m in self.mro(cls) if m.method("__init__") is not None]
        if not owners:
            return None
        init_owner = owners[0]
        params = init_owner.init_params
        param = next((p for p, a in init_owner.param_attrs if a == attr and p in params), None)
        if param is None and len(owners) > 1 and init_owner.base_init is not None:
            # kept by the base's `__init__`, given this one's parameter as it is
            # (`super().__init__(dataset=dataset)`, the base keeping `self._dataset = dataset`)
            base = owners[1]
            kept = next((p for p, a in base.param_attrs
                         if a == attr and p in base.init_params), None)
            slots = {kept, f"#{base.init_params.index(kept)}"} if kept is not None else set()
            source = next((src for slot, src in init_owner.base_init.args if slot in slots), "")
            param = source[2:] if source.startswith("p:") and source[2:] in params else None
        if param is None:
            return None
        return init_owner, f"{init_owner.qualname}.__init__#{params.index(param)}#{param}"

    def _read_later(self, cls: ClassFacts) -> set[str]:
        """The attributes a class's methods other than `__init__` read (once per class)."""
        found = self._reads.get(cls.qualname)
        if found is None:
            found = self._reads[cls.qualname] = {
                a for member in self.mro(cls) for m in member.methods if m.name != "__init__"
                for a in m.attrs_read}
        return found


def method_closure(roots: Iterable[str], methods: Methods) -> set[str]:
    """The methods `roots` run: themselves and every `self.m()` they call, transitively."""
    seen: set[str] = set()
    stack = [r for r in roots if r in methods]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(c for c in methods[name][1].self_calls if c in methods)
    return seen
