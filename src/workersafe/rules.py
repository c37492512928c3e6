"""The rules: pure functions of linked facts → findings (SPEC section 4).

A finding is a handle that DataLoader worker processes would share. Where it is created picks
the code (WS101 instance, WS102 module, WS103 class attribute, WS104 passed in); whether a
DataLoader that makes it a hazard was found picks confirmed (WS10x) or latent (WS11x); a
spawn/forkserver loader with a handle that does not pickle gives WS201."""

from __future__ import annotations

import os
from typing import Iterator, Optional

from .facts import (ClassFacts, DatasetRef, FileFacts, HandleSite, HeldCall, LoaderCall,
                    MethodFacts, ModuleHandle, Span)
from .findings import CacheFill, Finding, FixPlan
from .link import (
    PICKLING_METHODS, SPAWN_LIKE, ClassView, Project, Reach, branch_not_taken, method_closure,
)
from .records import field, record, replace
from .registry import HandleType, Registry
from .rules_remedies import opens_lazily, remedy_findings
from .ruletable import latent_of

HAZARD, SPAWN_CRASH, SAFE = "hazard", "spawn", "safe"
# method name → (the class defining it, the method), over the MRO, nearest first


@record(frozen=True)
class UsedLoader:
    facts: FileFacts
    loader: LoaderCall
    verdict: str
    context: str = ""  # the start method the verdict is for
    origin: str = ""  # where that start method comes from, when not the loader's own file
    kept: str = ""  # for a crash: the `__getstate__` keeping the attribute, and the attribute


@record()
class Candidate:
    """One handle site, gathered over every dataset class that holds it."""

    code: str
    site: HandleSite
    path: str
    what: str  # "created in Remote.__init__", "created at module level (SESSION)", ...
    holder: str  # dataset class name, for messages
    plan: FixPlan
    fork_unsafe: bool
    loaders: list[UsedLoader] = field(default_factory=list)
    any_loader: bool = False  # some loader uses a dataset holding it (even a safe one)
    torch_dataset: bool = False
    wire: bool = True  # the fix may wire the loaders (False: the loader's dataset is another)
    unwired: str = ""  # why not, for the fixer's note
    spawn_only: bool = False  # no loader found, but every entry starts workers by spawn and
    # the class decides what is pickled: nothing is shared (for the latent code)
    named_by: str = ""  # built by a name no constant gives, through this registry (latent)


def evaluate(project: Project, registry: Registry) -> list[Finding]:
    candidates: dict[tuple[str, str, Span], Candidate] = {}
    loaders_by_class = project.loaders_by_class()
    for cls in project.classes.values():
        uses = loaders_by_class.get(cls.qualname, [])
        is_torch = project.is_torch_dataset(cls)
        if not is_torch and not uses:
            continue
        view = class_view(project, cls)
        spawn_only = not uses and _pickling_decided(view) and all(
            m in SPAWN_LIKE for m in project.class_start_methods(view.facts))
        built = project.constructions(cls, view.via, uses)
        for cand, parent_use, attr, kind in _candidates_of(project, registry, view):
            if built and all(_branch_not_run(view, cand.site.span, attr, ref)
                             or _method_not_run(view, cand, kind, ref) for ref in built):
                continue  # every construction takes the other branch (`readonly=False`)
            judged = view
            if view.via is not None:
                outer = _reached_through(project, cand, view, is_torch)
                if outer is not None:  # a holder one dataset builds: judged as its attribute
                    judged, attr = class_view(project, outer), cand.plan.attr
                    if attr in judged.guarded or attr in judged.closed_at_fork \
                            or not _built_in_parent(judged, cand.plan.method) \
                            or not _holder_built_in_parent(project, view.cls, judged):
                        continue
                    parent_use |= attr in judged.parent_uses
                elif not is_torch and _built_only_in_workers(project, view.cls):
                    continue
            # safe by spawn only if no holder's pickle carries it (`__getstate__` drops it)
            cand.spawn_only = spawn_only and not (kind in ("instance", "passed", "unread")
                                                  and judged.pickles(attr))
            merged = candidates.setdefault((cand.code, cand.path, cand.site.span), cand)
            merged.torch_dataset |= is_torch
            # a loader of a class no worker of which reads it (judged under spawn only) does
            # not speak for the classes that do (`super().__getitem__` reading it)
            merged.any_loader |= bool(uses) and kind != "unread"
            merged.spawn_only &= cand.spawn_only
            merged.fork_unsafe |= cand.fork_unsafe
            merged.named_by = merged.named_by or project.named_by.get(cls.qualname, "")
            for facts, loader, _ in uses:
                used = used_loaders(project, registry, judged, facts, loader,
                                    cand.site.handle, attr, parent_use, kind)
                merged.loaders.extend(u for u in used
                                      if kind != "unread" or u.verdict == SPAWN_CRASH)
        for facts, loader, ref in uses:
            for cand, parent_use, attr in _passed_candidates(project, view, registry, ref,
                                                             facts):
                merged = candidates.setdefault((cand.code, cand.path, cand.site.span), cand)
                merged.any_loader = True
                merged.loaders.extend(used_loaders(project, registry, view, facts, loader,
                                                   cand.site.handle, attr, parent_use, "passed"))
    findings = [f for cand in candidates.values() for f in _findings_of(cand)]
    findings += remedy_findings(project, registry, class_view)  # WS3xx
    return sorted(findings, key=Finding.sort_key)


# In `finding_classes`' answer: the class of a finding is not known (a worker_init_fn's).
ANY_CLASS = "*"


