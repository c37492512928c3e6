"""The rules for the remedies people write, and their holes (WS3xx): pure functions of linked
facts (`FileFacts.remedies`, see analysis/remedies.py) → findings.

- WS301/WS311: a handle attribute is None (or unset) after `__init__` and created only by a
  worker_init_fn: the main process (num_workers=0, `ds[i]`) never gets one.
- WS302/WS312: a worker_init_fn sets the handle on `get_worker_info().dataset` without walking
  wrappers, and the DataLoader's dataset is a wrapper: the inner dataset never gets it.
- WS303/WS313: a lazily opened handle without a process check, used by the parent before its
  forking DataLoader's workers start: they share it after all.
Confirmed codes need the loader or use that makes the hole show; the latent twins are
reported otherwise (WS311 on by default, WS312/WS313 only when selected)."""

from __future__ import annotations

import os
from typing import Callable, Iterator, Optional, Protocol

from .facts import (
    AttrSite, ClassFacts, DatasetRef, DatasetUse, FileFacts, HandleSite, LazyOpen, LoaderCall,
    LoaderWrap, RemedyClass, Span, WorkerInit,
)
from .findings import Finding, FixPlan
from .link import SPAWN_LIKE, LoaderUse, Methods, Project, Reach, method_closure
from .records import record
from .registry import Registry
from .ruletable import latent_of


class View(Protocol):
    """What these rules read of a dataset class's linked view (`link.view.ClassView`)."""

    cls: ClassFacts
    methods: Methods
    init_run: set[tuple[str, str]]
    worker_reads: set[str]
    uses: list[LoaderUse]  # the loaders reaching it, each with the reference constructing it
    chain: list[ClassFacts]  # the class and its project bases
    reaches: list[Reach]  # how other classes keep it

    def pickles(self, attr: str) -> bool: ...  # whether pickling it carries `self.<attr>`

    # whether constructing it runs that method (some construction, when `__init__` calls it
    # only in a branch of `if <param>:`)
    def runs_at_construction(self, qualname: str, method: str) -> bool: ...


ViewOf = Callable[[Project, ClassFacts], View]
ByClass = dict[str, list[LoaderUse]]  # Project.loaders_by_class()
Located = tuple[FileFacts, LoaderCall]


def _latent(code: str) -> str:
    """The latent twin of `code`, from the rule table (every WS30x has one)."""
    twin = latent_of(code)
    assert twin is not None, code
    return twin


@record(frozen=True)
class _Init:
    facts: FileFacts
    init: WorkerInit

    @property
    def label(self) -> str:
        short = self.init.name.rpartition(".")[2] or "lambda"
        where = f"({os.path.basename(self.facts.path)}:{self.init.span.line})"
        # "worker_init_fn worker_init_fn (data.py:25)" says the name twice
        return where if short == "worker_init_fn" else f"{short} {where}"


