"""The linked view of a dataset class: built once per class from the solved program and
read by every rule (WS1xx, WS2xx and the WS3xx pass alike).

Its class chain (the class and its project bases), its effective methods and what they do
(which run at construction, which in a worker, what the parent process uses, which handles
are guarded by a process check or closed before any worker starts), the loaders reaching it
(each with its worker count, through the class itself or a class keeping it) and the link
path when it is reached only through another class (`via`, for messages and the fix)."""

from __future__ import annotations

from typing import Optional

from ..facts import AttrArg, ClassFacts, DatasetRef, FileFacts, HandleSite, MethodFacts
from ..records import field, record
from .classes import Methods, method_closure
from .reach import LoaderUse, Reach
from .returns import Returns

# Methods deciding what pickling an instance holds, in the order pickle asks for them.
PICKLING_METHODS = ("__reduce_ex__", "__reduce__", "__getstate__")
# Methods that never run in a worker for the dataset's sake, or that only tear down.
# what a generated `__init__` calls last (dataclasses, attrs)
_POST_INIT = ("__post_init__", "__attrs_post_init__")

NOT_WORKER_METHODS = frozenset({
    "__init__", "__len__", "close", "__del__", "__exit__", "__enter__", "__getstate__",
    "__setstate__", "__repr__", "__str__", "__reduce__", "__reduce_ex__",
})


@record()
class ClassView:
    """A dataset class with its inherited methods resolved (the effective class)."""

    cls: ClassFacts
    facts: FileFacts
    methods: Methods
    init_run: set[tuple[str, str]]  # (class qualname, method) that run when constructing
    worker_methods: set[str]
    worker_reads: set[str]
    parent_uses: set[str]
    guarded: set[str]
    closed_at_fork: set[str] = field(default_factory=set)  # last construction effect: a close
    via: Optional[Reach] = None  # reached only through another class (a holder, sub-dataset)
    # linked: the class chain, the loaders reaching it (with how each constructs it), how it
    # is reached through other classes
    chain: list[ClassFacts] = field(default_factory=list)
    torch_dataset: bool = False
    uses: list[LoaderUse] = field(default_factory=list)
    reaches: list[Reach] = field(default_factory=list)
    # every construction of it the loaders reach it by (`Views.constructions`), when its
    # `__init__` calls a method only in a branch of `if <param>:` (`branch_calls`); else empty
    built: list[DatasetRef] = field(default_factory=list)
    # of `worker_reads`, those only a base's method its workers run through `super().m()`
    # reads (`super().__getitem__(i)`: `_run_by_super`)
    super_reads: set[str] = field(default_factory=set)

    def init_run_for(self, ref: DatasetRef) -> set[tuple[str, str]]:
        """The methods constructing it by `ref` runs: `init_run`, less the methods its
        `__init__` calls only in branches of `if <param>:` the arguments do not take."""
        init = self.methods.get("__init__")
        if init is None or not init[0].branch_calls:
            return self.init_run
        owner = init[0]
        run: dict[str, bool] = {}
        for method, param, taken, default in owner.branch_calls:
            run[method] = run.get(method, False) \
                or not branch_not_taken(owner, param, taken, default, ref)
        skipped = frozenset(method for method, ran in run.items() if not ran)
        return _init_run(self.chain, self.methods, skipped) if skipped else self.init_run

    def runs_at_construction(self, qualname: str, method: str) -> bool:
        """Whether constructing it runs `qualname`'s `method` (`init_run`): for some of its
        constructions when all are known (`built`), a method `__init__` calls only in a branch
        they all skip (`if preload: self.open_lmdb()`, never given `preload=True`) not."""
        if (qualname, method) not in self.init_run:
            return False
        return not self.built or any((qualname, method) in self.init_run_for(ref)
                                     for ref in self.built)

    def pickles(self, attr: str) -> bool:
        """Whether pickling the instance (spawn, forkserver workers) carries `self.<attr>`:
        all of `__dict__` without a `__getstate__`; with one, what it keeps, key by key
        (`analysis/pickled.py`). `__reduce__`, or a `__getstate__` that cannot be read key by
        key, decides: taken to drop it."""
        for name in PICKLING_METHODS:
            if name in self.methods:
                state = self.methods[name][0].pickled
                if state is None or state.mode not in ("all-but", "only"):
                    return False
                return (attr not in state.names) == (state.mode == "all-but")
        return True


