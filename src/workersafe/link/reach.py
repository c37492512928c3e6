"""Loaders → dataset classes: the classes each loader's dataset may be (the value flow,
a parameter's through each call site), then what those keep (holders and sub-datasets built
in `__init__` or passed to it), reached by the same loaders; `reached` says how."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

from ..facts import ClassFacts, DatasetRef, FileFacts, LoaderCall
from ..records import record, replace
from .loaders import Loaders

# (file, loader, the reference that constructs the class) for each loader reaching a class
LoaderUse = tuple[FileFacts, LoaderCall, DatasetRef]


@record(frozen=True)
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
        # what the keepings found: outer → (inner, kept ref), inner → (outer, kept ref), a
        # class's constructions with arguments, those found after the class was read
        self._keeps: dict[str, list[tuple[str, DatasetRef]]] = {}
        self._kept_in: dict[str, list[tuple[str, DatasetRef]]] = {}
        self._made: dict[str, dict[tuple[str, int], DatasetRef]] = {}
        self._late: list[tuple[str, str, DatasetRef]] = []
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
        seen: set[tuple[str, int, int]] = set()  # (class, loader, constructing ref)

        def add(qualname: str, use: LoaderUse) -> bool:
            self._work += 1
            key = (qualname, id(use[1]), self.ref_number(use[2]))
            if key in seen:
                return False
            seen.add(key)
            out.setdefault(qualname, []).append(use)
            return True

        for facts, loader in self.loaders():
            for ref in loader.datasets:
                for used, cls, constructing in self._loader_classes(facts, loader, ref):
                    add(cls.qualname, (facts, used, constructing))
        self.reached = {}
        # Then what each class keeps, as a worklist over (class, loader): what a class keeps
        # is found once, when a loader first reaches it (built in its methods, or passed by
        # its constructions with arguments: its loaders' datasets, and the datasets passed
        # to a class that keeps them, `Outer(Inner(Reader(p)))`), and each loader crosses
        # each keeping once. The uses through keepings are written out at the end.
        loaders_of = {name: {id(u[1]): (u[0], u[1]) for u in uses} for name, uses in out.items()}
        self._keeps, self._kept_in, self._made, self._late = {}, {}, {}, []
        for name, uses in out.items():
            for f, _, ref in uses:
                self._construction(name, (self.home_of(ref) or f).path, ref)
        pending = [(name, key) for name, found in loaders_of.items() for key in found]

        def cross(outer: str, inners: Iterable[str], keys: Iterable[int]) -> None:
            for inner_name in inners:
                reaching = loaders_of.setdefault(inner_name, {})
                for each in keys:
                    if each not in reaching:
                        self._work += 1
                        reaching[each] = loaders_of[outer][each]
                        pending.append((inner_name, each))

        while pending or self._late:
            if self._late:  # a construction passed to a class read before: what it keeps
                name, path, made = self._late.pop()
                found = list(self._kept_passed(self.classes[name], self._by_path[path], made))
                cross(name, self._keep(name, found), list(loaders_of.get(name, {})))
                continue
            name, key = pending.pop()
            self._work += 1
            if name not in self._keeps:
                self._keeps[name] = []
                cls = self.classes[name]
                found = [(inner, reach, None) for inner, reach in self._kept_built(cls)]
                for (path, _), made in list(self._made.get(name, {}).items()):
                    found += self._kept_passed(cls, self._by_path[path], made)
                self._keep(name, found)
            cross(name, [inner for inner, _ in self._keeps[name]], [key])
        for inner_name, edges in self._kept_in.items():
            for outer_name, kept in edges:
                reaching = loaders_of.get(outer_name)
                if reaching:
                    self._work += len(reaching)
                    out.setdefault(inner_name, []).extend(
                        (f, loader, kept) for f, loader in reaching.values())
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
                    used = replace(loader, num_workers=workers[0].int_value,
                                   num_workers_text=str(workers[0].int_value))
            for arg in site.args:
                if self._is_arg_for(arg, ref.target):
                    for r in arg.refs:
                        for cls, constructing in self.classes_of_ref(r, home):
                            yield used, cls, constructing

    def _construction(self, name: str, path: str, ref: DatasetRef) -> None:
        """A construction of class `name` with arguments (read in `path`): what it passes is
        read when the class is (at once, if it was read already)."""
        if not ref.arg_refs:
            return
        made = self._made.setdefault(name, {})
        key = (path, self.ref_number(ref))
        if key not in made:
            made[key] = ref
            if name in self._keeps:
                self._late.append((name, path, ref))

    def _keep(self, name: str, found: list[tuple[ClassFacts, Reach, Optional[DatasetRef]]]
              ) -> list[str]:
        """Record what class `name` keeps (`_kept_built`, `_kept_passed`), each with the kept
        reference ("<class>.<attr>") its loaders reach it through, in `reached` and both
        directions; the classes newly kept."""
        edges = self._keeps[name]
        known = {(inner, kept.target) for inner, kept in edges}
        new: list[str] = []
        for inner, reach, made in found:
            if made is not None:
                self._construction(inner.qualname, (self.home_of(made) or
                                                    self.class_file[name]).path, made)
            target = f"{name}.{reach.attr}"
            if (inner.qualname, target) not in known:
                known.add((inner.qualname, target))
                kept = DatasetRef("kept", target)
                edges.append((inner.qualname, kept))
                self._kept_in.setdefault(inner.qualname, []).append((name, kept))
                new.append(inner.qualname)
            reaches = self.reached.setdefault(inner.qualname, [])
            if reach not in reaches:
                reaches.append(reach)
        return new

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
                     ) -> Iterator[tuple[ClassFacts, Reach, Optional[DatasetRef]]]:
        """Project classes a construction of `outer` (`DS(Reader(p))`, read in `facts`)
        passes to `__init__`, which keeps them and uses them after construction; each with
        the reference constructing it (what it is passed in turn)."""
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
                for inner, made in self.classes_of_ref(ref, facts):
                    if inner.qualname != outer.qualname:
                        yield inner, Reach(outer.name, kept_as, True, param), made
