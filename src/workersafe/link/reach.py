"""Loaders → dataset classes: the classes each loader's dataset may be (the value flow,
a parameter's through each call site), then what those keep (holders and sub-datasets built
in `__init__` or passed to it), reached by the same loaders; `reached` says how."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterator, Optional

from ..facts import ClassFacts, DatasetRef, FileFacts, LoaderCall
from .loaders import Loaders

# (file, loader, the reference that constructs the class) for each loader reaching a class
LoaderUse = tuple[FileFacts, LoaderCall, DatasetRef]


@dataclass(frozen=True)
class Reach:
    """How a class that no loader names directly is reached: kept by `outer` in `attr`
    (a holder object or sub-dataset built in its `__init__`), or `passed` to its
    constructor (`param`)."""

    outer: str  # the class name of the outer dataset (or holder)
    attr: str
    passed: bool = False
    param: str = ""

    def describe(self) -> str:
        if self.passed:
            return f"(passed to {self.outer}({self.param}) as self.{self.attr})"
        return f"(held by {self.outer}.{self.attr})"


class Reaching(Loaders):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._by_class: Optional[dict[str, list[LoaderUse]]] = None
        # class qualname → how it is reached through another class (see `loaders_by_class`)
        self.reached: dict[str, list[Reach]] = {}

    def loaders_by_class(self) -> dict[str, list[LoaderUse]]:
        """Loader uses per class: the classes a loader's dataset may be (through factories,
        containers, call sites), then what those keep — holders and sub-datasets built in
        `__init__` or passed to it — reached by the same loaders (see `reached`). Computed
        once; the rules read it, never change it."""
        if self._by_class is not None:
            return self._by_class
        out: dict[str, list[LoaderUse]] = {}
        seen: set[tuple[str, int, DatasetRef]] = set()  # (class, loader, constructing ref)

        def add(qualname: str, use: LoaderUse) -> bool:
            self._work += 1
            key = (qualname, id(use[1]), use[2])
            if key in seen:
                return False
            seen.add(key)
            out.setdefault(qualname, []).append(use)
            return True

        same: dict[LoaderCall, LoaderCall] = {}  # one object per loader as read
        for facts, loader in self.loaders():
            for ref in loader.datasets:
                for used, cls, constructing in self._loader_classes(facts, loader, ref):
                    add(cls.qualname, (facts, same.setdefault(used, used), constructing))
        self.reached = {}
        # Then what each class keeps, as a worklist over (class, loader): what a class keeps
        # is found once, when a loader first reaches it (the classes its constructions pass
        # to `__init__` from its direct uses, the only ones with arguments), and each loader
        # crosses each keeping once. The uses through keepings are written out at the end.
        loaders_of = {name: {id(u[1]): (u[0], u[1]) for u in uses} for name, uses in out.items()}
        keeps: dict[str, list[tuple[str, DatasetRef]]] = {}  # outer → (inner, kept ref)
        kept_in: dict[str, list[tuple[str, DatasetRef]]] = {}  # inner → (outer, kept ref)
        pending = [(name, key) for name, found in loaders_of.items() for key in found]
        while pending:
            name, key = pending.pop()
            self._work += 1
            edges = keeps.get(name)
            if edges is None:
                edges = keeps[name] = self._keepings(name, out.get(name, []), kept_in)
            for inner, _ in edges:
                reaching = loaders_of.setdefault(inner, {})
                if key not in reaching:
                    self._work += 1
                    reaching[key] = loaders_of[name][key]
                    pending.append((inner, key))
        for inner, edges in kept_in.items():
            uses = out.setdefault(inner, [])
            for outer, kept in edges:
                self._work += len(loaders_of[outer])
                uses += [(f, loader, kept) for f, loader in loaders_of[outer].values()]
        self._by_class = out
        return out

    def _loader_classes(self, facts: FileFacts, loader: LoaderCall, ref: DatasetRef
                        ) -> Iterator[tuple[LoaderCall, ClassFacts, DatasetRef]]:
        """The classes a loader's dataset argument may be; a parameter's through each call
        site, with `num_workers` from the same call when the loader takes it from a
        parameter of the same function (`make_loader(ds, 0)`)."""
        loader = self._kept_workers(loader)
        if ref.kind != "param":
            for cls, constructing in self.classes_of_ref(ref, facts):
                yield loader, cls, constructing
            return
        function = ref.target.split("#")[0]
        for home, site in self.calls_of(function):
            used = loader
            if loader.num_workers_param.split("#")[0] == function:
                workers = [a for a in site.args if self._is_arg_for(a, loader.num_workers_param)]
                if workers and workers[0].int_value is not None:
                    used = dataclasses.replace(loader, num_workers=workers[0].int_value,
                                               num_workers_text=str(workers[0].int_value))
            for arg in site.args:
                if self._is_arg_for(arg, ref.target):
                    for r in arg.refs:
                        for cls, constructing in self.classes_of_ref(r, home):
                            yield used, cls, constructing

    def _keepings(self, name: str, uses: list[LoaderUse],
                  kept_in: dict[str, list[tuple[str, DatasetRef]]]
                  ) -> list[tuple[str, DatasetRef]]:
        """The classes an instance of class `name` keeps (`_kept_built`, and `_kept_passed`
        by each of its direct `uses`), each with the kept reference ("<class>.<attr>") its
        loaders reach it through; recorded in `reached` and `kept_in` (inner → outer)."""
        outer = self.classes[name]
        found = list(self._kept_built(outer))
        # each construction in the file it is read in (a loader's dataset may be built in the
        # caller of the function making the loader)
        constructions = dict.fromkeys(((self.home_of(ref) or f).path, ref) for f, _, ref in uses
                                      if ref.arg_refs)
        for path, ref in constructions:
            found.extend(self._kept_passed(outer, self._by_path[path], ref))
        edges: dict[tuple[str, str], DatasetRef] = {}
        for inner, reach in found:
            if (inner.qualname, reach.attr) not in edges:
                kept = edges[inner.qualname, reach.attr] = \
                    DatasetRef("kept", f"{name}.{reach.attr}")
                kept_in.setdefault(inner.qualname, []).append((name, kept))
            reaches = self.reached.setdefault(inner.qualname, [])
            if reach not in reaches:
                reaches.append(reach)
        return [(inner, kept) for (inner, _), kept in edges.items()]

    def _kept_built(self, outer: ClassFacts) -> Iterator[tuple[ClassFacts, Reach]]:
        """Project classes an instance of `outer` keeps and uses after construction, built in
        a method (`self.db = Reader(p)`, `self.dbs.append(Inner(p))`) or named by the type of
        an `__init__` parameter it keeps (`reader: Reader`, an isinstance assert)."""
        mro = self.mro(outer)
        read_later = self._read_later(outer)
        for member in mro:
            home = self.class_file[member.qualname]
            for attr, refs in member.attr_refs:
                if attr not in read_later:
                    continue
                for ref in refs:
                    for inner, _ in self.classes_of_ref(ref, home):
                        if inner.qualname != outer.qualname:
                            yield inner, Reach(outer.name, attr)
        init_owner = next((m for m in mro if m.method("__init__") is not None), None)
        if init_owner is None:
            return
        home = self.class_file[init_owner.qualname]
        attrs = dict(init_owner.param_attrs)
        for param, annotated in init_owner.param_types:
            typed = self.classes.get(self.resolve(annotated, home))
            kept_as = attrs.get(param)
            if typed is not None and kept_as in read_later and typed.qualname != outer.qualname:
                yield typed, Reach(outer.name, kept_as or "", True, param)

    def _kept_passed(self, outer: ClassFacts, facts: FileFacts, constructing: DatasetRef
                     ) -> Iterator[tuple[ClassFacts, Reach]]:
        """Project classes a construction of `outer` (`DS(Reader(p))`, read in `facts`)
        passes to `__init__`, which keeps them and uses them after construction."""
        if not constructing.arg_refs:
            return
        init_owner = next((m for m in self.mro(outer) if m.method("__init__") is not None),
                          None)
        if init_owner is None:
            return
        read_later = self._read_later(outer)
        attrs = dict(init_owner.param_attrs)
        params = init_owner.init_params
        for arg in constructing.arg_refs:
            param = arg.keyword or (params[arg.position]
                                    if 0 <= arg.position < len(params) else "")
            kept_as = attrs.get(param)
            if kept_as is None or kept_as not in read_later:
                continue
            for ref in arg.refs:
                for inner, _ in self.classes_of_ref(ref, facts):
                    if inner.qualname != outer.qualname:
                        yield inner, Reach(outer.name, kept_as, True, param)