def finding_classes(project: Project, registry: Registry, every_class: bool = False
                    ) -> Optional[frozenset[str]]:
    """The classes (qualified) whose handles a finding could be about, whatever start method the
    loaders' workers get: a candidate of a class a loader reaches (with `every_class`, of any
    class: one more loader may reach it), a handle passed to one's constructor, or a remedy's
    pattern (a worker_init_fn setting or making something on the dataset, a lazy open of a
    handle).
    None: neither the start methods nor more loaders' datasets need be searched for. (Without
    `every_class` it is the start methods' question, asked once the other rounds are done: a
    torch dataset no loader reaches is latent whatever start method any loader gets, unless
    it decides its pickle, so its handles alone do not send the selection after every entry
    script and every importer of a loader, most of a library's tree.) `ANY_CLASS` in the
    answer: a finding's class is not known."""
    if any(init.sets or init.calls for f in project.files for init in f.remedies.worker_inits):
        # WS301/WS302: a worker_init_fn giving the dataset an attribute (of any class)
        return frozenset({ANY_CLASS})
    loaders_by_class = project.loaders_by_class()
    # WS102 of a module-level handle needs one in some file: else no class's worker methods
    # need following through the functions they call (the most of this question's work)
    modules = any(not h.filled_by and registry.lookup(h.site.handle) is not None
                  for f in project.files for h in f.module_handles)
    found: set[str] = set()
    for cls in project.classes.values():
        uses = loaders_by_class.get(cls.qualname, [])
        if not uses and not every_class and not project.is_torch_dataset(cls):
            continue
        view = class_view(project, cls)
        if not uses and not every_class and not _pickling_decided(view):
            # a torch dataset no loader reaches is latent whatever start method a loader
            # gets, unless it decides its pickle: spawn in every entry makes it safe (it may
            # be built by name from a config, in a loader no parsed file names it in)
            continue
        if next(iter(_candidates_of(project, registry, view, modules)), None) is not None \
                or opens_lazily(project, registry, view) \
                or any(next(iter(_passed_candidates(project, view, registry, ref, facts)), None)
                       is not None for facts, _, ref in uses):
            found.add(cls.qualname)
    return frozenset(found) if found else None


def loader_files(project: Project, classes: frozenset[str]) -> Optional[frozenset[str]]:
    """The files of the loaders reaching `classes` (`finding_classes`' answer): only their
    start methods can change a finding. None when a class's loaders are not all known: a
    finding's class not known (`ANY_CLASS`), or one no loader reaches (it decides its pickle:
    a loader no parsed file names it in may be built from a config)."""
    if ANY_CLASS in classes:
        return None
    by_class = project.loaders_by_class()
    found: set[str] = set()
    for name in classes:
        uses = by_class.get(name)
        if not uses:
            return None
        found.update(facts.path for facts, _, _ in uses)
    return frozenset(found)


# --- the effective class ------------------------------------------------------------------

def class_view(project: Project, cls: ClassFacts) -> ClassView:
    """The class's linked view (`link.view`), built once per class."""
    return project.view(cls)


def _pickling_decided(view: ClassView) -> bool:
    """The class decides what its pickle holds (the fix adds a `__getstate__`)."""
    return any(name in view.methods for name in PICKLING_METHODS)


def _reached_through(project: Project, cand: Candidate, view: ClassView, is_torch: bool
                     ) -> Optional[ClassFacts]:
    """A holder object or sub-dataset the loader's dataset keeps: say so; a holder passed in
    is WS104; a sub-dataset's fix is per class, never wired to a loader whose dataset is the
    outer one; a holder built by one dataset is rebuilt per process by that dataset's fix:
    that dataset is returned (the hazard is judged on its attribute). A sub-dataset passed in
    (`Wrapper(Inner(p))`) opening its own handle is fixed in its class, as built inside."""
    via = view.via
    assert via is not None
    cand.what = f"{cand.what} {via.describe()}"
    cand.wire = False
    cand.unwired = f"its DataLoaders iterate another dataset keeping it {via.describe()}"
    if not is_torch:  # a holder (a dataset's own handle, in a dataset passed in, is WS101)
        if cand.code == "WS101" and _passed_on_the_way(project, view.cls):
            cand.code = "WS104"
        built = None if via.passed else _holder_built(project, view.cls, via)
        if built is None:
            cand.plan = replace(cand.plan, kind="holder")
            return None
        outer, owner, call = built
        cand.plan = replace(cand.plan, kind="holder", class_qualname=owner.qualname,
                            attr=call.attr, attrs=(call.attr,), method=call.method,
                            via=view.cls.qualname, call=call.span)
        cand.wire, cand.unwired = True, ""  # the fix is the dataset's: its loaders are wired
        return outer
    return None


def _passed_on_the_way(project: Project, holder: ClassFacts) -> bool:
    """Whether the holder, or a holder keeping it on the way up to a dataset, is passed in
    (`Dataset(recordService=RecordService(q))`, whose `__init__` builds the `DbContext`
    holding the connection): its handle is made by the caller, WS104."""
    seen = {holder.qualname}
    names = [holder.qualname]
    while names:
        for reach in project.reached.get(names.pop(), []):
            if reach.passed:
                return True
            for outer in project.classes.values():
                if outer.name == reach.outer and outer.qualname not in seen \
                        and not project.is_torch_dataset(outer):
                    seen.add(outer.qualname)
                    names.append(outer.qualname)
    return False