class _Index:
    """The remedy facts of every file, looked up by what the rules ask."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.classes: dict[str, RemedyClass] = {}
        self.inits: dict[str, _Init] = {}
        self.lambdas: dict[tuple[str, Span], _Init] = {}
        self.wraps: dict[tuple[str, Span], LoaderWrap] = {}
        self.uses: list[tuple[FileFacts, DatasetUse]] = []
        for facts in project.files:
            rem = facts.remedies
            self.classes.update((c.qualname, c) for c in rem.classes)
            for init in rem.worker_inits:
                if init.loader is not None:
                    self.lambdas[(facts.path, init.loader)] = _Init(facts, init)
                else:
                    self.inits[init.name] = _Init(facts, init)
            self.wraps.update(((facts.path, w.loader), w) for w in rem.loaders)
            self.uses.extend((facts, use) for use in rem.uses)
        self._uses_by_class: Optional[dict[str, list[tuple[FileFacts, DatasetUse]]]] = None

    def loader_inits(self, facts: FileFacts, loader: LoaderCall) -> list[_Init]:
        found = [self.inits.get(self.project.resolve(n, facts)) for n in loader.worker_inits]
        found.append(self.lambdas.get((facts.path, loader.span)))
        return [i for i in found if i is not None]

    def wrap(self, facts: FileFacts, loader: LoaderCall) -> Optional[LoaderWrap]:
        return self.wraps.get((facts.path, loader.span))

    def uses_of(self, qualname: str) -> list[tuple[FileFacts, DatasetUse]]:
        if self._uses_by_class is None:  # resolved once, on first use
            self._uses_by_class = {}
            for facts, use in self.uses:
                found = {cls.qualname for ref in use.refs
                         for cls, _ in self.project.classes_of_ref(ref, facts)}
                for name in found:
                    self._uses_by_class.setdefault(name, []).append((facts, use))
        return self._uses_by_class.get(qualname, [])


def remedy_findings(project: Project, registry: Registry, view_of: ViewOf) -> list[Finding]:
    index = _Index(project)
    loaders_by_class = project.loaders_by_class()
    findings: list[Finding] = []
    for cls in project.classes.values():
        if cls.qualname not in loaders_by_class and not project.is_torch_dataset(cls):
            continue
        view = view_of(project, cls)  # the class's linked view: its loaders come with it
        uses = [(f, loader) for f, loader, _ in view.uses]
        built = [(f, ref) for f, _, ref in view.uses]
        findings.extend(_worker_init_only(project, index, view, uses, built))
        findings.extend(_lazy_opened_in_parent(project, registry, index, view, uses, view_of))
    findings.extend(_misses_wrapper(project, index, view_of, loaders_by_class))
    return findings


# --- WS301 / WS311 ------------------------------------------------------------------------

def _worker_init_only(project: Project, index: _Index, view: View, uses: list[Located],
                      built: list[tuple[FileFacts, DatasetRef]]) -> Iterator[Finding]:
    mro = view.chain
    remedy = [index.classes[m.qualname] for m in mro if m.qualname in index.classes]
    inits = [i for f, loader in uses for i in index.loader_inits(f, loader)]
    if not inits:  # no loader using the class wires one: any worker_init_fn may be its
        inits = list(index.inits.values())
    init_names = {name for _, name in view.init_run}
    set_in_init = {a for r in remedy for a in r.init_set}
    lazy = {lz.attr for r in remedy for lz in r.lazy}
    reported: set[str] = set()
    # what reading an item runs, in any process (a method only a worker_init_fn calls is not)
    item_methods = method_closure([n for n in _ITEM_METHODS if n in view.methods], view.methods)
    for init in inits:
        for attr, site in _created_by(view, remedy, init.init, init_names):
            if attr in reported or attr not in view.worker_reads or attr in lazy \
                    or attr in view.methods:  # a property: its getter makes it
                continue
            if _none_handled(view, remedy, attr):  # the readers fall back when it is None
                continue
            none_site = next((s for r in remedy for s in r.init_none if s.attr == attr), None)
            owner = _owner_of_none(mro, remedy, attr) if none_site else view.cls.qualname
            given = ""
            if none_site is None and attr in set_in_init:
                # `self.db = db`, every construction passing None (or leaving its None default)
                found = _none_from_param(project, index, view, attr, built)
                if found is None:
                    continue
                none_site, owner, param = found
                given = f" (from its parameter {param}, which its constructions leave None)"
            # the dataset opens it itself (`if self.data is None:` in __getitem__), or sets it
            # from a call (`self.session = retrying(requests.Session())`) in a method that
            # `__init__` runs (an opener)
            setting = [(m.qualname, h.method) for m in mro for h in m.held if h.attr == attr]
            setting += [(m.qualname, c.method) for m in mro for c in m.held_calls
                        if c.attr == attr]
            if any(at in view.init_run or at[1] in item_methods for at in setting):
                continue
            reported.add(attr)
            evidence = _main_process_evidence(index, view, uses)
            if none_site is not None:
                path, span = project.class_file[owner].path, none_site.span
            else:
                path, span = init.facts.path, site
            plan = _plan(init, attr, owner, _handle_of(view, init.init, attr), uses)
            what = (f"{attr} of {view.cls.name} is "
                    f"{'None' if none_site else 'not set'} after __init__{given} and created "
                    f"only by worker_init_fn {init.label}")
            if evidence:
                yield Finding(path, span, "WS301",
                              f"{what}: {evidence} runs in the main process and fails; "
                              f"open it in the dataset (an opener __init__ calls)", plan)
            else:
                yield Finding(path, span, _latent("WS301"),
                              f"{what}: it fails wherever the dataset runs in the main process "
                              f"(num_workers=0, ds[i]); open it in the dataset "
                              f"(an opener __init__ calls)", plan)


_ITEM_METHODS = ("__getitem__", "__getitems__", "__iter__")


def _none_handled(view: View, remedy: list[RemedyClass], attr: str) -> bool:
    """Every method reading the attribute (`__init__` aside) handles it being None."""
    safe = {pair for r in remedy for pair in r.none_safe}
    readers = [name for name, (_, method) in view.methods.items()
               if name != "__init__" and attr in method.attrs_read]
    return bool(readers) and all((name, attr) in safe for name in readers)


def _created_by(view: View, remedy: list[RemedyClass], init: WorkerInit,
                init_names: set[str]) -> Iterator[tuple[str, Span]]:
    """The attributes a worker_init_fn gives the dataset: set directly (or derived from a
    handle it set, unless the dataset opens that one lazily), or by a method it calls that
    `__init__` does not run."""
    for site in init.sets:
        yield site.attr, site.span
    lazy = {lz.attr for r in remedy for lz in r.lazy}
    for source, site in init.derived:  # `dataset.data = dataset.h5[key]`
        if source not in lazy:  # (the dataset opens the source itself: derives it there too)
            yield site.attr, site.span
    for call in init.calls:
        if call.attr in init_names or call.attr not in view.methods:
            continue
        for name in method_closure([call.attr], view.methods):
            if name in init_names:
                continue
            owner = view.methods[name][0]
            for held in owner.held:
                if held.method == name:
                    yield held.attr, call.span


def _plan(init: _Init, attr: str, owner: str, handle: str, uses: list[Located]) -> FixPlan:
    """What the fixer needs: the class and attribute, the worker_init_fn making it, and the
    loaders using the class."""
    loaders = tuple(dict.fromkeys((f.path, ld.span.line, ld.span.col) for f, ld in uses))
    where = (init.facts.path, init.init.span.line, init.init.span.col)
    return FixPlan("worker-init-only", handle, owner, attr, (attr,), init.init.name, loaders,
                   worker_init=where)


def _handle_of(view: View, init: WorkerInit, attr: str) -> str:
    """The handle an opener the worker_init_fn calls creates in `attr` ("" when the
    worker_init_fn creates it itself: the fixer reads the creation)."""
    for call in init.calls:
        for name in method_closure([call.attr], view.methods) if call.attr in view.methods \
                else []:
            for held in view.methods[name][0].held:
                if held.method == name and held.attr == attr:
                    return held.site.handle
    return ""


def _none_from_param(project: Project, index: _Index, view: View, attr: str,
                     built: list[tuple[FileFacts, DatasetRef]]
                     ) -> Optional[tuple[AttrSite, str, str]]:
    """`self.<attr> = <param>` in the `__init__` the class runs, where every construction
    of the class the loaders use passes None for it, or leaves its None default: the
    assignment, the class holding it and the parameter. None when any construction may pass
    something else (or none is known)."""
    owner = next((m for m in view.chain if m.method("__init__")), None)
    remedy = index.classes.get(owner.qualname) if owner is not None else None
    kept = next(((p, s) for p, s in remedy.param_kept if s.attr == attr), None) \
        if remedy is not None else None
    if owner is None or remedy is None or kept is None or not built:
        return None
    param, site = kept
    position = owner.init_params.index(param) if param in owner.init_params else -1
    for facts, ref in built:
        if ref.kind != "call" or project.resolve(ref.target, facts) != view.cls.qualname:
            return None
        given = [a for a in ref.arg_refs
                 if (a.keyword == param if a.keyword else a.position == position >= 0)]
        if given:
            if not given[0].none:
                return None
        elif param in ref.keywords or ref.positional < 0 or 0 <= position < ref.positional \
                or param not in remedy.none_defaults:
            return None
    return site, owner.qualname, param


def _owner_of_none(mro: list[ClassFacts], remedy: list[RemedyClass], attr: str) -> str:
    qualnames = {r.qualname for r in remedy if any(s.attr == attr for s in r.init_none)}
    return next(m.qualname for m in mro if m.qualname in qualnames)


def _main_process_evidence(index: _Index, view: View, uses: list[Located]) -> str:
    for facts, loader in uses:
        if loader.num_workers == 0:
            return f"the DataLoader at {_where(facts.path, loader.span.line)} (num_workers=0)"
    for facts, use in index.uses_of(view.cls.qualname):
        if use.kind in ("getitem", "iter"):
            return f"{_USE_TEXT[use.kind]} at {_where(facts.path, use.span.line)}"
    return ""


_USE_TEXT = {"getitem": "indexing the dataset", "iter": "iterating the dataset",
             "len": "len() of the dataset"}


# --- WS302 / WS312 ------------------------------------------------------------------------

def _misses_wrapper(project: Project, index: _Index, view_of: ViewOf, by_class: ByClass
                    ) -> Iterator[Finding]:
    confirmed: set[tuple[str, Span]] = set()
    resolved: set[tuple[str, Span]] = set()  # used by a loader whose dataset was found
    for facts, loader in project.loaders():
        if loader.num_workers == 0:
            continue
        for init in index.loader_inits(facts, loader):
            if init.init.walks_wrappers or not (init.init.sets or init.init.calls):
                continue
            key = (init.facts.path, init.init.span)
            wrapper = _wrapper_of(project, index, view_of, facts, loader, init.init)
            if wrapper is None:
                if any(project.classes_of_ref(r, facts) for r in loader.datasets):
                    resolved.add(key)
                continue
            if key in confirmed:
                continue
            confirmed.add(key)
            site, does = _what_init_does(init)
            yield Finding(init.facts.path, site.span, "WS302",
                          f"worker_init_fn {init.label} {does}, but the DataLoader at "
                          f"{_where(facts.path, loader.span.line)} wraps the dataset in "
                          f"{wrapper}: the inner dataset is never reached; walk "
                          f".dataset/.datasets to it, or open the handle in the dataset",
                          _wrapper_plan(project, index, view_of, by_class, init, site))
    for init in index.inits.values():
        key = (init.facts.path, init.init.span)
        if key in confirmed or key in resolved or init.init.walks_wrappers:
            continue
        if not (init.init.sets or init.init.calls):
            continue
        site, does = _what_init_does(init)
        yield Finding(init.facts.path, site.span, _latent("WS302"),
                      f"worker_init_fn {init.label} {does} without walking wrappers (no "
                      f"DataLoader with a known dataset using it found): under Subset, "
                      f"ConcatDataset or random_split the inner dataset is never reached; walk "
                      f".dataset/.datasets to it",
                      _wrapper_plan(project, index, view_of, by_class, init, site))


def _wrapper_plan(project: Project, index: _Index, view_of: ViewOf, by_class: ByClass,
                  init: _Init, site: AttrSite) -> FixPlan:
    """The fix of a worker_init_fn that misses wrappers: the handle it makes is opened by the
    dataset class that uses it (the one class whose methods read the attribute, or define the
    method called; none when that is not one class: the fixer refuses)."""
    called = site in init.init.calls
    owners = []
    for cls in project.classes.values():
        if not project.is_torch_dataset(cls):
            continue
        view = view_of(project, cls)
        reads = site.attr in view.methods if called else (
            site.attr in view.worker_reads and site.attr not in view.methods)
        if reads:
            owners.append(view)
    names = {o.cls.qualname for o in owners}  # a subclass inheriting the reads is its base's
    owners = [o for o in owners if not any(b.qualname in names for b in project.mro(o.cls)[1:])]
    if len(owners) > 1:  # those a loader wiring this worker_init_fn uses
        owners = [o for o in owners if any(
            init in index.loader_inits(f, ld) for f, ld, _ in by_class.get(o.cls.qualname, []))
        ] or owners
    if len(owners) > 1:  # those of its own file
        owners = [o for o in owners if project.class_file[o.cls.qualname].path
                  == init.facts.path] or owners
    owner = owners[0] if len(owners) == 1 else None
    loaders = by_class.get(owner.cls.qualname, []) if owner else []
    uses = [(f, ld) for f, ld, _ in loaders]
    if owner is None:
        return _plan(init, site.attr, "", "", uses)
    mro = project.mro(owner.cls)
    attr = site.attr
    if called:  # the attribute the opener makes (the first)
        attr = next((h.attr for name in method_closure([site.attr], owner.methods)
                     for h in owner.methods[name][0].held if h.method == name), site.attr)
    remedy = [index.classes[m.qualname] for m in mro if m.qualname in index.classes]
    if any(s.attr == attr for r in remedy for s in r.init_none):
        home = _owner_of_none(mro, remedy, attr)
    else:
        home = next((m.qualname for m in mro if m.method("__init__")), owner.cls.qualname)
    return _plan(init, attr, home, _handle_of(owner, init.init, attr), uses)


def _what_init_does(init: _Init) -> tuple[AttrSite, str]:
    if init.init.sets:
        site = init.init.sets[0]
        return site, f"sets {site.attr} on get_worker_info().dataset"
    site = init.init.calls[0]
    return site, f"calls get_worker_info().dataset.{site.attr}()"


def _wrapper_of(project: Project, index: _Index, view_of: ViewOf, facts: FileFacts,
                loader: LoaderCall, init: WorkerInit) -> Optional[str]:
    """The wrapper the loader's dataset is, if any: a torch wrapper, or a project dataset class
    that keeps a dataset in an attribute and has none of what the worker_init_fn gives it."""
    wrap = index.wrap(facts, loader)
    if wrap is not None and wrap.wrapper:
        return wrap.wrapper.rpartition(".")[2]
    wanted = {s.attr for s in init.sets}
    methods = {c.attr for c in init.calls}
    for ref in loader.datasets:
        for cls, _ in project.classes_of_ref(ref, facts):
            remedy = index.classes.get(cls.qualname)
            if remedy is None or not remedy.wrapped_attrs:
                continue
            view = view_of(project, cls)
            if not (wanted & view.worker_reads) and not (methods & set(view.methods)):
                return cls.name
    return None


# --- WS303 / WS313 ------------------------------------------------------------------------

def _lazy_opened_in_parent(project: Project, registry: Registry, index: _Index, view: View,
                           uses: list[Located], view_of: ViewOf) -> Iterator[Finding]:
    home = project.class_file[view.cls.qualname]
    # opened by construction: `__init__` runs the accessor, or the method opening it
    # (`self._update() -> if not hasattr(self, 'txn'): self.open_lmdb()`); WS101's finding,
    # and the other accessors' checks then find it open. Not when `__init__` runs it only in
    # a branch of `if <param>:` every construction skips (`if preload: self.open_lmdb()`)
    run = {name for qualname, name in view.init_run
           if view.runs_at_construction(qualname, name)}
    constructed = {lazy.attr for lazy in _lazy_opens(project, view)
                   if lazy.method in run or lazy.opener in run}
    for lazy, site in _unchecked_lazy_opens(project, registry, view):
        if lazy.attr in constructed:
            continue
        htype = registry.lookup(site.handle)
        # the class's own instances, and those of its subclasses that inherit the accessor
        # (`data = Sub(...); data[0]` runs the base's lazy open in the parent)
        users = [(view, uses, _triggers(view, lazy.method)),
                 *_inheriting_users(project, view, lazy.method, view_of)]
        # loaders whose workers inherit the parent's open handle (fork) or get it pickled
        # (spawn/forkserver: an open handle that does not pickle crashes their start)
        starting = [(user, triggers, f, ld, methods) for user, user_uses, triggers in users
                    # spawn/forkserver workers get what the class pickles: the open handle,
                    # unless left out
                    for unpicklable in [htype is not None and not htype.picklable
                                        and user.pickles(lazy.attr)]
                    for f, ld in user_uses if ld.num_workers != 0
                    for methods in [[c for c, _ in project.start_methods(ld, f)]]
                    if unpicklable or any(c not in SPAWN_LIKE for c in methods)]
        if any(user_uses for _, user_uses, _ in users) and not starting:
            continue  # only main-process loaders, or spawned ones pickling it safely
        where = f"{site.handle} opened lazily in {view.cls.name}.{lazy.method}"
        # the fix adds the process check to the accessor's test, and a `__getstate__` leaving
        # out a handle that does not pickle (fix/lazyguard.py)
        plan = FixPlan("unguarded-lazy", site.handle, view.cls.qualname, lazy.attr,
                       method=lazy.method)
        for user, triggers, facts, loader, methods in starting:
            use = _parent_use(index, user, triggers, facts, loader) \
                or _holder_warmed(project, index, user, triggers, facts, loader, view_of)
            if not use:
                continue
            at = _where(facts.path, loader.span.line)
            yield Finding(home.path, site.span, "WS303",
                          f"{where} without a process check is opened by the parent "
                          f"({use}) before the DataLoader at {at} forks its workers, which "
                          f"then share it: reopen it when os.getpid() changes"
                          if any(c not in SPAWN_LIKE for c in methods) else
                          f"{where} is opened by the parent ({use}) before the DataLoader at "
                          f"{at} starts its {methods[0]} workers, and the open handle does not "
                          f"pickle: they crash when they start; leave it out of the pickle "
                          f"and reopen it in each process", plan)
            break
        else:
            yield Finding(home.path, site.span, _latent("WS303"),
                          f"{where} without a process check: if the parent uses the dataset "
                          f"before a forking DataLoader starts, the workers share it; reopen "
                          f"it when os.getpid() changes", plan)


def _inheriting_users(project: Project, view: View, accessor: str, view_of: ViewOf
                      ) -> Iterator[tuple[View, list[Located], set[str]]]:
    """The views of the project's subclasses of the class whose instances run its lazy open,
    with their loaders and the methods that run it: those reaching the `accessor` they keep
    (do not override), and those calling through `super()` a method of the class that
    reaches it (`return super().__getitem__(i)` in an override)."""
    reaching = _triggers(view, accessor)
    for cls in project.classes.values():
        if cls.qualname == view.cls.qualname or not any(
                base.qualname == view.cls.qualname for base in project.mro(cls)[1:]):
            continue
        sub = view_of(project, cls)
        if not sub.uses:
            continue
        owner = sub.methods.get(accessor)
        kept = _triggers(sub, accessor) \
            if owner is not None and owner[0].qualname == view.cls.qualname else set()
        supers = {name for name, (_, method) in sub.methods.items()
                  if reaching.intersection(method.super_calls)}
        through = {name for name in sub.methods
                   if method_closure([name], sub.methods) & supers}
        if kept or through:
            yield sub, [(f, loader) for f, loader, _ in sub.uses], kept | through


def opens_lazily(project: Project, registry: Registry, view: View) -> bool:
    """The class opens a fork-unsafe handle lazily without a process check (WS303's pattern,
    as `_lazy_opened_in_parent` reads it)."""
    return next(_unchecked_lazy_opens(project, registry, view), None) is not None


def _lazy_opens(project: Project, view: View) -> Iterator[LazyOpen]:
    """The class's lazy opens (`if self.x is None: self.x = ...`), checked or not."""
    for remedy in project.class_file[view.cls.qualname].remedies.classes:
        if remedy.qualname == view.cls.qualname:
            yield from remedy.lazy