class Views(Returns):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._views: dict[str, ClassView] = {}
        self._building: set[str] = set()  # classes whose keepers' views are being built

    def _read_by_keepers(self, cls: ClassFacts, reaches: list[Reach]) -> bool:
        """Whether the workers of a class keeping `cls` read the attribute keeping it (a
        keeper whose view is being built, a cycle of keepings, counts as not reading it)."""
        self._building.add(cls.qualname)
        try:
            return any(reach.attr in self.view(outer).worker_reads
                       for reach in reaches for outer in self.classes.values()
                       if outer.name == reach.outer and outer.qualname not in self._building)
        finally:
            self._building.discard(cls.qualname)

    def view(self, cls: ClassFacts) -> ClassView:
        """The class's linked view, built on first use from the solved program."""
        found = self._views.get(cls.qualname)
        if found is None or found.cls is not cls:
            found = self._views[cls.qualname] = self._build_view(cls)
        return found

    def held_at(self, arg: AttrArg, facts: FileFacts) -> list[tuple[HandleSite, str]]:
        """What an argument read from another value's attribute (`EvalSet(train_ds.h5)`, read
        in `facts`) may be open with: for each class the value may be (the value flow), the
        handle its construction keeps in that attribute, created there or returned by a call
        kept there; with the method making it ("Volumes.__init__"). Not a handle opened only later
        (lazily) or closed again before construction ends."""
        out: list[tuple[HandleSite, str]] = []
        seen: set[str] = set()
        for ref in arg.refs:
            for cls, _ in self.classes_of_ref(ref, facts):
                if cls.qualname in seen:
                    continue
                seen.add(cls.qualname)
                found = self._held_at(self.view(cls), arg.attr)
                if found is not None:
                    out.append(found)
        return out

    def _held_at(self, view: ClassView, attr: str) -> Optional[tuple[HandleSite, str]]:
        if attr in view.closed_at_fork:
            return None
        for member in view.chain:
            for held in member.held:
                if held.attr == attr and not held.closed \
                        and (member.qualname, held.method) in view.init_run:
                    return held.site, f"{member.name}.{held.method}"
            for call in member.held_calls:
                if call.attr == attr and (member.qualname, call.method) in view.init_run:
                    found = self.returned_handle(call.callee, view.cls,
                                                 self.class_file[member.qualname],
                                                 given=call.handle_args)
                    if found is not None:
                        return found[0], f"{member.name}.{call.method}"
        return None

    def constructions(self, cls: ClassFacts, via: Optional[Reach], uses: list[LoaderUse]
                      ) -> list[DatasetRef]:
        """Every construction of the class the loaders reach it by, each a visible call
        (`Feats(p)` given to a loader, `self.store = Store(p)` in the dataset keeping it); empty
        when one is not known (a name, a factory, a holder passed in)."""
        if via is None:
            refs = [ref for _, _, ref in uses]
            return refs if refs and all(ref.kind == "call" for ref in refs) else []
        found: list[DatasetRef] = []
        for reach in self.reached.get(cls.qualname, []):
            if reach.passed:
                return []
            calls = [ref for outer in self.classes.values() if outer.name == reach.outer
                     for member in self.mro(outer)
                     for attr, refs in member.attr_refs if attr == reach.attr
                     for ref in refs if ref.kind == "call" and self.resolve(
                         ref.target, self.class_file[member.qualname]) == cls.qualname]
            if not calls:
                return []
            found += calls
        return found

    def _build_view(self, cls: ClassFacts) -> ClassView:
        mro = self.mro(cls)
        methods: Methods = {}
        for member in mro:
            for method in member.methods:
                methods.setdefault(method.name, (member, method))
        init_run = _init_run(mro, methods)
        init_names = {name for _, name in init_run}
        roots = [n for n in methods if n not in init_names and n not in NOT_WORKER_METHODS]
        worker_methods = method_closure(roots, methods)
        worker_reads = {a for n in worker_methods for a in methods[n][1].attrs_read}
        super_reads = {a for m in _run_by_super(mro, methods, worker_methods)
                       for a in m.attrs_read} - worker_reads
        worker_reads |= super_reads
        uses = self.loaders_by_class().get(cls.qualname, [])  # (`reached` is computed with it)
        reaches = self.reached.get(cls.qualname, [])
        if reaches and not roots and self._read_by_keepers(cls, reaches):
            # a plain record of what it keeps (no method a worker runs): the keepers'
            # workers read its attributes themselves (`self.reader.index[i]`)
            worker_reads |= {held.attr for member in mro for held in member.held}
            worker_reads |= {call.attr for member in mro for call in member.held_calls}
        parent_methods = (init_names - worker_methods) | {"__init__", "__len__"}
        parent_uses = {a for n in parent_methods if n in methods
                       for a in methods[n][1].attrs_used}
        guarded = _guarded_attrs(mro, methods)
        # reached only through the classes keeping it: the first of them names the path
        via = reaches[0] if reaches and all(ref.kind == "kept" for _, _, ref in uses) else None
        init = methods.get("__init__")
        built = self.constructions(cls, via, uses) if init is not None and init[0].branch_calls \
            else []
        return ClassView(cls, self.class_file[cls.qualname], methods, init_run, worker_methods,
                         worker_reads, parent_uses, guarded, _closed_at_fork(mro, methods), via,
                         mro, self.is_torch_dataset(cls), uses, reaches, built, super_reads)