def _built_in_parent(view: ClassView, method: str,
                     init_run: Optional[set[tuple[str, str]]] = None) -> bool:
    """Whether the parent runs `method` of the dataset before its workers start: while
    constructing it or in `__len__`, through `self.m()` calls and properties read
    (`self.db` running a `db` property); a holder built only later is built per worker.
    `init_run`: what one construction runs (`ClassView.init_run_for`), its `__init__` then not
    calling the methods it calls only in branches that construction skips."""
    skipped = set() if init_run is None \
        else {name for _, name in view.init_run} - {name for _, name in init_run}
    ran: set[str] = set()
    stack = [root for root, _ in _parent_fillers(view) if root not in skipped]
    while stack:
        name = stack.pop()
        if name in ran or name not in view.methods:
            continue
        ran.add(name)
        facts = view.methods[name][1]
        if name == "__init__" and skipped:  # (`self.m()` reads `m` too)
            stack.extend(n for n in (*facts.self_calls, *facts.attrs_read) if n not in skipped)
        else:
            stack.extend((*facts.self_calls, *facts.attrs_read))
    return method in ran


def _branch_not_run(view: ClassView, span: Span, attr: str, ref: DatasetRef) -> bool:
    """The handle is created and kept as `self.<attr>` in one branch of `if <param>:` in the
    `__init__` the construction runs, and the construction's arguments take the other branch:
    a constant given for the parameter, or its constant default when not given. (What is
    derived from it after the branches may come from either: not decided here.)"""
    init = view.methods.get("__init__")
    if init is None:
        return False
    owner = init[0]
    branch = next((b for b in owner.branch_params
                   if (b[0], b[1], b[2]) == (span.line, span.col, attr)), None)
    if branch is None:
        return False
    _, _, _, param, taken, default = branch
    return branch_not_taken(owner, param, taken, default, ref)


def _method_not_run(view: ClassView, cand: Candidate, kind: str, ref: DatasetRef) -> bool:
    """The handle is kept by a method that construction runs only because `__init__` calls it
    in one branch of `if <param>:` (`if preload: self.open_lmdb()`), and the construction's
    arguments take the other branch: as `_branch_not_run`, for the calls in the branch."""
    plan = cand.plan
    return kind in ("instance", "unread") and plan.kind in ("instance", "returned") \
        and bool(view.built) and (plan.class_qualname, plan.method) not in view.init_run_for(ref)


def _call_built_in_parent(project: Project, view: ClassView, member: ClassFacts,
                          call: HeldCall) -> bool:
    """Whether the parent runs `call`, building a holder in `member`'s method of the dataset
    `view` (`_built_in_parent`): not when `__init__` makes it only in one branch of
    `if <param>:` every construction of the dataset takes the other branch of
    (`if cache: self.reader = Reader(p)`, never given `cache=True`), as `_branch_not_run`
    for a handle made there; nor when the method making it runs in the parent only through
    such a branch (`if cache: self._build_reader()`), as `_method_not_run`."""
    if not _built_in_parent(view, call.method):
        return False
    init = view.methods.get("__init__")
    if call.method != "__init__":  # `if cache: self._build_reader()`: as `_method_not_run`
        return not view.built or any(_built_in_parent(view, call.method, view.init_run_for(ref))
                                     for ref in view.built)
    if init is None or init[0] is not member:
        return True
    built = project.constructions(view.cls, view.via, view.uses)
    return not built or not all(_branch_not_run(view, call.span, call.attr, ref)
                                for ref in built)


def _holder_built_in_parent(project: Project, holder: ClassFacts, view: ClassView) -> bool:
    """Whether the dataset `view` builds the holder in the parent by one of its calls
    building it (`_call_built_in_parent`)."""
    calls = [(member, call) for reach in project.reached.get(holder.qualname, [])
             for outer, member, call in _holder_calls(project, holder, reach)
             if outer.qualname == view.cls.qualname]
    return not calls or any(_call_built_in_parent(project, view, member, call)
                            for member, call in calls)


def _built_only_in_workers(project: Project, holder: ClassFacts) -> bool:
    """A holder every dataset keeping it builds itself, each only in methods the parent
    never runs (a property read by `__getitem__` alone): every worker builds its own."""
    reaches = project.reached.get(holder.qualname, [])
    if not reaches or any(reach.passed for reach in reaches):
        return False
    for reach in reaches:
        calls = _holder_calls(project, holder, reach)
        if not calls or any(_call_built_in_parent(project, class_view(project, outer),
                                                  member, call)
                            for outer, member, call in calls):
            return False
    return True


def _holder_calls(project: Project, holder: ClassFacts, reach: Reach
                  ) -> list[tuple[ClassFacts, ClassFacts, HeldCall]]:
    """The calls building the holder as `self.<reach.attr>` in the torch datasets named by
    `reach` (`self.reader = Reader(p)`): (the dataset, the class in its chain making the
    call, the call)."""
    return [(outer, member, call) for outer in project.classes.values()
            if outer.name == reach.outer and project.is_torch_dataset(outer)
            for member in project.mro(outer)
            for call in member.held_calls if call.attr == reach.attr
            and project.resolve(call.callee, project.class_file[member.qualname])
            == holder.qualname]


def _holder_built(project: Project, holder: ClassFacts, via: Reach
                  ) -> Optional[tuple[ClassFacts, ClassFacts, HeldCall]]:
    """The call that builds the holder (`self.reader = Reader(p)`) in the one dataset class
    keeping it, a dataset a loader uses directly (or its subclasses too, building it with the
    `__init__` they inherit: the class making the call is returned); None otherwise. Built
    again by that class into the same attribute (an opener reopening it as `__init__` made
    it), the first call construction runs."""
    reaches = project.reached.get(holder.qualname, [])
    if not reaches or any(reach.passed or reach.attr != via.attr for reach in reaches):
        return None
    found = [built for reach in reaches for built in _holder_calls(project, holder, reach)
             if not project.reached.get(built[0].qualname)]  # the dataset itself not kept
    if not found or len({outer.qualname for outer, _, _ in found}) != len(reaches) \
            or len({owner.qualname for _, owner, _ in found}) != 1:
        return None
    return min(found, key=lambda each: (each[2].method != "__init__", each[0] is not each[1]))