def _unchecked_lazy_opens(project: Project, registry: Registry, view: View
                          ) -> Iterator[tuple[LazyOpen, HandleSite]]:
    """The class's lazy opens of a fork-unsafe handle with no process check, with the
    creation each makes."""
    for lazy in _lazy_opens(project, view):
        site = lazy.site or _opener_site(view, lazy)
        htype = registry.lookup(site.handle) if site is not None else None
        if site is not None and htype is not None and not htype.fork_safe \
                and not lazy.process_checked:
            yield lazy, site


def _opener_site(view: View, lazy: LazyOpen) -> Optional[HandleSite]:
    for name in method_closure([lazy.opener], view.methods):
        owner = view.methods[name][0]
        for held in owner.held:
            if held.method == name and held.attr == lazy.attr:
                return held.site
    return None


def _triggers(view: View, accessor: str) -> set[str]:
    """The methods that run the accessor: call it (through self calls) or read it (a
    property)."""
    return {name for name, (_, method) in view.methods.items()
            if accessor in method_closure([name], view.methods)
            or accessor in method.attrs_read}


def _parent_use(index: _Index, view: View, triggers: set[str], facts: FileFacts,
                loader: LoaderCall, via: str = "", inner: frozenset[str] = frozenset()
                ) -> str:
    """How the parent runs one of `triggers` before the loader's workers start: the sampler's
    len(), or a use of the dataset in the loader's scope before it is iterated (`ds[0]`,
    `ds.get_env()`). With `via`, the triggers are those of an object the dataset keeps in
    that attribute, and `inner` those of its members the parent may call directly
    (`ds.reader.open()`)."""
    if "__len__" in triggers and "__iter__" not in view.methods and loader.persistent is not True:
        # The sampler calls len() in the parent; the next epoch's workers fork after it.
        return "len() of the dataset, which the DataLoader's sampler calls in the parent"
    wrap = index.wrap(facts, loader)
    for use_facts, use in index.uses_of(view.cls.qualname):
        if use_facts.path != facts.path or wrap is None or use.scope != wrap.scope:
            continue
        if wrap.iterated_line and use.span.line >= wrap.iterated_line:
            continue
        where = _where(use_facts.path, use.span.line)
        if use.kind == "member":
            if (use.via == via and use.member in (inner if via else triggers)) or \
                    (not use.via and use.member in triggers and use.member in view.methods):
                shown = f"{use.via}.{use.member}" if use.via else use.member
                return f"{view.cls.name}.{shown} used at {where}"
            continue
        ran = {"getitem": {"__getitem__"}, "len": {"__len__"},
               "iter": {"__iter__"} if "__iter__" in view.methods else {"__getitem__"}}
        if ran.get(use.kind, set()) & triggers:
            return f"{_USE_TEXT[use.kind]} at {where}"
    return ""


