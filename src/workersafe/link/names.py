"""Names across modules: imports, re-exports, star imports and the other spellings of a
module (`discovery.module_spellings`), resolved to the project's classes, functions and
module variables. The base of the linked program (`link.Project`): the files and their
definitions by name."""

from __future__ import annotations

from typing import Optional

from ..discovery import module_aliases
from ..facts import ClassFacts, FileFacts, FunctionFacts, ModuleHandle
from ..frameworks import star_reexport
from ..records import field, record
from ..registry import DEFAULT_REGISTRY, Registry
from ..torchnames import DATASET_BASES

# The start method a target platform gives a loader that names none (see config.Config).
DEFAULT_START_METHODS = ("fork",)

# Re-exports followed for one name, at most: real chains are a handful long.
_MAX_RESOLVE_DEPTH = 64


@record()
class Names:
    files: list[FileFacts]
    dataset_bases: frozenset[str] = DATASET_BASES
    # start methods of a loader that names none and whose entry scripts set none: one per
    # platform the code targets (config `platform`, `target-version`)
    default_start: tuple[str, ...] = DEFAULT_START_METHODS
    # the handle constructors: a project class deriving from one builds that handle
    registry: Registry = DEFAULT_REGISTRY
    by_module: dict[str, FileFacts] = field(init=False)
    classes: dict[str, ClassFacts] = field(init=False)
    functions: dict[str, FunctionFacts] = field(init=False)
    class_file: dict[str, FileFacts] = field(init=False)

    def __post_init__(self) -> None:
        self.by_module = {f.module: f for f in self.files}
        self._by_path = {f.path: f for f in self.files}
        self.classes, self.functions, self.class_file = {}, {}, {}
        for facts in self.files:
            for cls in facts.classes:
                self.classes[cls.qualname] = cls
                self.class_file[cls.qualname] = facts
            for func in facts.functions:
                self.functions[func.qualname] = func
        self._resolve_cache: dict[str, str] = {}
        self._resolved_in: dict[tuple[str, str], str] = {}  # (name, file) → resolved
        self._canonicals: dict[str, str] = {}
        self._module_names: dict[str, tuple[FileFacts, frozenset[str]]] = {}  # `_module_attr`
        self._resolve_depth = 0
        # `mylib.ds` for helpers/mylib/ds.py, `src.data` for src/data.py: → the module name
        self.aliases = module_aliases((f.path, f.module) for f in self.files)

    def resolve(self, name: str, context: Optional[FileFacts] = None) -> str:
        """Follow re-exports until a defined class/function/variable, or the name as given."""
        if context is None:
            return self._resolve_absolute(name)
        key = (name, context.path)
        found = self._resolved_in.get(key)
        if found is None:
            found = self._resolved_in[key] = self._resolve_in(name, context)
        return found

    def _resolve_in(self, name: str, context: Optional[FileFacts]) -> str:
        if context is not None and "." not in name:
            for star in context.star_imports:
                found = self._through_star(star, name)
                if found:
                    return found
            if context.module:
                local = f"{context.module}.{name}"
                if self._defined(local):
                    return local
        resolved = self._resolve_absolute(name)
        if context is not None and not self._defined(resolved) and "." in context.module:
            # `python train.py` puts the script's directory on sys.path: `from data import X`
            # in pkg/train.py may mean pkg/data.py even where pkg is not a package.
            sibling = self._resolve_absolute(f"{context.module.rpartition('.')[0]}.{name}")
            if self._defined(sibling):
                return sibling
        return resolved

    def _through_star(self, star: str, name: str) -> str:
        """What `from <star> import *` binds to `name`: a project definition, a name the star
        module itself imports (`from torch.utils.data import Dataset` in a project module), or
        a torch class a framework re-exports; "" when unknown."""
        candidate = f"{star}.{name}"
        found = self.resolve(candidate)
        if self._defined(found):
            return found
        if found != self._canonical(candidate) and self._canonical(star) in self.by_module:
            return found  # re-exported through an import of the star module
        return star_reexport(star, name)

    def _canonical(self, name: str) -> str:
        """`name` with an alias spelling of its module replaced by the module's name."""
        if not self.aliases:
            return name
        found = self._canonicals.get(name)
        if found is None:
            found = self._canonicals[name] = self._canonical_uncached(name)
        return found

    def _canonical_uncached(self, name: str) -> str:
        """The longest run of leading parts that names a module decides: a module's own name
        keeps `name` as it is (`lhotse.lhotse.features` where lhotse/lhotse/ is a package
        and `lhotse` another spelling of it: not `lhotse.lhotse.lhotse.features`, then ever
        longer through each re-export), another spelling of one is replaced by it."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.by_module:
                return name
            module = self.aliases.get(prefix)
            if module is not None:
                return ".".join([module, *parts[cut:]])
        return name

    def _resolve_absolute(self, name: str) -> str:
        name = self._canonical(name)
        if name in self._resolve_cache:
            return self._resolve_cache[name]
        if self._resolve_depth >= _MAX_RESOLVE_DEPTH:
            # Not a cycle but an ever longer name (`from p.missing import missing` in
            # p/__init__.py turns `p.missing.X` into `p.missing.missing.X`, ...): give up.
            return name
        self._resolve_cache[name] = name  # cycle guard
        self._resolve_depth += 1
        try:
            resolved = self._resolve_uncached(name)
        finally:
            self._resolve_depth -= 1
        self._resolve_cache[name] = resolved
        return resolved

    def _defined(self, name: str) -> bool:
        return name in self.classes or name in self.functions or self._module_attr(name) is not None

    def _module_attr(self, name: str) -> Optional[tuple[FileFacts, str]]:
        module, _, attr = name.rpartition(".")
        facts = self.by_module.get(module)
        if facts is None:
            return None
        known = self._module_names.get(module)
        if known is None or known[0] is not facts:  # its variables and handles, by name
            known = self._module_names[module] = (facts, frozenset(
                [n for n, _ in facts.module_vars] + [h.name for h in facts.module_handles]))
        return (facts, attr) if attr in known[1] else None

    def _resolve_uncached(self, name: str) -> str:
        if self._defined(name):
            return name
        module, attr = self._split_module(name)
        if module is None:
            return name
        facts = self.by_module[module]
        head, _, rest = attr.partition(".")
        imported = facts.import_map().get(head)
        if imported is not None:
            return self.resolve(f"{imported}.{rest}" if rest else imported)
        for star in facts.star_imports:
            if star not in self.by_module:
                # Its names are unknown. Following it anyway turns `p.X` into `p.missing.X`
                # (`p` is then the longest known module), `p.missing.missing.X`, ... and with
                # two such star imports the names branch: no end in sight.
                continue
            found = self._through_star(star, attr)
            if found:
                return found
        return name

    def _split_module(self, name: str) -> tuple[Optional[str], str]:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.by_module:
                return module, ".".join(parts[cut:])
        return None, name

    def read_class(self, name: str, facts: FileFacts) -> Optional[ClassFacts]:
        """The project class a bare name read in `facts` is (through its imports)."""
        return self.classes.get(self.resolve(facts.import_map().get(name, name), facts))

    def module_handle(self, name: str, facts: FileFacts
                      ) -> Optional[tuple[FileFacts, ModuleHandle]]:
        """The module-level handle a bare name in `facts` refers to, if any; or a qualified
        one read as a module's attribute (`clients.SESSION`, analysis/extract's reads)."""
        for handle in facts.module_handles:
            if handle.name == name:
                return facts, handle
        imported = facts.import_map().get(name)
        if imported:
            candidates = [imported]
        elif "." in name:
            candidates = [name]
        else:
            candidates = [f"{s}.{name}" for s in facts.star_imports]
        for candidate in candidates:
            found = self._module_attr(self.resolve(candidate, facts))
            if found is not None:
                home, attr = found
                for handle in home.module_handles:
                    if handle.name == attr:
                        return home, handle
        return None