# --- candidates ---------------------------------------------------------------------------

def _run_by_init(view: ClassView, method: str) -> str:
    """How `__init__` reaches the method creating the handle, when it is another one (` (run
    by __init__ through _load)`): `open_lmdb` alone reads as a lazy opener each worker runs."""
    if method == "__init__" or "__init__" not in view.methods:
        return ""
    paths = {"__init__": ["__init__"]}
    queue = ["__init__"]
    while queue:
        name = queue.pop(0)
        for callee in sorted(view.methods[name][1].self_calls):
            if callee in view.methods and callee not in paths:
                paths[callee] = [*paths[name], callee]
                queue.append(callee)
    path = paths.get(method)
    if path is None:
        return ""  # a post-init hook's
    through = f" through {', '.join(path[1:-1])}" if len(path) > 2 else ""
    return f" (run by __init__{through})"


def _candidates_of(project: Project, registry: Registry, view: ClassView, modules: bool = True
                   ) -> Iterator[tuple[Candidate, bool, str, str]]:
    """The handle sites the class's workers share, each with whether the parent uses it, the
    attribute and the kind. `modules`: False when no file has a module-level handle (then
    there is no WS102 of one to look for)."""
    mro = view.chain
    for member in mro:
        home = project.class_file[member.qualname]
        for held in member.held:
            htype = registry.lookup(held.site.handle)
            if htype is None or (member.qualname, held.method) not in view.init_run:
                continue
            if held.closed or held.attr in view.guarded or held.attr in view.closed_at_fork:
                continue
            # kept but never read by workers: nothing shared under fork, yet spawn still
            # pickles it with the instance ("unread": judged under spawn only)
            attrs = tuple(h.attr for h in member.held
                          if h.site == held.site and h.method == held.method)
            unread = not ({held.attr, *attrs} & view.worker_reads)
            if held.attr not in view.worker_reads and (not unread or htype.picklable):
                continue
            if member is not view.cls and (unread or view.cls.held and not (
                    {held.attr, *attrs} & (view.worker_reads - view.super_reads))) \
                    and {held.attr, *attrs} & class_view(project, member).worker_reads:
                # read through `super().__getitem__` by a subclass holding handles of its own:
                # the base's own view judges it (a fix of both could not keep each one's
                # `__getstate__`); one holding none is judged here (its base's `__getitem__`
                # runs in its workers)
                continue
            plan = FixPlan("instance", held.site.handle, member.qualname, held.attr,
                           attrs or (held.attr,), held.method)
            cand = Candidate("WS101", held.site, home.path,
                             f"created in {member.name}.{held.method}"
                             f"{_run_by_init(view, held.method)}", view.cls.name, plan,
                             not htype.fork_safe and not unread)
            yield cand, held.attr in view.parent_uses, held.attr, \
                "unread" if unread else "instance"
        for held in member.class_held:
            htype = registry.lookup(held.site.handle)
            if htype is None or held.attr not in view.worker_reads or held.attr in view.guarded:
                continue
            plan = FixPlan("class", held.site.handle, member.qualname, held.attr, (held.attr,))
            cand = Candidate("WS103", held.site, home.path,
                             f"created as class attribute {member.name}.{held.attr}",
                             view.cls.name, plan, not htype.fork_safe)
            yield cand, held.attr in view.parent_uses, held.attr, "class"
    yield from _class_cache_candidates(project, registry, view, mro)
    yield from _returned_candidates(project, registry, view, mro)
    if modules:
        yield from _module_candidates(project, registry, view)
    if project.cache_fillers:
        yield from _cache_candidates(project, registry, view)


def _returned_candidates(project: Project, registry: Registry, view: ClassView,
                         mro: list[ClassFacts]) -> Iterator[tuple[Candidate, bool, str, str]]:
    """Handles kept from a call that returns one (`self.env = open_env(p)`): WS101 at the
    call; a cached factory's one object per process is WS102 at its creating call."""
    direct = {h.attr for member in mro for h in member.held}
    derived = [(a, source, m) for member in mro for a, source, m in member.derived_attrs]
    for member in mro:
        home = project.class_file[member.qualname]
        for kept in member.held_calls:
            attr = kept.attr
            if (member.qualname, kept.method) not in view.init_run or attr in direct \
                    or attr in view.guarded or attr in view.closed_at_fork:
                continue
            found = project.returned_handle(kept.callee, view.cls, home,
                                            given=kept.handle_args)
            if found is None:
                continue
            site, cached, where = found
            htype = registry.lookup(site.handle)
            if htype is None:
                continue
            # what workers read may be only an object derived from it (`self.txn =
            # self.env.begin()`): that keeps the returned handle alive in them
            kids = tuple(dict.fromkeys(a for a, source, m in derived if source == attr
                                       and m in htype.derived_methods and a not in direct))
            if not ({attr, *kids} & view.worker_reads):
                continue
            parent_use = bool({attr, *kids} & view.parent_uses)
            callee = kept.callee.rsplit(".", 1)[-1]
            if cached:
                cand = Candidate("WS102", site, where.path,
                                 f"returned by the cached {callee}() and kept in "
                                 f"{member.name}.{attr}", view.cls.name,
                                 FixPlan("returned", site.handle, member.qualname, attr,
                                         (attr, *kids), kept.method),
                                 not htype.fork_safe)
                yield cand, parent_use, attr, "instance"
                continue
            if project.resolve(kept.callee, home) in project.classes:
                how = f"built as its subclass {callee}"
            elif any(arg.site == site for arg in kept.handle_args):
                how = f"passed through {callee}()"  # it returns the handle it is given
            else:
                how = f"returned by {callee}()"
            cand = Candidate("WS101", HandleSite(site.handle, kept.span), home.path,
                             f"{how} in {member.name}.{kept.method}",
                             view.cls.name, FixPlan("returned", site.handle, member.qualname,
                                                    attr, (attr, *kids), kept.method,
                                                    via=kept.callee, call=kept.span),
                             not htype.fork_safe)
            yield cand, parent_use, attr, "instance"