def _run_by_super(mro: list[ClassFacts], methods: Methods, names: set[str]
                  ) -> list[MethodFacts]:
    """The base implementations the methods `names` run through `super().m()` (a subclass's
    `__getitem__` returning `super().__getitem__(i) * 2` runs its base's, which reads the
    handle), and what those run in turn (their `self.m()` calls: the class's own `m`; their
    own `super()` calls), each once; `names` and `methods`: as `method_closure`'s."""
    index = {member.qualname: i for i, member in enumerate(mro)}
    found: list[MethodFacts] = []
    seen: set[tuple[str, str]] = set()
    ran = set(names)
    stack = [methods[n] for n in names if n in methods]
    while stack:
        owner, method = stack.pop()
        for called in method.super_calls:
            for member in mro[index.get(owner.qualname, len(mro)) + 1:]:
                base = member.method(called)
                if base is None:
                    continue
                if (member.qualname, called) not in seen:
                    seen.add((member.qualname, called))
                    found.append(base)
                    stack.append((member, base))
                break
        for name in method_closure(method.self_calls, methods) - ran:
            ran.add(name)
            found.append(methods[name][1])
            stack.append(methods[name])
    return found


def _closed_at_fork(mro: list[ClassFacts], methods: Methods) -> set[str]:
    """Attributes whose last open/close while constructing is a close: `__init__`'s effects
    in order, through the `self.m()` it calls and the base `__init__`s (a lazy open in a
    helper, closed again by the last call of the inherited `__init__`)."""
    state: dict[str, str] = {}
    index = {member.qualname: i for i, member in enumerate(mro)}

    def run_init(start: int, depth: int) -> None:
        for member in mro[start:]:
            init = member.method("__init__")
            if init is not None:
                run(init, index[member.qualname], depth)
                return

    def run(method: MethodFacts, owner: int, depth: int) -> None:
        if depth > 16:
            return
        for effect in method.effects:
            kind, _, name = effect.partition(":")
            if kind == "call":
                if name == "__init__":
                    run_init(owner + 1, depth + 1)
                elif name in methods:
                    member, called = methods[name]
                    run(called, index.get(member.qualname, owner), depth + 1)
            elif kind in ("open", "close"):
                state[name] = kind

    run_init(0, 0)
    return {attr for attr, last in state.items() if last == "close"}


def branch_not_taken(owner: ClassFacts, param: str, taken: bool, default: Optional[bool],
                     ref: DatasetRef) -> bool:
    """The construction `ref` of the class whose `__init__` is `owner`'s takes the other branch
    of `if <param>:` than the one run when the parameter's truth is `taken`: a constant given
    for the parameter, or its constant `default` when not given."""
    position = owner.init_params.index(param) if param in owner.init_params else -2
    for arg in ref.arg_refs:
        if arg.keyword == param or (not arg.keyword and arg.position == position):
            return arg.truth is not None and arg.truth != taken
    given = param in ref.keywords or ref.positional < 0 or 0 <= position < ref.positional
    return not given and default is not None and default != taken


def _init_run(mro: list[ClassFacts], methods: Methods, skipped: frozenset[str] = frozenset()
              ) -> set[tuple[str, str]]:
    """Methods run by construction: the `__init__` chain (through super) and what it calls;
    a dataclass's (or attrs class's) post-init hook, which the generated `__init__` calls,
    unless an `__init__` written before it in the MRO replaces the generated one. `skipped`:
    methods the first `__init__` calls only in a branch the construction does not take."""
    run: set[tuple[str, str]] = set()
    index = {member.qualname: i for i, member in enumerate(mro)}
    for hook in _POST_INIT:
        if hook in methods and (
                "__init__" not in methods
                or index[methods[hook][0].qualname] < index[methods["__init__"][0].qualname]):
            run.add((methods[hook][0].qualname, hook))
            for name in method_closure(methods[hook][1].self_calls, methods):
                run.add((methods[name][0].qualname, name))
    for member in mro:
        init = member.method("__init__")
        if init is None:
            continue
        run |= {(member.qualname, "__init__")}
        calls = [c for c in init.self_calls if c not in skipped] if skipped else init.self_calls
        skipped = frozenset()  # (a base's `__init__` has branches of its own parameters)
        for name in method_closure(calls, methods):
            run.add((methods[name][0].qualname, name))
        if not init.calls_super_init:
            break
    return run


def _guarded_attrs(mro: list[ClassFacts], methods: Methods) -> set[str]:
    guarded: set[str] = set()
    for member in mro:
        for method in member.methods:
            guarded.update(method.guarded_attrs)
            for called in method_closure(method.guarded_calls, methods):
                owner = methods[called][0]
                guarded.update(h.attr for h in owner.held if h.method == called)
                guarded.update(c.attr for c in owner.held_calls if c.method == called)
    return guarded