def _holder_warmed(project: Project, index: _Index, view: View, triggers: set[str],
                   facts: FileFacts, loader: LoaderCall, view_of: ViewOf) -> str:
    """The lazy open sits in a holder object a dataset keeps (`self.reader = Reader(p)`): the
    parent warms it through the dataset — a dataset method that uses a member of the holder
    reaching the accessor (`ds[0]` → `self.reader.get(k)`), or the member itself
    (`ds.reader.open()`)."""
    for reach in view.reaches:
        for outer in project.classes.values():
            if outer.name != reach.outer or outer.qualname == view.cls.qualname:
                continue
            outer_view = view_of(project, outer)
            used = {(m, member) for cls in project.mro(outer)
                    for m, attr, member in _member_uses(index, cls.qualname)
                    if attr == reach.attr}
            outer_triggers = {name for name in outer_view.methods
                              if any((ran, member) in used
                                     for ran in method_closure([name], outer_view.methods)
                                     for member in triggers)}
            found = _parent_use(index, outer_view, outer_triggers, facts, loader, reach.attr,
                                frozenset(triggers))
            if found:
                return f"{found}; {view.cls.name} held by {outer.name}.{reach.attr}"
    return ""


def _member_uses(index: _Index, qualname: str) -> tuple[tuple[str, str, str], ...]:
    remedy = index.classes.get(qualname)
    return remedy.member_uses if remedy is not None else ()


# --- helpers ------------------------------------------------------------------------------


def _where(path: str, line: int) -> str:
    return f"{os.path.basename(path)}:{line}"