def _module_candidates(project: Project, registry: Registry, view: ClassView
                       ) -> Iterator[tuple[Candidate, bool, str, str]]:
    seen: set[tuple[str, str]] = set()
    own = frozenset(member.qualname for member in view.chain)

    def known(handle: str) -> bool:
        return registry.lookup(handle) is not None

    for name in sorted(view.worker_methods):
        owner, method = view.methods[name]
        owner_facts = project.class_file[owner.qualname]
        if not project.reads_handle_reader(method.globals_read, owner_facts, known):
            continue  # (what `calls_through` would follow reaches no module-level handle)
        # read directly, or inside the project functions it calls (`load(key)` reading BUCKET)
        for global_name, facts in project.calls_through(method.globals_read, owner_facts,
                                                        own)[0]:
            found = project.module_handle(global_name, facts)
            if found is None:
                continue
            home, handle = found
            htype = registry.lookup(handle.site.handle)
            if htype is None or (home.path, handle.name) in seen or handle.filled_by:
                continue
            seen.add((home.path, handle.name))
            parent_use = _module_parent_use(view, global_name, project)
            plan = FixPlan("module", handle.site.handle, view.cls.qualname, handle.name,
                           (handle.name,))
            cand = Candidate("WS102", handle.site, home.path,
                             f"created at module level ({handle.name})", view.cls.name, plan,
                             not htype.fork_safe)
            yield cand, parent_use, handle.name, "module"


def _parent_fillers(view: ClassView) -> list[tuple[str, set[str]]]:
    """The methods the parent runs on a dataset before its workers start (construction, in
    order, then `__len__`, which the sampler calls), each with what it runs (self calls)."""
    init_names = {n for _, n in view.init_run}
    roots = ["__init__", *sorted(init_names - {"__init__"}), "__len__"]
    return [(root, method_closure([root], view.methods)) for root in roots
            if root in view.methods]


def _parent_runs(project: Project, view: ClassView
                 ) -> Iterator[tuple[str, str, ClassFacts, MethodFacts]]:
    """(root, name, owner, method) for each method the parent runs (`_parent_fillers`), and
    the bases' own methods construction runs too (`super().__init__()`), which the effective
    methods by name hide."""
    for root, ran in _parent_fillers(view):
        for name in ran:
            owner, method = view.methods[name]
            yield root, name, owner, method
    for qualname, name in sorted(view.init_run):
        base = project.classes.get(qualname)
        hidden = base.method(name) if base is not None else None
        effective = view.methods.get(name)
        if base is not None and hidden is not None and (effective is None
                                                        or effective[0] is not base):
            yield "__init__", name, base, hidden


def _cache_candidates(project: Project, registry: Registry, view: ClassView
                      ) -> Iterator[tuple[Candidate, bool, str, str]]:
    """A process-global handle cache (`_CACHE[path] = zipfile.ZipFile(path)` in a function)
    that construction fills in the parent and worker methods read, directly or through the
    functions they call: the workers share the parent's handles (WS102). A cache the parent
    never fills is filled per process: safe."""
    filled: dict[str, str] = {}  # filling function → the parent method that first calls it
    own = frozenset(member.qualname for member in view.chain)  # its caches: WS103
    held = _cache_classes_kept(project, view)
    for root, name, owner, method in _parent_runs(project, view):
        home = project.class_file[owner.qualname]
        names = method.globals_read
        if name == "__init__":  # a function it only keeps or passes on is not run
            kept = {n for _, n in owner.init_callables}
            names = tuple(n for n in names if n not in kept)
        names += tuple(q for attr in method.attrs_read for q in held.get(attr, ()))
        if not project.reads_cache_filler(names, home):  # (nothing it fills: not followed)
            continue
        for func in project.calls_through(names, home, own)[1]:
            filled.setdefault(func, root)
    if filled.keys().isdisjoint(project.cache_fillers):  # (nothing the workers read either)
        return
    seen: set[tuple[str, str]] = set()
    mro = view.chain
    for name in sorted(view.worker_methods):
        owner, method = view.methods[name]
        names = method.globals_read + tuple(q for attr in method.attrs_read
                                            for q in held.get(attr, ()))
        reads = list(project.calls_through(names, project.class_file[owner.qualname], own)[0])
        for called in method.self_calls:  # `self.loader(p)`: the functions it may be
            if called not in view.methods:
                for func, home in _callable_attr(mro, called, project):
                    reads.extend(project.calls_through((func,), home, own)[0])
        for read, facts in reads:
            helper = project.read_class(read, facts)
            if helper is not None and helper.qualname not in own:
                yield from _helper_cache_candidates(project, registry, view, helper, filled,
                                                    seen)
            found = project.module_handle(read, facts)
            if found is None or found[1].filled_by not in filled:
                continue
            home, handle = found
            htype = registry.lookup(handle.site.handle)
            if htype is None or (home.path, handle.name) in seen:
                continue
            seen.add((home.path, handle.name))
            filler = handle.filled_by.rpartition(".")[2]
            cand = Candidate("WS102", handle.site, home.path,
                             f"kept in the process-global cache {handle.name} (filled by "
                             f"{filler}() in {view.cls.name}.{filled[handle.filled_by]}, "
                             f"in the parent)",
                             view.cls.name, FixPlan("cache", handle.site.handle,
                                                    view.cls.qualname, handle.name,
                                                    (handle.name,),
                                                    cache=_module_cache(home, handle)),
                             not htype.fork_safe)
            yield cand, True, handle.name, "module"


