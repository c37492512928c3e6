"""Start methods: how a loader's workers may start (its `multiprocessing_context`, the
`set_start_method` its file or the code its entry scripts run sets, else the target's
default), and the entry scripts whose imports reach a file."""

from __future__ import annotations

import os
from typing import Iterable, Optional

from ..facts import FileFacts, LoaderCall
from .reach import Reaching

SPAWN_LIKE = ("spawn", "forkserver")
# Functions followed from an entry for the start method it sets, at most.
_MAX_REACHED = 256


class Starts(Reaching):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._entries: Optional[dict[str, list[Optional[FileFacts]]]] = None
        self._scoped_starts: Optional[dict[str, str]] = None
        self._reached_starts: dict[tuple[tuple[str, ...], str], tuple[str, str]] = {}

    def start_methods(self, loader: LoaderCall, facts: FileFacts
                      ) -> tuple[tuple[str, str], ...]:
        """How the loader's workers may start, each with where that comes from (for
        messages; "" when named in the loader's file): its `multiprocessing_context`, else the
        `set_start_method` of its own file, else that of each entry script that imports the
        loader's module (directly or through other modules; an entry is a checked file no
        other checked file imports), an entry naming none giving the target's default. A
        start method that is not a constant counts as the default."""
        reached = self.reached_start([loader.function], facts)[0] if loader.function else ""
        for named in (loader.context, reached, facts.start_method):
            if named and named != "?":
                return ((named, ""),)
        methods: dict[str, str] = {}
        for entry in self.entries(facts) or [facts]:
            named, scope = self.program_start(entry)
            if named and named != "?":
                where = os.path.basename(entry.path) or entry.module
                run = f"in {scope.rpartition('.')[2]}(), run by {where}" if scope else f"in {where}"
                methods.setdefault(named, f"set_start_method {run}")
            else:
                for method in self.default_start:
                    methods.setdefault(method, "the target's default")
        return tuple(methods.items())

    def program_start(self, entry: FileFacts) -> tuple[str, str]:
        """The start method an entry script sets, and the function setting it: at module level
        (`if __name__ == "__main__":` included; function ""), else in the code its module
        level runs (`main()`, a function of another module, a class it builds); ("", "") when
        none. One set in a function no entry reaches changes nothing."""
        if entry.start_method:
            return entry.start_method, ""
        if entry.entry_calls:
            return self.reached_start(entry.entry_calls, entry)
        # Module-level code runs nothing (a console script's module, run by a launcher): any
        # function no other function here calls may be what the launcher runs.
        called = {c for func in entry.functions for c in func.calls}
        return self.reached_start([f.qualname for f in entry.functions
                                   if f.qualname not in called], entry)

    def reached_start(self, names: Iterable[str], facts: FileFacts) -> tuple[str, str]:
        """The start method set by the functions (or classes' methods) `names` run, following
        the project functions they call, and the one setting it; ("", "") when none does."""
        key = (tuple(names), facts.path)
        found = self._reached_starts.get(key)
        if found is None:
            found = self._reached_starts[key] = self._reach_start(key[0], facts)
        return found

    def _reach_start(self, names: tuple[str, ...], facts: FileFacts) -> tuple[str, str]:
        if self._scoped_starts is None:
            self._scoped_starts = {}
            for each in self.files:
                for scope, method in each.scoped_start_methods:
                    self._scoped_starts.setdefault(scope, method)
                    owner = scope.rpartition(".")[0]
                    if owner in self.classes:  # a method: counts when its class is built
                        self._scoped_starts.setdefault(owner, method)
        seen: set[str] = set()
        queue = [(name, facts) for name in names]
        while queue and len(seen) < _MAX_REACHED:
            name, home = queue.pop(0)
            target = self.resolve(name, home)
            if target in seen:
                continue
            seen.add(target)
            cls = self.classes.get(target)
            owners = [m.qualname for m in self.mro(cls)] if cls is not None else [target]
            found = next((o for o in owners if o in self._scoped_starts), "")
            if found:
                return self._scoped_starts[found], found
            func = self.functions.get(target)
            if func is not None:
                inside = self.by_module.get(target.rpartition(".")[0], home)
                queue.extend((called, inside) for called in func.calls)
        return "", ""

    def entries(self, facts: FileFacts) -> list[FileFacts]:
        """The entry files whose imports reach `facts` (itself, if no checked file imports
        it); empty inside an import cycle that no entry reaches."""
        if self._entries is None:
            self._entries = self._entries_by_module()
        found = self._entries.get(facts.module) if facts.module else None
        return [facts if f is None else f for f in found] if found is not None else [facts]

    def _entries_by_module(self) -> dict[str, list[Optional[FileFacts]]]:
        """Module → its entry files; None stands for the module's own file."""
        if len(self.files) == 1:  # one file alone (flake8, editors): imported by no other
            return {f.module: [None] for f in self.files if f.module}
        importers: dict[str, set[str]] = {}
        for facts in self.files:
            for module in self._imported_modules(facts):
                if module != facts.module:
                    importers.setdefault(module, set()).add(facts.module)
        out: dict[str, list[Optional[FileFacts]]] = {}
        for module in {f.module for f in self.files if f.module}:
            seen, stack, found = {module}, [module], []
            while stack:
                current = stack.pop()
                above = importers.get(current, set())
                if not above:
                    found.append(None if current == module else self.by_module[current])
                stack.extend(m for m in above if m not in seen)
                seen.update(above)
            out[module] = sorted(found, key=lambda f: f.path if f else "")
        return out

    def _imported_modules(self, facts: FileFacts) -> set[str]:
        """Checked modules `facts` imports at module level (`from a.b import X`: a.b and the
        packages above it)."""
        out: set[str] = set()
        package = facts.module.rpartition(".")[0]
        for target in [q for _, q in facts.imports] + list(facts.star_imports):
            name = self._canonical(target)
            module, _ = self._split_module(name) if name not in self.by_module else (name, "")
            if module is None and package:  # a script's sibling module
                sibling = self._canonical(f"{package}.{target}")
                module = sibling if sibling in self.by_module else self._split_module(sibling)[0]
            while module:
                if module in self.by_module:
                    out.add(module)
                module = module.rpartition(".")[0]
        return out

    def class_start_methods(self, facts: FileFacts) -> tuple[str, ...]:
        """How workers may start for code in `facts` that no loader was linked to: the
        start methods of the entry scripts whose imports reach it."""
        entries = self.entries(facts) or [facts]
        if entries == [facts] and not self.file_loaders(facts) and not facts.start_method:
            # Imported by no checked file: loaded by name (`construct_class_by_name`,
            # importlib), so by whichever entry builds loaders: the start methods of them all.
            found = [m for f, loader in self.loaders() for m, _ in self.start_methods(loader, f)]
            if found:
                return tuple(dict.fromkeys(found))
        methods: list[str] = []
        for entry in entries:
            named = self.program_start(entry)[0]
            found = [named] if named and named != "?" else list(self.default_start)
            methods.extend(m for m in found if m not in methods)
        return tuple(methods)