def _module_cache(home: FileFacts, handle: ModuleHandle) -> Optional[CacheFill]:
    """Where a module-level cache is and the module-level function filling it (None when a
    method or another module's function fills it: not rewritten)."""
    scope, _, filler = handle.filled_by.rpartition(".")
    return CacheFill("", handle.name, filler) if scope == home.module else None


def _cache_classes_kept(project: Project, view: ClassView) -> dict[str, list[str]]:
    """The helper classes with a class-level cache the dataset keeps as a class, not an
    instance, by attribute (`self.reader = ZipReader`, or `self.reader =
    build_file_reader(fmt)` for a function returning `_READERS[fmt]`): reading the attribute
    reads the class (`self.reader.fetch_file(p)`, the cache `ZipReader.reader_cache`)."""
    out: dict[str, list[str]] = {}
    for member in view.chain:
        home = project.class_file[member.qualname]
        for attr, refs in member.attr_refs:
            for ref in refs:
                named = [(ref.target, home)] if ref.kind == "name" else []
                func = project.functions.get(project.resolve(ref.target, home)) \
                    if ref.kind == "call" else None
                if func is not None:  # one call deep: the classes it returns
                    inside = project.by_module.get(func.qualname.rpartition(".")[0], home)
                    named = [(r.target, inside) for r in func.returns if r.kind == "name"]
                for target, facts in named:
                    cls = project.classes.get(project.resolve(target, facts))
                    if cls is not None and cls.class_caches:
                        out.setdefault(attr, []).append(cls.qualname)
    return out


def _callable_attr(mro: list[ClassFacts], attr: str, project: Project
                   ) -> list[tuple[str, FileFacts]]:
    """The functions a callable attribute kept from an `__init__` parameter may be
    (`self.loader = loader`): the parameter's default, or what a subclass's `__init__` gives
    it (a name, or its own parameter's default), along the class chain; or, for the class's
    own `__init__`, a function the constructions its loaders reach it by pass
    (`Folder(paths, default_loader)`)."""
    out: list[tuple[str, FileFacts]] = []
    owner = next((m for m in mro if m.method("__init__") is not None), None)
    for index, member in enumerate(mro):
        for param, kept in member.param_attrs:
            if kept == attr:
                out.extend(_param_names(mro, index, param, project))
                if member is owner:
                    out.extend(_passed_names(project, mro[0], member, param))
    return out


def _passed_names(project: Project, cls: ClassFacts, owner: ClassFacts, param: str
                  ) -> list[tuple[str, FileFacts]]:
    """Module-level names the constructions of `cls` its loaders use pass for `param` of its
    `__init__` (defined by `owner`), qualified, with the file they are read in."""
    position = owner.init_params.index(param) if param in owner.init_params else -2
    out: list[tuple[str, FileFacts]] = []
    for facts, _, ref in project.loaders_by_class().get(cls.qualname, []):
        home = project.home_of(ref) or facts
        for arg in ref.arg_refs if ref.kind == "call" else ():
            if arg.keyword == param or (not arg.keyword and arg.position == position):
                out.extend((r.target, home) for r in arg.refs if r.kind == "name")
    return out


def _param_names(mro: list[ClassFacts], index: int, param: str, project: Project
                 ) -> list[tuple[str, FileFacts]]:
    """Bare names (with their file) `mro[index]`'s `__init__` parameter may be bound to."""
    member = mro[index]
    home = project.class_file[member.qualname]
    out = [(name, home) for slot, name in member.init_callables if slot == f"p:{param}"]
    sub = mro[index - 1] if index > 0 else None
    if sub is None or sub.base_init is None or param not in member.init_params:
        return out
    slots = {param, f"#{member.init_params.index(param)}"}
    sub_home = project.class_file[sub.qualname]
    out.extend((name, sub_home) for slot, name in sub.init_callables if slot in slots)
    for slot, source in sub.base_init.args:
        if slot in slots and source.startswith("p:"):
            out.extend(_param_names(mro, index - 1, source[2:], project))
    return out


def _helper_cache_candidates(project: Project, registry: Registry, view: ClassView,
                             helper: ClassFacts, filled: dict[str, str],
                             seen: set[tuple[str, str]]
                             ) -> Iterator[tuple[Candidate, bool, str, str]]:
    """The class-level caches of a helper class the dataset calls (`ZipReader.zip_bank`
    filled by `ZipReader.get_zipfile`): process-global like a module's, filled in the parent
    when construction calls the filling method (WS102)."""
    home = project.class_file[helper.qualname]
    for cache in helper.class_caches:
        name = f"{helper.name}.{cache.attr}"
        first = filled.get(f"{helper.qualname}.{cache.method}")
        htype = registry.lookup(cache.site.handle)
        if first is None or htype is None or (home.path, name) in seen:
            continue
        seen.add((home.path, name))
        cand = Candidate("WS102", cache.site, home.path,
                         f"kept in the process-global cache {name} (filled by "
                         f"{helper.name}.{cache.method}() in {view.cls.name}.{first}, in the "
                         "parent)",
                         view.cls.name, FixPlan("cache", cache.site.handle, view.cls.qualname,
                                                name, (name,), cache=CacheFill(
                                                    helper.qualname, cache.attr, cache.method)),
                         not htype.fork_safe)
        yield cand, True, name, "module"


def _class_cache_candidates(project: Project, registry: Registry, view: ClassView,
                            mro: list[ClassFacts]) -> Iterator[tuple[Candidate, bool, str, str]]:
    """A class-level container (`_envs = {}`) a method fills with handles (`Frames._envs[p] =
    lmdb.open(p)`): one per process. Filled while the parent constructs the dataset and read
    by its worker methods, the workers share the parent's handles (WS103); filled only in the
    workers, each has its own."""
    parent: Optional[list[tuple[str, set[str]]]] = None  # asked only of a class with a cache
    for member in mro:
        home = project.class_file[member.qualname]
        for cache in member.class_caches:
            if parent is None:
                parent = _parent_fillers(view)
            htype = registry.lookup(cache.site.handle)
            first = next((root for root, ran in parent if cache.method in ran), "")
            if htype is None or not first or not (cache.attr in view.worker_reads
                                                  or cache.method in view.worker_methods):
                continue
            plan = FixPlan("cache", cache.site.handle, member.qualname, cache.attr,
                           (cache.attr,),
                           cache=CacheFill(member.qualname, cache.attr, cache.method))
            cand = Candidate("WS103", cache.site, home.path,
                             f"kept in the class-level cache {member.name}.{cache.attr} "
                             f"(filled by {member.name}.{cache.method}() in "
                             f"{view.cls.name}.{first}, in the parent)",
                             view.cls.name, plan, not htype.fork_safe)
            yield cand, True, cache.attr, "class"


def _module_parent_use(view: ClassView, name: str, project: Project) -> bool:
    parent = {n for _, n in view.init_run} | {"__len__"}
    if any(name in view.methods[n][1].globals_read for n in parent if n in view.methods):
        return True
    return any(name in f.globals_read_outside_classes for f in project.files)


def _passed_candidates(project: Project, view: ClassView, registry: Registry, ref: DatasetRef,
                       facts: FileFacts) -> Iterator[tuple[Candidate, bool, str]]:
    """WS104: handles the caller passes to the dataset's constructor, one it creates (directly
    or through a local) or another object's (`EvalSet(train_ds.h5)`: what the value flow says
    `train_ds` may be keeps one there), when the dataset keeps the parameter (in any branch:
    also when it can open its own) and its workers read it. Reported at the creating call, or
    at the argument reading another's."""
    init_owner = next((c for c, m in view.methods.values() if m.name == "__init__"), None)
    if init_owner is None:
        return
    home = project.home_of(ref) or facts  # where the construction is read
    params, param_attrs = init_owner.init_params, dict(init_owner.param_attrs)

    def kept(position: int, keyword: str, htype: Optional[HandleType] = None
             ) -> tuple[str, Optional[str]]:
        param = keyword or (params[position] if 0 <= position < len(params) else "")
        attrs = [param_attrs[param]] if param in param_attrs else []
        if htype is not None:  # a member of the handle kept (`self.x = h5[split]`)
            attrs += [attr for p, attr, how in init_owner.param_members if p == param and (
                htype.derived_subscript if how == "[]" else how in htype.derived_methods)]
        attr = next((a for a in attrs if a in view.worker_reads and a not in view.guarded),
                    None)
        return param, attr

    for arg in ref.handle_args:
        htype = registry.lookup(arg.site.handle)
        param, attr = kept(arg.position, arg.keyword, htype)
        if attr is None or htype is None:
            continue
        plan = FixPlan("passed", arg.site.handle, init_owner.qualname, attr, (attr,))
        cand = Candidate("WS104", arg.site, home.path,
                         f"created by the caller and passed to {view.cls.name}({param})",
                         view.cls.name, plan, not htype.fork_safe)
        yield cand, attr in view.parent_uses, attr
    for other in ref.attr_args:
        param, attr = kept(other.position, other.keyword)
        if attr is None:
            continue
        for site, made in project.held_at(other, home):
            htype = registry.lookup(site.handle)
            if htype is None:
                continue
            plan = FixPlan("passed", site.handle, init_owner.qualname, attr, (attr,))
            cand = Candidate("WS104", HandleSite(site.handle, other.span), home.path,
                             f"opened in {made}, read from {other.text} and passed to "
                             f"{view.cls.name}({param})", view.cls.name, plan,
                             not htype.fork_safe)
            yield cand, attr in view.parent_uses, attr


# --- loaders ------------------------------------------------------------------------------

def used_loaders(project: Project, registry: Registry, view: ClassView, facts: FileFacts,
                 loader: LoaderCall, handle: str, attr: str, parent_use: bool, kind: str
                 ) -> list[UsedLoader]:
    """The loader's verdict under each start method its workers may get (see
    `Project.start_methods`)."""
    out = [UsedLoader(facts, loader, classify(project, registry, view, facts, loader, handle,
                                              attr, parent_use, kind, context), context, origin)
           for context, origin in project.start_methods(loader, facts)]
    if "__getstate__" in view.methods:
        owner = view.methods["__getstate__"][0]
        kept = f"{owner.name}.__getstate__ keeps self.{attr}"
        out = [replace(u, kept=kept) if u.verdict == SPAWN_CRASH else u for u in out]
    return out


def classify(project: Project, registry: Registry, view: ClassView, facts: FileFacts,
             loader: LoaderCall, handle: str, attr: str, parent_use: bool, kind: str,
             context: str) -> str:
    htype = registry.lookup(handle)
    assert htype is not None
    if loader.num_workers == 0:
        return SAFE  # no worker processes: nothing is forked or pickled
    if context in SPAWN_LIKE:
        # Only the instance is pickled: module and class attributes are created anew when a
        # spawned worker imports the module. A class with its own __getstate__ decides, key
        # by key, what is pickled (the fix adds one dropping every handle).
        unpicklable = kind in ("instance", "passed", "unread") and not htype.picklable \
            and view.pickles(attr)
        return SPAWN_CRASH if unpicklable else SAFE
    if kind == "unread":
        return SAFE  # no worker reads it: forked workers share nothing they use
    if htype.fork_safe or _worker_init_recreates(project, view, facts, loader, attr, kind):
        return SAFE
    if loader.num_workers == 1:
        return HAZARD if parent_use and loader.persistent is not True else SAFE
    return HAZARD


def _worker_init_recreates(project: Project, view: ClassView, facts: FileFacts,
                           loader: LoaderCall, attr: str, kind: str) -> bool:
    functions = project.worker_init_functions(loader, facts)
    if not functions or kind == "module":
        return False
    if any(attr in func.attr_handle_assigns for func in functions):
        return True
    creating = {name for name, (owner, _) in view.methods.items()
                if any(h.attr == attr and h.method == name for h in owner.held)
                or any(c.attr == attr and c.method == name for c in owner.held_calls)}
    reopened = {name for func in functions for name in func.method_calls if name in view.methods}
    return bool(creating & method_closure(reopened, view.methods))


# --- findings -----------------------------------------------------------------------------

def _findings_of(cand: Candidate) -> Iterator[Finding]:
    hazards = [u for u in cand.loaders if u.verdict == HAZARD]
    crashes = [u for u in cand.loaders if u.verdict == SPAWN_CRASH]
    if hazards:
        yield _finding(cand, cand.code, _shared_message(cand, hazards))
    if crashes:
        yield _finding(cand, "WS201", _spawn_message(cand, crashes))
    latent = latent_of(cand.code)
    if not cand.any_loader and cand.fork_unsafe and cand.torch_dataset and latent \
            and not cand.spawn_only:
        why = f"no DataLoader using {cand.holder} found in the checked files"
        if cand.named_by:  # a loader's dataset is looked up by a name known only at run time
            why = (f"built by name through registry {cand.named_by}, the name known only at "
                   f"run time (a config, an argument): no DataLoader is known to use "
                   f"{cand.holder}")
        message = (f"{cand.site.handle} {cand.what} would be shared by DataLoader workers "
                   f"({why}): create it per worker")
        yield _finding(cand, latent, message)


def _finding(cand: Candidate, code: str, message: str) -> Finding:
    # A loader is wired with the generic worker init (it opens the handles of whatever dataset
    # its worker gets), also one given its dataset through a parameter (`def val(net,
    # dataset)`): not one whose DataLoader subclass does not pass a `worker_init_fn=` on to
    # torch's. Then no loader is, and the fix opens lazily (right for every loader).
    unpassed = next((u for u in cand.loaders if not u.loader.wires_init), None)
    # built by a registry name known only at run time too: the loaders that build it so are
    # not among those found, and a worker init wired into the others would leave them unfixed
    wire = cand.wire and unpassed is None and not cand.named_by
    loaders = tuple(sorted({(u.facts.path, u.loader.span.line, u.loader.span.col)
                            for u in cand.loaders if u.loader.num_workers != 0})) \
        if wire else ()
    unwired = cand.unwired if not cand.wire else ""
    if unpassed is not None and not unwired:
        unwired = (f"the DataLoader subclass {unpassed.loader.via} at {unpassed.facts.path}:"
                   f"{unpassed.loader.span.line} does not pass a worker_init_fn on to "
                   "torch's DataLoader")
    if cand.named_by and not unwired:
        unwired = (f"{cand.holder} is {'also ' if cand.loaders else ''}built by name through "
                   f"registry {cand.named_by}, the name known only at run time: the DataLoaders "
                   f"that get it{' so' if cand.loaders else ''} cannot be found and wired")
    plan = replace(cand.plan, loaders=loaders,
                   unwired=unwired if cand.loaders or cand.named_by else "")
    return Finding(cand.path, cand.site.span, code, message, plan)


def _shared_message(cand: Candidate, hazards: list[UsedLoader]) -> str:
    worst = max(hazards, key=_severity)
    where = _loader_location(cand.path, worst)
    others = len({(u.facts.path, u.loader.span) for u in hazards}) - 1
    more = f", and {others} other loader{'s' if others > 1 else ''}" if others else ""
    return (f"{cand.site.handle} {cand.what} is shared by DataLoader workers "
            f"(num_workers={worst.loader.num_workers_text}, {where}{more}): create it per worker")


def _spawn_message(cand: Candidate, crashes: list[UsedLoader]) -> str:
    first = crashes[0]
    origin = f" ({first.origin})" if first.origin else ""
    kept = f" ({first.kept})" if first.kept else ""
    return (f"{cand.site.handle} {cand.what}{kept} does not pickle: the DataLoader at "
            f"{_loader_location(cand.path, first)} uses {first.context} workers{origin} and "
            f"crashes when they start: create it per worker")


def _severity(used: UsedLoader) -> tuple[int, int]:
    workers = used.loader.num_workers
    return (workers if workers is not None else 2, -used.loader.span.line)


def _loader_location(finding_path: str, used: UsedLoader) -> str:
    path = used.facts.path
    if path == finding_path:
        shown = os.path.basename(path)
    else:
        rel = os.path.relpath(path, os.path.dirname(finding_path) or ".")
        shown = rel if not rel.startswith("..") else _as_given(path)
    return f"{shown}:{used.loader.span.line}"


def _as_given(path: str) -> str:
    """A path as the command line shows it: the project index (the flake8 plugin's links)
    holds absolute paths, shown relative to the working directory when below it."""
    if not os.path.isabs(path):
        return path
    here = os.path.relpath(path)
    return here if not here.startswith("..") else path
