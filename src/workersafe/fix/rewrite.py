"""The rewrite across files: dataset classes, their DataLoader calls, and the imports that
join them. Every edit is collected against the original trees, then each file is rendered
once."""

from __future__ import annotations

import os
import re
import sys
import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from ..discovery import module_of_import
from ..engine import CheckResult, Engine
from ..facts import ClassFacts, Span
from ..findings import CacheFill, Finding, FixPlan
from ..frameworks import LOADER_OWNER_BASE_WORDS, passes_keywords
from ..link import Project
from ..registry import FILE_OBJECT_OPENERS
from ..rules import evaluate
from ..ruletable import UNREADABLE
from .annotate import Typed, checks_annotations, class_annotated, module_annotated
from .classfix import (
    custom_pickling, declarations, find_class, plan_class_attr, rewrite_class,
)
from .cachefix import apply_cache_fix, cache_lines, plan_cache_fix
from .cstguard import libcst_problem
from .cstutil import (
    Located, ReplaceNodes, bound_names, dotted, leading_lines, module_bindings, parse_raw,
    statements, target_names, walk, with_dominant_newline, with_leading_lines,
)
from ..reading import read_source
from ..source import SourceError
from .factories import Factories
from .foldopener import self_call_statements
from .handles import HandleNames, in_full, module_imports
from .initplan import KEPT_PARAMETER, VARYING, find_method, plan_attr, varying_call
from .kwargs import opaque_star
from .lazyguard import PICKLING, GuardedLazy, chained_getstate, guard_lazy_opens
from .modulefix import (
    ModulePlan, importer_plan, is_functools_import, mentions, module_readers, only_reads,
    reads_through,
    plan_module_handle, rewrite_importer, rewrite_module, rewrite_module_reads, set_up,
    in_memory_target, writing_mode,
)
from .nodememo import NodeMemo, memo_scope
from .outcome import Outcome
from .plan import AttrPlan, Unfixable
from .refusals import known_refusal
from .reopen import ReopenPlan, plan_reopen, rewrite_reopen
from .style import line_length, max_line
from .templates import (
    BLANK, OPENER_NAME, WORKER_INIT_NAME, WORKER_INIT_NEEDS, chains_previous, is_worker_init,
    statement, worker_init_function,
)


@dataclass
class Group:
    """One dataset class and the findings fixed in it."""

    path: str
    class_name: str
    module: str
    findings: list[Finding]
    plans: list[AttrPlan] = field(default_factory=list)
    strategy: str = "worker-init"
    note: str = ""
    loaders: list[tuple[str, cst.Call]] = field(default_factory=list)
    loader_keys: list[tuple[str, int, int]] = field(default_factory=list)
    qualname: str = ""
    base_strategy: str = ""  # a base class fixed in the same run: its strategy (one chain)
    wire_only: bool = False  # the class has its opener (an earlier run): wire new loaders
    reopens: list[ReopenPlan] = field(default_factory=list)  # reopened as made (fix/reopen)
    # not a dataset: an object datasets keep, given it by their callers (or built by several),
    # whose handle each process then opens for itself, lazily, in this class
    holder: bool = False


@dataclass(frozen=True)
class FixedClass:
    """A rewritten dataset class, for verification to check the promise on the new code."""

    path: str
    class_name: str
    strategy: str
    openers: tuple[str, ...]
    methods: tuple[str, ...]  # the methods the handles were created in
    properties: tuple[str, ...]  # attributes turned into lazy properties
    handles: tuple[str, ...]  # the constructors of the handles moved
    factories: tuple[tuple[str, str], ...] = ()  # project calls making them (AttrPlan.factories)


@dataclass
class FileEdit:
    located: Located
    replacements: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
    worker_init_name: str = ""  # the file's generic worker init, when its loaders are wired
    worker_init_new: bool = False  # to be added (else written by an earlier run)
    imports: list[cst.BaseStatement] = field(default_factory=list)
    wiring: dict[cst.Call, list[cst.BaseExpression]] = field(default_factory=dict)
    chains: bool = False  # a wired loader had a worker_init_fn: the worker init runs it first
    typing_names: set[str] = field(default_factory=set)  # annotations need them from typing


class Rewriter:
    def __init__(self, engine: Engine, result: CheckResult, strategy: str) -> None:
        self.engine = engine
        self.result = result
        self.strategy = strategy
        self.registry = engine.registry
        self.files: dict[str, FileEdit] = {}
        self.outcomes: list[Outcome] = []
        good = [f for f in result.facts.values() if not f.error]
        self.project = Project(good, engine.config.all_dataset_bases(),
                               registry=engine.registry)
        self.allowed_lines: dict[str, set[int]] = {}
        self.module_findings: list[Finding] = []
        self.lazy_findings: list[Finding] = []  # WS303/WS313: lazy opens to guard
        # (class qualname, attr) a worker_init_fn remedy's fix moved into `__init__`
        self.moved_creations: set[tuple[str, str]] = set()
        self.cache_findings: list[Finding] = []  # process-global caches to key by the process
        self.guarded_lazy: list[GuardedLazy] = []
        # (path, class name) → what the `__getstate__` the lazy guard gave it leaves out
        self.lazy_pickled: dict[tuple[str, str], dict[str, bool]] = {}
        self.fixed_classes: list[FixedClass] = []
        self._spellings: Optional[dict[str, Optional[str]]] = None  # each file's (`_named_only`)
        # path → [(name, handle)] module handles to turn into accessors, and
        # path → [(source module, name, accessor)] imports of them to follow
        self.module_fixes: dict[str, list[tuple[str, str]]] = {}
        self.importer_fixes: dict[str, list[tuple[str, str, str]]] = {}
        self._passed: Optional[list[Finding]] = None  # see `_passed_in`
        self.factories = Factories(self.project, self.registry,
                                   {f.module: f.path for f in result.files
                                    if f.path in result.sources},
                                   lambda p: self._edit(p).located)

    # --- entry --------------------------------------------------------------------------------

    def run(self) -> tuple[dict[str, bytes], list[Outcome]]:
        """The rewritten files (path → bytes, the changed ones) and every finding's outcome."""
        # the planning asks the same of the same nodes many times; lines as long as the
        # project allows
        with memo_scope(), line_length(self.engine.config.line_length):
            return self._run()

    def _run(self) -> tuple[dict[str, bytes], list[Outcome]]:
        groups = self._groups()
        self._plan_module_fixes()
        fixed_classes = {g.qualname for g in groups.values()}
        done: dict[str, Group] = {}
        for group in sorted(groups.values(), key=self._depth):  # bases before subclasses
            try:
                self._plan_group(group, fixed_classes, done)
                self._apply_group(group)
            except Unfixable as exc:
                guards = self._lazy_accessor_plans(group)
                if guards is not None:  # the accessor gets the process check instead
                    self.lazy_findings += guards
                    continue
                self.outcomes += [Outcome(f, "unfixable", str(exc)) for f in group.findings]
                continue
            done[group.qualname] = group
            note = f"{group.strategy}" + (f"; {group.note}" if group.note else "")
            self.outcomes += [Outcome(f, "fixed", note) for f in group.findings]
        self._key_caches()
        self._guard_lazy_opens()
        self._finish_wiring()
        return self._render(), self.outcomes

    def _depth(self, group: Group) -> int:
        cls = self.project.classes.get(group.qualname)
        return len(self.project.mro(cls)) if cls else 0

    def _groups(self) -> dict[tuple[str, str], Group]:
        groups: dict[tuple[str, str], Group] = {}
        seen: set[tuple[str, Span]] = set()
        for finding in self.result.findings:
            plan = finding.plan
            key = (finding.path, finding.span)
            if finding.code == UNREADABLE:
                self.outcomes.append(Outcome(finding, "unfixable", finding.message))
                continue
            if plan is None:  # no rewrite for it (the WS3xx remedies, for now)
                self.outcomes.append(Outcome(finding, "unfixable", _no_rewrite(finding.code)))
                continue
            refused = self._not_reopenable(finding, plan)
            if refused:
                self.outcomes.append(Outcome(finding, "unfixable", refused))
                continue
            if plan.kind == "module":
                self.module_findings.append(finding)
                continue
            if plan.kind == "unguarded-lazy":
                self.lazy_findings.append(finding)
                continue
            if plan.kind == "cache" and plan.cache is not None:
                self.cache_findings.append(finding)
                continue
            holder = plan.kind == "holder" and not plan.via and self._lazy_holder(plan)
            if holder:  # fixed in the holder's own class, as an instance handle there
                finding = dataclasses.replace(finding, plan=dataclasses.replace(
                    plan, kind="instance"))
            elif plan.kind not in ("instance", "class") and not (
                    plan.kind in ("returned", "holder") and plan.via):
                self.outcomes.append(Outcome(finding, "unfixable", _not_supported(plan.kind)))
                continue
            cls = self.project.classes.get(plan.class_qualname)
            home = self.project.class_file.get(plan.class_qualname)
            if cls is None or home is None:
                self.outcomes.append(Outcome(finding, "unfixable", "cannot find the class"))
                continue
            group = groups.setdefault((home.path, cls.name), Group(
                home.path, cls.name, home.module, [], qualname=cls.qualname, holder=holder))
            group.findings.append(finding)
            if key not in seen:
                seen.add(key)
                group.loader_keys += [k for k in plan.loaders if k not in group.loader_keys]
        return groups

    def _refuse_outside_assignments(self, group: Group) -> None:
        """A holder's handle becomes a property without a setter: refused where code outside
        its class may set it on an object (`store.file = None`, `self.store.file = f`)."""
        for plan in group.plans:
            for attr in plan.attrs:
                setting = re.compile(rf"\b(?!self\b)\w+\s*\.\s*{re.escape(attr)}\s*"
                                     rf"(?:=(?!=)|[-+*/|&]=)")
                for path, source in self.result.sources.items():
                    found = setting.search(source.text) if attr in source.text else None
                    if found is not None:
                        line = source.text.count("\n", 0, found.start()) + 1
                        raise Unfixable(f"{path}:{line} may set .{attr} on a "
                                        f"{group.class_name} from outside it: a per-process "
                                        "property could not take it, fix by hand")

    def _not_reopenable(self, finding: Finding, plan: FixPlan) -> str:
        """Why a handle is not to be opened again per process, or "": one opened for writing
        (a worker opening `h5py.File(p, "w")` or `zipfile.ZipFile(p, "w")` again truncates
        what the parent wrote; one opened to append or update takes the file's lock, or
        writes it as it closes, in every worker), or one whose store lives in the handle
        (`sqlite3.connect(":memory:")`: another process's starts empty). The remedies (WS3xx)
        open per process already and are left to their own rewriter."""
        known = known_refusal(finding, self.registry)  # what `check` says without a rewrite
        if known:
            return known
        htype = self.registry.lookup(plan.handle)
        if htype is None or plan.worker_init is not None \
                or finding.path not in self.result.sources:
            return ""
        try:
            call = self._edit(finding.path).located.call_at(finding.line, finding.col)
        except Unfixable:
            return ""
        if call is None:
            return ""
        memory = in_memory_target(call, htype.in_memory_targets, htype.target_keyword) \
            if htype.in_memory_targets else None
        if memory is not None:
            return (f"{plan.handle}({memory!r}) keeps its data in the handle itself: opened "
                    "again in each process it would start empty; give the workers a file to "
                    "open, by hand")
        opened = self._file_object_argument(finding.path, call)
        if opened:
            return (f"{plan.handle} reads through the file object `{opened}`, opened before it "
                    "and kept: a worker's own would share its descriptor and offset still; "
                    "open the file where the handle is made (`ZipFile(open(path, \"rb\"))`, "
                    "or its path), by hand")
        mode = writing_mode(call, htype.mode_position)
        if mode is None:
            return ""
        return (f"{plan.handle} is opened with mode {mode!r}: opened again in each process it "
                "would truncate or write the file there; open it for reading in the workers, "
                "by hand")

    def _file_object_argument(self, path: str, call: cst.Call) -> str:
        """The argument of `call` (a name, `self.x`) that its file bound to an open file
        object (`raw = open(p, "rb")`, then `ZipFile(raw)`), or ""."""
        bound = _file_objects(self._edit(path).located.module)
        return next((name for name in (dotted(a.value) for a in call.args) if name in bound), "")

    def _lazy_holder(self, plan: FixPlan) -> bool:
        """Whether a holder's handle can be opened per process in the holder's own class: a
        plain class (not a dataset, which a loader may iterate itself) whose method makes
        it."""
        holder = self.project.classes.get(plan.class_qualname)
        return holder is not None and bool(plan.method) and plan.call is None \
            and not self.project.is_torch_dataset(holder)

    # --- process-global handle caches (WS102/WS103 "cache") ---------------------------------

    def _key_caches(self) -> None:
        by_cache: dict[tuple[str, CacheFill], list[Finding]] = {}
        for finding in self.cache_findings:
            assert finding.plan is not None and finding.plan.cache is not None
            by_cache.setdefault((finding.path, finding.plan.cache), []).append(finding)
        for (path, cache), findings in by_cache.items():
            types = [self.registry.lookup(f.plan.handle) for f in findings if f.plan]
            try:
                note = self._key_cache(path, cache, any(t is not None and t.drop_before_reopen
                                                        for t in types))
            except Unfixable as exc:
                self.outcomes += [Outcome(f, "unfixable", str(exc)) for f in findings]
                continue
            self.outcomes += [Outcome(f, "fixed", note) for f in findings]

    def _key_cache(self, path: str, cache: CacheFill, drop_first: bool) -> str:
        """Key `cache`'s container by the process, in the function filling it; `drop_first`:
        a handle opened once per process (lmdb), which a new process drops first."""
        edit = self._edit(path)
        module = edit.located.module
        facts_cls = self.project.classes.get(cache.owner) if cache.owner else None
        original = find_class(module, facts_cls.name) if facts_cls is not None else None
        if cache.owner and original is None:
            raise Unfixable(f"{cache.owner} is not defined at module level: key its cache by "
                            "os.getpid() by hand")
        label = f"{original.name.value}.{cache.container}" if original else cache.container
        facts = self.result.facts.get(path)
        home = facts.module.rsplit(".", 1)[-1] if facts and facts.module else ""
        for other, source in self.result.sources.items():
            read = mentions(source.text, label) if original else (
                mentions(source.text, cache.container) and bool(home)
                and mentions(source.text, home))
            if other != path and read:
                raise Unfixable(f"{other} also reads {label}: keyed by the process it would "
                                "change there too, key it by os.getpid() by hand")
        scope: cst.Module | cst.ClassDef = module
        if original is not None:
            current = edit.replacements.get(original, original)
            assert isinstance(current, cst.ClassDef)
            scope = current
        fix = plan_cache_fix(module, scope, cache.container, cache.filler, drop_first)
        if original is not None:
            edit.replacements[original] = apply_cache_fix(fix)
        else:
            if any(node in edit.replacements for node in fix.replacements):
                raise Unfixable(f"{cache.filler}() is rewritten for another finding too: key "
                                f"{label} by os.getpid() by hand")
            edit.replacements.update(fix.replacements)
        body = statements(original.body.body if original is not None else module.body)
        allowed = self.allowed_lines.setdefault(path, set())
        for node in body:  # the container's line and the filling function
            if cache_lines(node, cache.container, cache.filler):
                start, end = edit.located.lines_of(node)
                allowed.update(range(start, end + 1))
        self._need_module_import(edit, "os")
        dropped = "; a new process drops the parent's first" if drop_first else ""
        return f"{label} keyed by the process: {cache.filler}() fills this process's own" \
            + dropped

    # --- lazy opens without a process check (WS303/WS313) -------------------------------------

    def _guard_lazy_opens(self) -> None:
        by_class: dict[tuple[str, str], list[Finding]] = {}
        for finding in self.lazy_findings:
            assert finding.plan is not None
            by_class.setdefault((finding.path, finding.plan.class_qualname), []).append(finding)

        def depth(key: tuple[str, str]) -> int:
            cls = self.project.classes.get(key[1])
            return len(self.project.mro(cls)) if cls else 0
        # bases before subclasses: a subclass's `__getstate__` builds on its base's
        for (path, qualname), findings in sorted(by_class.items(), key=lambda kv: depth(kv[0])):
            try:
                note = self._guard_class(path, qualname, findings)
            except Unfixable as exc:
                self.outcomes += [Outcome(f, "unfixable", str(exc)) for f in findings]
                continue
            self.outcomes += [Outcome(f, "fixed", note) for f in findings]

    def _guard_class(self, path: str, qualname: str, findings: list[Finding]) -> str:
        facts_cls = self.project.classes.get(qualname)
        edit = self._edit(path)
        cls = find_class(edit.located.module, facts_cls.name) if facts_cls else None
        if facts_cls is None or cls is None:
            raise Unfixable("cannot find the class at module level")
        inherited = next((m for base in self.project.mro(facts_cls)[1:] for m in PICKLING
                          if base.method(m)), "")
        fixed = {(c.path, c.class_name): c.strategy for c in self.fixed_classes}
        homes = [(self.project.class_file.get(base.qualname), base.name)
                 for base in self.project.mro(facts_cls)[1:]]
        base_strategy = next((fixed[(home.path, name)] for home, name in homes
                              if home is not None and (home.path, name) in fixed), "")
        current = edit.replacements.get(cls, cls)
        assert isinstance(current, cst.ClassDef)
        # (the lazy reopen of a handle `__init__` makes: its plan names where it is)
        wanted = [(f.plan, f.plan.call or f.span) for f in findings if f.plan is not None]
        wanted += self._sibling_lazy_opens(path, qualname, wanted)
        typed = self._typed(path, cls)
        base_pickled = next(((name, self.lazy_pickled[(home.path, name)]) for home, name in homes
                             if home is not None and (home.path, name) in self.lazy_pickled),
                            None)
        guarded = guard_lazy_opens(edit.located, cls, current, wanted, self.registry, inherited,
                                   base_strategy, typed.state() if typed else "", base_pickled)
        if guarded.pickled_out is not None:
            self.lazy_pickled[(path, cls.name.value)] = guarded.pickled_out
            self._chain_subclass_getstates(facts_cls)
        edit.replacements[cls] = guarded.cls
        self.allowed_lines.setdefault(path, set()).update(guarded.changed_lines)
        self._need_module_import(edit, "os")
        self.guarded_lazy += [GuardedLazy(path, qualname, method, attr)
                              for method, attr in guarded.guarded]
        return "; ".join(["process check added: reopened when os.getpid() changes",
                          *guarded.notes])

    def _chain_subclass_getstates(self, base: ClassFacts) -> None:
        """The subclasses of `base` (which gains a `__getstate__` leaving out its lazy handles)
        that an instance fix of this run gave a `__getstate__` of their own from `__dict__`:
        it starts from the base's instead, which it would hide."""
        fixed = {(c.path, c.class_name) for c in self.fixed_classes}
        for sub in self.project.classes.values():
            home = self.project.class_file.get(sub.qualname)
            if home is None or (home.path, sub.name) not in fixed or all(
                    b.qualname != base.qualname for b in self.project.mro(sub)[1:]):
                continue
            edit = self._edit(home.path)
            original = find_class(edit.located.module, sub.name)
            current = edit.replacements.get(original) if original is not None else None
            if original is None or not isinstance(current, cst.ClassDef) \
                    or find_method(original, "__getstate__") is not None:
                continue  # a `__getstate__` of its own: the instance fix kept or extended it
            chained = chained_getstate(current)
            if chained is not None:
                edit.replacements[original] = chained

    def _lazy_accessor_plans(self, group: Group) -> Optional[list[Finding]]:
        """The group's findings as lazy opens to guard, when the class cannot be rewritten and
        each is made in a lazy accessor without a process check that `__init__` runs (the
        stylegan2-ada `_get_zipfile()`: `if self._zipfile is None: self._zipfile = ...`): the
        accessor's test gains the process check (`fix/lazyguard.py`), so a process that
        inherited the parent's handle opens its own. None when some finding is not one."""
        if group.wire_only or not group.findings:
            return None
        facts = self.result.facts.get(group.path)
        remedy = next((c for c in facts.remedies.classes if c.qualname == group.qualname),
                      None) if facts is not None else None
        if remedy is None:
            return None
        out: list[Finding] = []
        for finding in group.findings:
            plan = finding.plan
            lazy = next((lz for lz in remedy.lazy if plan is not None
                         and (lz.method, lz.attr) == (plan.method, plan.attr)
                         and lz.site is not None and lz.site.span == finding.span
                         and lz.site.handle == plan.handle and not lz.process_checked), None)
            if plan is not None and plan.kind == "instance" and plan.method == "__init__" \
                    and lazy is None \
                    and (plan.class_qualname, plan.attr) not in self.moved_creations:
                # made in `__init__` and opened again lazily when unset (`if self.env is None:`
                # in `__getitem__`, after a `__getstate__` pickling it as None): that reopen
                # gains the process check
                lazy = next((lz for lz in remedy.lazy if lz.attr == plan.attr
                             and lz.site is not None and lz.site.handle == plan.handle
                             and not lz.process_checked and lz.method != "__init__"), None)
                if lazy is None or lazy.site is None:
                    return None
                out.append(dataclasses.replace(finding, plan=dataclasses.replace(
                    plan, kind="unguarded-lazy", method=lazy.method, call=lazy.site.span)))
                continue
            if plan is None or plan.kind != "instance" or lazy is None \
                    or plan.method == "__init__":
                return None
            out.append(dataclasses.replace(finding, plan=dataclasses.replace(
                plan, kind="unguarded-lazy")))
        return out

    def _sibling_lazy_opens(self, path: str, qualname: str,
                            wanted: list[tuple[FixPlan, Span]]) -> list[tuple[FixPlan, Span]]:
        """The other lazy opens of the attributes `wanted` guards, in other methods of the
        class (`__len__` opened by the parent is the finding; `__getitem__`, opening the same
        attribute under the same test, would keep using what a forked worker inherited)."""
        facts = self.result.facts.get(path)
        remedy = next((c for c in facts.remedies.classes if c.qualname == qualname), None) \
            if facts is not None else None
        if remedy is None:
            return []
        done = {(plan.method, plan.attr) for plan, _ in wanted}
        out: list[tuple[FixPlan, Span]] = []
        for lazy in remedy.lazy:
            plan = next((p for p, _ in wanted if p.attr == lazy.attr), None)
            if plan is None or lazy.site is None or lazy.process_checked \
                    or (lazy.method, lazy.attr) in done or lazy.site.handle != plan.handle:
                continue
            done.add((lazy.method, lazy.attr))
            out.append((dataclasses.replace(plan, method=lazy.method), lazy.site.span))
        return out

    # --- module-level handles ---------------------------------------------------------------

    def _plan_module_fixes(self) -> None:
        by_handle: dict[tuple[str, str, str], list[Finding]] = {}
        for finding in self.module_findings:
            if finding.plan is not None:
                key = (finding.path, finding.plan.attr, finding.plan.handle)
                by_handle.setdefault(key, []).append(finding)
        for (path, name, handle), findings in by_handle.items():
            try:
                plan = self._plan_module_fix(path, name, handle)
            except Unfixable as exc:
                self.outcomes += [Outcome(f, "unfixable", str(exc)) for f in findings]
                continue
            if plan.at_fork:
                note = f"at fork: each forked worker empties {name}()'s cache"
            elif plan.accessor != name:
                note = f"lazy: {name} → {plan.accessor}()"
            else:
                note = f"lazy: {name}() makes one per process"
            self.outcomes += [Outcome(f, "fixed", note) for f in findings]

    def _plan_module_fix(self, path: str, name: str, handle: str) -> ModulePlan:
        edit = self._edit(path)
        plan = plan_module_handle(edit.located.module, name, handle, self.registry)
        varying = varying_call(plan.statements, module_imports(edit.located.module)) \
            if not plan.at_fork else ""
        if varying:
            raise Unfixable(f"{name} is made with {varying}(), whose value {VARYING}: each "
                            "process's accessor would make another, fix by hand")
        facts = self.result.facts.get(path)
        home_module = facts.module if facts else ""
        # (file, local name, the module it takes NAME from): this module, or one passing it on
        # (`from clients import SESSION` in tools.py, then `from tools import SESSION`)
        importers: list[tuple[str, str, str]] = []
        taken: set[str] = set()  # the files in `importers`
        sources = [home_module]
        while not plan.factory:  # (callers of a factory already call it: they stay as they are)
            passed_on = len(sources)
            for other, source in self.result.sources.items():
                if other == path or other in taken or not mentions(source.text, name):
                    continue
                found = self._importer_of(other, source.text, name, sources)
                if found is None:
                    continue
                importers.append(found)
                taken.add(other)
                other_facts = self.result.facts.get(other)
                other_module = other_facts.module if other_facts else ""
                if found[1] == name and other_module and other_module not in sources:
                    if re.search(rf"__all__[^=]*=[^\]]*[\"']{re.escape(name)}[\"']",
                                 source.text):
                        raise Unfixable(f"{other} passes {name} on (its __all__ lists it): "
                                        f"rewrite that by hand")
                    sources.append(other_module)
            if len(sources) == passed_on:
                break
        for extra in plan.absorbed:  # a local of the accessor now: no other module may read it
            for other, source in self.result.sources.items():
                if other == path or not mentions(source.text, extra):
                    continue
                imported = next(
                    (found for spelling in self._module_spellings(home_module)
                     for found in [importer_plan(self._edit(other).located.module, spelling,
                                                 extra, self._import_resolver(other))]
                     if found is not None), None)
                through = bool(home_module) \
                    and mentions(source.text, home_module.rsplit(".", 1)[-1]) \
                    and re.search(rf"\.{re.escape(extra)}\b", source.text) is not None
                if imported is not None or through:
                    raise Unfixable(f"{name} is derived from {extra}, which {other} reads from "
                                    f"this module: turn {extra} into an accessor by hand")
        self.module_fixes.setdefault(path, []).append((name, handle))
        self._allow_name_lines(path, name)
        if plan.factory and not plan.at_fork:  # its cache decorator goes, and the
            # functools import if now unused
            self._allow_name_lines(path, "functools")
            body = statements(edit.located.module.body)
            for index, node in enumerate(body):
                if is_functools_import(node):  # with the blank lines around it
                    start, end = edit.located.lines_of(node)
                    after = len(leading_lines(body[index + 1])) if index + 1 < len(body) else 0
                    self.allowed_lines.setdefault(path, set()).update(
                        range(start - len(leading_lines(node)), end + after + 1))
        self._need_module_import(edit, "os")
        for other, local, source_module in importers:
            self.importer_fixes.setdefault(other, []).append((source_module, name,
                                                              plan.accessor))
            self._allow_name_lines(other, local)
        for planned in plan.statements:
            start, end = edit.located.lines_of(planned)
            if isinstance(planned, cst.FunctionDef) and planned.decorators:
                start = min(start, edit.located.lines_of(planned.decorators[0])[0])
            self.allowed_lines.setdefault(path, set()).update(range(start, end + 1))
        return plan

    def _importer_of(self, other: str, text: str, name: str, sources: list[str]
                     ) -> Optional[tuple[str, str, str]]:
        """(other, its local name, the module it takes `name` from) when `other` imports
        `name` from one of `sources` (`from clients import SESSION`) or reads it through one
        (`clients.SESSION`); else None. Unfixable where it reads it through a module in a way
        the fix cannot rewrite."""
        edit = self._edit(other)
        resolver = self._import_resolver(other)
        for module in sources:
            spellings = self._module_spellings(module)
            found, source_module = None, module
            for spelling in spellings:
                found = importer_plan(edit.located.module, spelling, name, resolver)
                if found is not None:
                    source_module = spelling
                    break
            readers: list[str] = []
            if module and re.search(rf"\.{re.escape(name)}\b", text):
                # `clients.SESSION` → `clients.get_session()`, when every `.SESSION` there is
                # read through a module-level import of this module (by one of its spellings)
                refused = False
                for spelling in spellings:
                    if not mentions(text, spelling.rsplit(".", 1)[-1]):
                        continue
                    try:
                        readers = module_readers(edit.located.module, spelling, name, resolver)
                    except Unfixable as exc:
                        raise Unfixable(f"{other}: {exc}") from None
                    if readers and only_reads(edit.located.module, name, readers):
                        if found is not None and spelling != source_module:
                            raise Unfixable(f"{other} imports {name} from two spellings of "
                                            f"its module: rewrite that by hand")
                        source_module = spelling
                        break
                    # read another way than a module-level import (in a function), or not
                    # at all: the words in a string or a comment
                    refused = refused or bool(readers) or reads_through(
                        edit.located.module, spelling.rsplit(".", 1)[-1], name)
                    readers = []
                if refused and not readers:
                    raise Unfixable(f"{other} reads {name} through its module: rewrite that "
                                    f"by hand")
            if found is not None:
                local = found[1]
                code = set_up(edit.located.module,
                              lambda node: isinstance(node, cst.Name) and node.value == local)
                if code:
                    raise Unfixable(f"{other} imports {name} and sets it up there (`{code}`): "
                                    f"the workers would not get that, rewrite it by hand")
            if found is not None or readers:
                return other, found[1] if found is not None else name, source_module
        return None

    def _module_spellings(self, module: str) -> list[str]:
        """`module` and the other names the project's files may import it by (`common` for
        the root package's repo/common.py, run from the root; `mylib.ds`; `src.data`)."""
        if not module:
            return [module]
        return [module, *sorted(a for a, m in self.project.aliases.items() if m == module)]

    def _import_resolver(self, path: str) -> Callable[[cst.ImportFrom], str]:
        facts = self.result.facts.get(path)
        module = facts.module if facts else ""
        is_package = path.endswith("__init__.py")

        def resolve(node: cst.ImportFrom) -> str:
            name = dotted(node.module) if node.module is not None else ""
            return module_of_import(module, is_package, len(node.relative), name or "")
        return resolve

    def _allow_name_lines(self, path: str, name: str) -> None:
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        lines = self.result.sources[path].text.splitlines()
        allowed = self.allowed_lines.setdefault(path, set())
        allowed.update(i + 1 for i, line in enumerate(lines) if pattern.search(line))

    def _module_pass(self, path: str, data: bytes) -> bytes:
        """Apply the module-level rewrites to an already rendered file."""
        module = with_dominant_newline(parse_raw(data))
        typed = self._typed(path)
        for name, handle in self.module_fixes.get(path, []):
            htype = self.registry.lookup(handle)
            plan = plan_module_handle(module, name, handle, self.registry)
            module = rewrite_module(module, plan, typed,
                                    drop_first=bool(htype and htype.drop_before_reopen))
        if typed is not None and typed.imports:
            names = sorted(typed.imports)
            merged = _typing_merged(module.body, names)
            original = _typing_merged(self._edit(path).located.module.body, names)
            if merged is not None and original is not None:
                module = module.visit(ReplaceNodes({merged[0]: merged[1]}))
                start, end = self._edit(path).located.lines_of(original[0])
                self.allowed_lines.setdefault(path, set()).update(range(start, end + 1))
            else:
                module = module.with_changes(body=_insert_imports(
                    statements(module.body),
                    [statement(f"from typing import {', '.join(names)}\n")]))
        for source_module, name, accessor in self.importer_fixes.get(path, []):
            found = importer_plan(module, source_module, name, self._import_resolver(path))
            if found is not None:
                module = rewrite_importer(module, found[0], name, found[1], accessor)
            readers = module_readers(module, source_module, name, self._import_resolver(path))
            if readers:
                module = rewrite_module_reads(module, readers, accessor)
        return module.bytes

    # --- planning -----------------------------------------------------------------------------

    def _edit(self, path: str) -> FileEdit:
        if path not in self.files:
            source = self.result.sources[path]
            problem = libcst_problem(source.text)  # libcst's native parser is unguarded
            if problem is not None:
                raise Unfixable(f"{os.path.basename(path)}: {problem}")
            module = with_dominant_newline(parse_raw(source.raw))
            self.files[path] = FileEdit(Located(module))
        return self.files[path]

    def _plan_group(self, group: Group, fixed_classes: set[str], done: dict[str, Group]
                    ) -> None:
        edit = self._edit(group.path)
        cls = find_class(edit.located.module, group.class_name)
        if cls is None:
            raise Unfixable("the class is not defined at module level")
        if find_method(cls, OPENER_NAME) is not None and all(
                f.plan is not None and f.plan.method == OPENER_NAME for f in group.findings):
            group.wire_only = True  # fixed by an earlier run: only new loaders to wire
            why_not = self._wiring_problem(group) if self.strategy == "worker-init" else \
                "fixed earlier with worker-init, the loaders are wired by hand"
            if why_not:
                raise Unfixable(f"{OPENER_NAME}() needs the loader wired, which is not possible: "
                                f"{why_not}")
            return
        own = custom_pickling(cls)
        if own:
            raise Unfixable(f"{group.class_name} already defines {own}: merge by hand")
        facts_cls = self.project.classes.get(group.qualname)
        for base in self.project.mro(facts_cls)[1:] if facts_cls else []:
            if base.qualname in fixed_classes:
                fixed_base = done.get(base.qualname)
                if fixed_base is None:
                    raise Unfixable(f"its base class {base.name} also holds handles, which "
                                    "could not be fixed: fix the base class first")
                if group.base_strategy:
                    raise Unfixable(f"more than one base class holds handles ({base.name}): "
                                    "merge by hand")
                group.base_strategy = fixed_base.strategy
                continue
            for method in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__"):
                if base.method(method):
                    raise Unfixable(f"its base class {base.name} defines {method}, which the "
                                    f"fix of {group.class_name} would have to extend: merge "
                                    "by hand")
        plans: dict[str, AttrPlan] = {}
        for finding in group.findings:
            plan = finding.plan
            if plan is None:
                continue
            if plan.attr in plans or any(plan.attr in p.attrs for p in plans.values()):
                continue
            if plan.kind == "class":
                plans[plan.attr] = plan_class_attr(
                    edit.located.module, cls, plan.attr, plan.handle,
                    HandleNames(edit.located.module, self.registry, [plan.handle]))
                continue
            made = self.factories.spellings(plan, edit.located) if plan.via else {}
            names = HandleNames(edit.located.module, self.registry, [plan.handle], made)
            try:
                planned = plan_attr(edit.located, cls, plan, plan.call.line if plan.call
                                    else finding.line, names)
            except Unfixable as refused:
                calls = self._passing_calls(group, plan.holding_attrs)
                if calls and KEPT_PARAMETER in str(refused):
                    raise Unfixable(f"{refused}; {calls}") from None
                if self.strategy != "worker-init" or not _reopenable(str(refused)):
                    raise
                try:  # __init__ stays as written: the worker reopens what the parent opened
                    at = plan.call or finding.span  # a holder or factory: the call making it
                    reopen = plan_reopen(edit.located, cls, plan, at.line, at.col, names)
                    reopen.factories = made
                    group.reopens.append(reopen)
                except Unfixable as also:
                    raise Unfixable(f"{refused}; nor can it be reopened as made: {also}") \
                        from None
                continue
            planned.factories = made
            if any(s is t for p in plans.values() for s in planned.statements
                   for t in p.statements):
                continue  # the same statements as a handle planned already (one opener)
            plans[plan.attr] = planned
        group.plans = list(plans.values())
        for attrs in [p.attrs for p in group.plans] + [r.attrs for r in group.reopens]:
            calls = self._passing_calls(group, attrs)
            if calls:  # the opener would leave in each worker the parent's handle passed in
                raise Unfixable(f"{group.class_name} (or a subclass) keeps a handle its caller "
                                f"passes in, and {calls}: its workers would keep using the "
                                "parent's; pass a path instead (see `workersafe rule WS104`)")
        group.strategy = self.strategy
        if group.holder:
            if group.reopens:
                raise Unfixable(f"{group.class_name} must reopen its handle as made: fix by "
                                "hand (see `workersafe rule WS101`)")
            self._refuse_outside_assignments(group)
            group.strategy = "lazy"
            group.note = (f"{group.class_name}, which the datasets keep, opens it per process "
                          "on first use")
            return
        if group.reopens:
            if group.plans:
                raise Unfixable("some of the class's handles move into an opener, others "
                                "must be reopened as made: fix by hand")
            why_not = self._wiring_problem(group)
            if why_not:
                raise Unfixable(f"the handle must be reopened as made, in a worker init that "
                                f"cannot be wired: {why_not}")
            group.note = "reopened with the arguments the parent used; __init__ kept"
            return
        if any(p.class_statement is not None for p in group.plans):
            group.strategy = "lazy"
            if self.strategy != "lazy":
                group.note = "a class attribute becomes a per-process instance attribute"
            return
        inherited = next((b.name for b in self.project.mro(facts_cls)[1:]
                          if b.method(OPENER_NAME)), "") if facts_cls else ""
        if group.base_strategy == "lazy" and self.strategy != "lazy":
            group.strategy, group.note = "lazy", "as its base class, fixed with lazy"
        elif (group.base_strategy == "worker-init" or inherited) and self.strategy != "lazy":
            group.strategy, group.note = "lazy", (
                f"its base class {inherited or 'also'} opens its handles in {OPENER_NAME}(), "
                "which one of its own would override")
        elif self.strategy == "worker-init":
            why_not = self._wiring_problem(group)
            if why_not:
                group.strategy, group.note = "lazy", f"worker-init not possible: {why_not}"

    def _passed_in(self) -> list[Finding]:
        """Every call passing a dataset an open handle it keeps (WS104, or WS201 under spawn),
        as the rules find them on this project: whatever select, ignore or `# noqa` hid, a
        class keeping one is not fixed."""
        if self._passed is None:
            self._passed = [f for f in evaluate(self.project, self.registry)
                            if len(f.subject) >= 4 and f.subject[0] == "passed"]
        return self._passed

    def _passing_calls(self, group: Group, attrs: Sequence[str]) -> str:
        """The calls passing an open handle the class (a base, or a subclass its opener runs
        in) keeps in one of `attrs`: its WS104 findings, as "train.py:18 passes an open one
        (WS104)"; "" when there is none."""
        project = self.project
        cls = project.classes.get(group.qualname)
        if cls is None:
            return ""
        chain = {m.qualname for m in project.mro(cls)}

        def related(qualname: str) -> bool:
            other = project.classes.get(qualname)
            return qualname in chain or (other is not None and any(
                m.qualname == group.qualname for m in project.mro(other)))

        if not any(kept in attrs for other in project.classes.values()
                   if related(other.qualname) for _, kept in other.param_attrs):
            return ""  # no parameter kept there: nothing can come in open (no rules run)
        where = sorted({(f.path, f.line) for f in self._passed_in()
                        if f.subject[3] in attrs and related(f.subject[2])})
        if not where:
            return ""
        shown = [f"{_shown_path(path, group.path)}:{line}" for path, line in where]
        return f"{', '.join(shown)} pass{'es' if len(shown) == 1 else ''} an open one (WS104)"

    def _wiring_problem(self, group: Group) -> str:
        keys = group.loader_keys
        if not keys:
            unwired = next((f.plan.unwired for f in group.findings
                            if f.plan is not None and f.plan.unwired), "")
            return unwired or "no DataLoader using the dataset was found"
        unfollowed = self._unfollowed_loader(keys)
        if unfollowed:
            return (f"the DataLoader at {unfollowed} gets a dataset the analysis cannot follow "
                    "(a function parameter or a computed value), so it could not be wired")
        for path, line, col in keys:
            if path not in self.result.sources:
                return f"the DataLoader at {path}:{line} is not among the files being fixed"
            edit = self._edit(path)
            call = edit.located.call_at(line, col)
            if call is None:
                return f"cannot find the DataLoader call at {path}:{line}"
            if opaque_star(edit.located, call):
                return (f"the DataLoader at {path}:{line} takes *args/**kwargs that may "
                        "already carry a worker_init_fn")
            framework = self._framework_of(path, line, col)
            if framework:
                return (f"the DataLoaders at {path}:{line} are built by {framework}, which may "
                        "not pass a worker_init_fn on to them")
            if _in_lightning_class(edit.located, call):
                return (f"the DataLoader at {path}:{line} is built in a Lightning module, which "
                        "only adds its own worker seeding when worker_init_fn is unset")
            group.loaders.append((path, call))
        return ""

    def _framework_of(self, path: str, line: int, col: int) -> str:
        """The framework function building the loader at that place, or "" (a DataLoader)."""
        facts = self.result.facts.get(path)
        loaders = self.project.file_loaders(facts) if facts is not None else ()
        return next((loader.framework for loader in loaders
                     if (loader.span.line, loader.span.col) == (line, col)
                     and not passes_keywords(loader.framework)), "")

    def _unfollowed_loader(self, wired: list[tuple[str, int, int]]) -> str:
        """A DataLoader with workers whose dataset the analysis did not resolve: it may get
        this dataset (through a parameter, a container, a call) and would be left unwired."""
        for path, facts in sorted(self.result.facts.items()):
            for loader in self.project.file_loaders(facts):  # the loaders the check linked
                key = (path, loader.span.line, loader.span.col)
                if loader.datasets or loader.num_workers == 0 or key in wired:
                    continue
                return f"{path}:{loader.span.line}"
        return ""

    def _worker_init_name(self, path: str) -> tuple[str, bool]:
        """The name of the file's worker init, and whether it is new: the one written by an
        earlier run is found by its docstring and reused."""
        edit = self._edit(path)
        body = list(edit.located.module.body)
        earlier = next((s for s in body if is_worker_init(s)), None)
        if isinstance(earlier, cst.FunctionDef):
            return earlier.name.value, False
        taken = bound_names(body) | {n.value for n in walk(edit.located.module)
                                     if isinstance(n, cst.Name)}
        name, counter = WORKER_INIT_NAME, 2
        while name in taken:
            name, counter = f"{WORKER_INIT_NAME}_{counter}", counter + 1
        return name, True

    # --- applying -----------------------------------------------------------------------------

    def _apply_group(self, group: Group) -> None:
        edit = self._edit(group.path)
        cls = find_class(edit.located.module, group.class_name)
        assert cls is not None
        if group.wire_only:
            self._wire(group)
            return
        if group.reopens:
            self._apply_reopen(group, cls)
            return
        typed = self._typed(group.path, cls)
        indent = edit.located.module.default_indent
        columns = (edit.located.positions[cls].start.column, len(indent)) \
            if indent.strip(" ") == "" else None  # (tabs: left as written)
        new_cls = rewrite_class(cls, group.plans, group.strategy, group.base_strategy, typed,
                                self._named_only, columns)
        edit.replacements[cls] = new_cls
        self._allow_folded(edit, group, cls, new_cls)
        if typed is not None:
            edit.typing_names |= typed.imports
            if group.strategy == "lazy":  # declarations of the attributes, made private
                attrs = [a for p in group.plans for a in p.attrs]
                for declared in declarations(cls, attrs).values():
                    start, end = edit.located.lines_of(declared)
                    self.allowed_lines.setdefault(group.path, set()).update(
                        range(start, end + 1))
        instance_plans = [p for p in group.plans if p.class_statement is None]
        self.fixed_classes.append(FixedClass(
            group.path, group.class_name, group.strategy,
            tuple(p.opener for p in group.plans),
            tuple(p.method.name.value for p in instance_plans),
            tuple(a for p in group.plans for a in p.attrs) if group.strategy == "lazy" else (),
            tuple(p.handle for p in group.plans),
            tuple(item for p in group.plans for item in p.factories.items())))
        allowed = self.allowed_lines.setdefault(group.path, set())
        for name in ("__getstate__", "__setstate__"):  # extended, or its reopening replaced
            own = find_method(cls, name)
            if own is not None:
                start, end = edit.located.lines_of(own)
                allowed.update(range(start - len(leading_lines(own)), end + 1))
        for plan in group.plans:
            moved_nodes = [plan.class_statement, *plan.class_configures] \
                if plan.class_statement else plan.statements
            for moved in [*moved_nodes, *plan.moved_imports, *plan.hoisted]:
                start, end = edit.located.lines_of(moved)
                allowed.update(range(start - len(leading_lines(moved)), end + 1))
        allowed.update(self._new_first_lines(edit, cls, group.plans))
        if group.strategy == "lazy":
            self._need_module_import(edit, "os")  # its properties' process checks
            return
        self._wire(group)

    def _named_only(self, name: str, uses: int) -> bool:
        """Whether the program spells `name` `uses` times, as a word, in every file discovered
        (read as this rewrite reads them; comments and strings count: then it stays). A file
        that cannot be read may name anything."""
        if self._spellings is None:
            self._spellings = {}
            for file in self.result.files:
                source = self.result.sources.get(file.path)
                if source is None:
                    try:
                        source = read_source(file.path)
                    except (OSError, SourceError):
                        self._spellings[file.path] = None
                        continue
                self._spellings[file.path] = source.text
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        found = 0
        for text in self._spellings.values():
            if text is None:
                return False
            found += len(pattern.findall(text))
            if found > uses:
                return False
        return found == uses

    def _allow_folded(self, edit: FileEdit, group: Group, cls: cst.ClassDef,
                      new_cls: cst.ClassDef) -> None:
        """The lines of an opener method that folded away (`fix/foldopener.py`) and of its
        calls may change."""
        allowed = self.allowed_lines.setdefault(group.path, set())
        old_body = statements(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else []
        for name in {p.method.name.value for p in group.plans if p.class_statement is None}:
            method = find_method(cls, name)
            if method is None or find_method(new_cls, name) is not None:
                continue
            for node in [method, *self_call_statements(old_body, name)]:
                start, end = edit.located.lines_of(node)
                allowed.update(range(start - len(leading_lines(node)), end + 1))

    @staticmethod
    def _new_first_lines(edit: FileEdit, cls: cst.ClassDef, plans: Sequence[AttrPlan]
                         ) -> set[int]:
        """The blank lines above the statement that becomes the first of a method whose first
        statements move out (`rewrite_class` drops them: the body follows the `def` line)."""
        names = {p.method.name.value for p in plans if p.class_statement is None}
        gone = {id(s) for p in plans if p.class_statement is None
                for s in [*p.statements, *p.moved_imports]}
        lines: set[int] = set()
        for name in sorted(names):
            method = find_method(cls, name)
            if method is None:
                continue
            old = statements(method.body.body)
            if not old or id(old[0]) not in gone:
                continue
            first = next((s for s in old if id(s) not in gone), None)
            if first is not None:
                start = edit.located.lines_of(first)[0]
                lines.update(range(start - len(leading_lines(first)), start))
        return lines

    def _apply_reopen(self, group: Group, cls: cst.ClassDef) -> None:
        edit = self._edit(group.path)
        typed = self._typed(group.path, cls)
        edit.replacements[cls] = rewrite_reopen(cls, group.reopens,
                                                typed.state() if typed else "")
        self.fixed_classes.append(FixedClass(
            group.path, group.class_name, "worker-init", (OPENER_NAME,), (), (),
            tuple(p.handle for p in group.reopens),
            tuple(item for p in group.reopens for item in p.factories.items())))
        allowed = self.allowed_lines.setdefault(group.path, set())
        for plan in group.reopens:
            start, end = edit.located.lines_of(plan.creation)
            allowed.update(range(start - len(leading_lines(plan.creation)), end + 1))
        self._wire(group)

    def _wire(self, group: Group) -> None:
        for path, call in group.loaders:  # each script gets one generic worker init
            target = self._edit(path)
            if not target.worker_init_name:
                target.worker_init_name, target.worker_init_new = self._worker_init_name(path)
            reference = cst.Name(target.worker_init_name)
            if _wired_with(call, target.worker_init_name):
                continue  # wired in an earlier run: its worker init reaches this class too
            wiring = target.wiring.setdefault(call, [])
            if not any(r.deep_equals(reference) for r in wiring):
                wiring.append(reference)
            start, end = target.located.lines_of(call)
            self.allowed_lines.setdefault(path, set()).update(range(start, end + 1))

    def _typed(self, path: str, cls: Optional[cst.ClassDef] = None) -> Optional[Typed]:
        """How to annotate what the fix adds to `cls` (else to the module's worker init) in
        `path`, or None when it writes no annotation (the rule: `fix/annotate.py`)."""
        module = self._edit(path).located.module
        annotated = class_annotated(cls) if cls is not None else module_annotated(module)
        if not annotated or not checks_annotations(path):
            return None

        def runtime_types(handle: str) -> tuple[str, ...]:
            htype = self.registry.lookup(handle) if handle else None
            return htype.runtime_types if htype is not None else ()
        return Typed(module, runtime_types)

    def _worker_init(self, path: str, edit: FileEdit, name: str) -> cst.BaseStatement:
        """The file's generic worker init, annotated in an annotated script."""
        typed = self._typed(path)
        previous = ""
        if typed is not None:
            previous = typed.previous() if edit.chains else "None"
            if edit.chains:
                edit.typing_names |= typed.imports
        return worker_init_function(name, _torch_data_imports(edit.located.module),
                                    chained=edit.chains, previous=previous)

    def _typing_import(self, path: str, edit: FileEdit) -> list[cst.BaseStatement]:
        """The typing names the annotations need: joined to the module's own one-line
        `from typing import ...` (in order when its names are), else a new import line (to
        be inserted)."""
        names = sorted(edit.typing_names)
        merged = _typing_merged(edit.located.module.body, names)
        if merged is None or merged[0] in edit.replacements:
            return [statement(f"from typing import {', '.join(names)}\n")]
        edit.replacements[merged[0]] = merged[1]
        start, end = edit.located.lines_of(merged[0])
        self.allowed_lines.setdefault(path, set()).update(range(start, end + 1))
        return []

    def _need_module_import(self, edit: FileEdit, module: str) -> None:
        if module in module_bindings(edit.located.module):
            return
        new = statement(f"import {module}\n")
        if not any(s.deep_equals(new) for s in edit.imports):
            edit.imports.append(new)

    def _finish_wiring(self) -> None:
        for path, edit in self.files.items():
            partial = _partial_spelling(edit.located.module)
            for call, references in edit.wiring.items():
                new_call, needs_partial = _wired_call(call, references, _layout(edit, call),
                                                      partial or "functools.partial")
                edit.replacements[call] = new_call
                edit.chains |= needs_partial
                if needs_partial and partial is None:
                    self._need_module_import(edit, "functools")
            earlier = next((s for s in edit.located.module.body if is_worker_init(s)), None)
            if edit.chains and isinstance(earlier, cst.FunctionDef) \
                    and not chains_previous(earlier):  # written without `previous`: now with
                edit.replacements[earlier] = self._worker_init(
                    path, edit, earlier.name.value
                ).with_changes(leading_lines=earlier.leading_lines)
                start, end = edit.located.lines_of(earlier)
                self.allowed_lines.setdefault(path, set()).update(range(start, end + 1))

    # --- rendering ----------------------------------------------------------------------------

    def _render(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for path, edit in self.files.items():
            if not (edit.replacements or edit.imports
                    or path in self.module_fixes or path in self.importer_fixes):
                continue
            place = _worker_init_place(edit) if edit.worker_init_new else -1
            function = self._worker_init(path, edit, edit.worker_init_name) if place >= 0 \
                else None
            imports = list(edit.imports)
            if edit.typing_names:
                imports += self._typing_import(path, edit)
            module = edit.located.module.visit(ReplaceNodes(dict(edit.replacements)))
            new_body: list[cst.BaseStatement] = []
            for index, node in enumerate(statements(module.body)):
                if index == place and function is not None:  # two blank lines around it;
                    own = list(leading_lines(node))  # comments stay with `node`, the
                    above: list[cst.EmptyLine] = []  # blank lines above it (as they were,
                    while own and own[0].comment is None:  # a space on one kept) go above
                        above.append(own.pop(0))  # the function
                    if index:
                        above += [BLANK] * (2 - len(above))
                    new_body.append(function.with_changes(leading_lines=above))
                    node = with_leading_lines(node, [BLANK, BLANK, *own])
                new_body.append(node)
            new_body = _insert_imports(new_body, imports)
            module = module.with_changes(body=new_body)
            out[path] = module.bytes
            if path in self.module_fixes or path in self.importer_fixes:
                out[path] = self._module_pass(path, out[path])
        return out


def _in_lightning_class(located: Located, call: cst.Call) -> bool:
    line = located.positions[call].start.line
    for node in located.module.body:
        if isinstance(node, cst.ClassDef):
            start, end = located.lines_of(node)
            if start <= line <= end:
                bases = "".join(located.module.code_for_node(a.value) for a in node.bases)
                return any(word in bases for word in LOADER_OWNER_BASE_WORDS)
    return False


# The refusals of the moving planner (fix/initplan.py) that reopening as made can lift: what
# stays in `__init__` is fine there; only the worker needs the handle again.
_REOPENABLE = ("is read later in __init__", "for other work", "changes after it is first set")


def _reopenable(reason: str) -> bool:
    return any(words in reason for words in _REOPENABLE)


def _shown_path(path: str, beside: str) -> str:
    """`path` as seen from the folder of `beside`: its name when they share it."""
    rel = os.path.relpath(path, os.path.dirname(beside) or ".")
    return rel if not rel.startswith("..") else path


def _no_rewrite(code: str) -> str:
    return f"no automatic fix for {code} yet: see `workersafe rule {code}`"


def _not_supported(kind: str) -> str:
    return {
        "module": "a module-level handle: make it a per-process accessor by hand "
                  "(see `workersafe rule WS102`)",
        "class": "a class-attribute handle: create it per instance, lazily (see `workersafe "
                 "rule WS103`)",
        "passed": "the handle is created by the caller (or read from another object holding "
                  "it): pass what is needed to build it (a URL, a path) and create it in the "
                  "dataset (see `workersafe rule WS104`)",
        "holder": "the handle is inside another object the dataset keeps, passed in or not "
                  "built by one dataset: open it per process in that class, lazily (see "
                  "`workersafe rule WS101`)",
        "returned": "the handle is returned by a cached factory (one object per process): "
                    "reset its cache per process (see `workersafe rule WS102`)",
        "cache": "a process-global handle cache filled by a method or another module's "
                 "function: fill it per process, or key it by os.getpid() (see `workersafe "
                 "rule WS102`)",
        "worker-init-only": "a worker_init_fn remedy: fixed by fix/remedyfix.py's rewriter",
    }.get(kind, "no automatic fix for this finding")


def _layout(edit: FileEdit, call: cst.Call) -> tuple[int, int]:
    """(column where the keyword's line continues, length of the line the keyword goes on:
    that of an existing worker_init_fn, else of the last argument), or (-1, -1) when
    unknown."""
    pos = edit.located.positions[call]
    tabs = "\t" in edit.located.module.default_indent
    if not call.args or tabs:
        return -1, -1
    first = edit.located.positions[call.args[0]].start
    line, column = pos.start.line, first.column
    if pos.start.line != pos.end.line:  # the line of an existing worker_init_fn, if any,
        existing = next((a for a in call.args if a.keyword  # else of the last argument
                         and a.keyword.value == "worker_init_fn"), None)
        if existing is not None and first.line != pos.start.line:
            return -1, -1
        line = edit.located.positions[existing or call.args[-1]].end.line
        columns = [edit.located.positions[a].start.column for a in call.args
                   if edit.located.positions[a].start.line == line]
        column = min(columns, default=column)  # continue where that line's arguments start
    # the whole line grows, with what follows the call (`print(list(DataLoader(...)))`)
    return column, len(edit.located.module.code.splitlines()[line - 1].rstrip())


def _typing_merged(body: Sequence[cst.BaseStatement], names: Sequence[str]
                   ) -> Optional[tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]]:
    """The module's one-line `from typing import ...` and the same with `names` joined (in
    order when its own names are), or None when it has none or the line would be too long."""
    for node in body:
        small = node.body[0] if isinstance(node, cst.SimpleStatementLine) \
            and len(node.body) == 1 else None
        if not (isinstance(node, cst.SimpleStatementLine) and isinstance(small, cst.ImportFrom)
                and not small.relative and small.module is not None
                and dotted(small.module) == "typing"
                and not isinstance(small.names, cst.ImportStar) and small.lpar is None):
            continue
        aliases = [_code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in small.names]
        plain = [a for a in aliases if " " not in a]
        joined = sorted([*aliases, *names]) if plain == sorted(plain) else [*aliases, *names]
        line = f"from typing import {', '.join(joined)}"
        if len(line) > max_line():
            return None
        new = cst.parse_statement(line + "\n")
        assert isinstance(new, cst.SimpleStatementLine)
        return node, node.with_changes(body=new.body)
    return None


def _partial_spelling(module: cst.Module) -> Optional[str]:
    """How this module already names functools.partial, if it does."""
    for node in module.body:
        if not isinstance(node, cst.SimpleStatementLine):
            continue
        for small in node.body:
            if isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) \
                    and small.module.value == "functools" and not small.relative \
                    and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "partial":
                        asname = alias.asname.name if alias.asname else None
                        return asname.value if isinstance(asname, cst.Name) else "partial"
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "functools" \
                            and alias.asname is None:
                        return "functools.partial"
    return None


def _torch_data_imports(module: cst.Module) -> list[str]:
    """The names the worker init needs that the module imports from torch.utils.data at its
    top level (`from torch.utils.data import DataLoader, Dataset`) and binds nowhere else."""
    found: list[str] = []
    for node in module.body:
        for small in node.body if isinstance(node, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.ImportFrom) and not small.relative \
                    and small.module is not None and dotted(small.module) == "torch.utils.data" \
                    and not isinstance(small.names, cst.ImportStar):
                found += [a.name.value for a in small.names if isinstance(a.name, cst.Name)
                          and a.name.value in WORKER_INIT_NEEDS and a.asname is None]
    return [name for name in found if found.count(name) == 1 and _bound_once(module, name)]


def _bound_once(module: cst.Module, name: str) -> bool:
    """`name` is bound by one statement of the whole module (its import), in any scope."""
    count = 0
    for node in walk(module):
        if isinstance(node, cst.ImportAlias):
            bound = node.asname.name if node.asname else node.name
            count += isinstance(bound, cst.Name) and bound.value == name
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            count += node.name.value == name
        elif isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For,
                               cst.CompFor, cst.NamedExpr, cst.AsName)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            count += name in target_names(target)
        elif isinstance(node, (cst.Global, cst.Nonlocal, cst.Param)):
            count += any(n.name.value == name for n in getattr(node, "names", ())) \
                or (isinstance(node, cst.Param) and node.name.value == name)
    return count == 1


def _wired_call(call: cst.Call, references: list[cst.BaseExpression],
                layout: tuple[int, int] = (-1, -1), partial: str = "functools.partial"
                ) -> tuple[cst.Call, bool]:
    """`worker_init_fn=` set to our function(s), chaining an existing one."""
    existing = next((a for a in call.args if a.keyword and a.keyword.value == "worker_init_fn"),
                    None)
    previous: Optional[cst.BaseExpression] = None
    if existing is not None and not (isinstance(existing.value, cst.Name)
                                     and existing.value.value == "None"):
        previous = existing.value
    value: Optional[cst.BaseExpression] = previous
    needs_partial = False
    for reference in references:
        if value is None:
            value = reference
        else:
            value = cst.Call(
                func=cst.parse_expression(partial),
                args=[cst.Arg(reference, comma=cst.MaybeSentinel.DEFAULT),
                      cst.Arg(value, keyword=cst.Name("previous"),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                    cst.SimpleWhitespace("")))])
            needs_partial = True
    assert value is not None
    if existing is None:
        if needs_partial and isinstance(value, cst.Call) and layout[0] >= 0:
            value = _wrapped_partial(value, layout[0] + len("worker_init_fn="))
        return call.with_changes(args=_append_keyword(call, "worker_init_fn", value, layout)), \
            needs_partial
    # the existing keyword keeps its place; when its line grows too long, it gets a line of its
    # own (the arguments before and after it on that line move to lines of their own)
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is existing)
    first_col, end_col = layout
    growth = len(_code(value)) - len(_code(existing.value))
    new_arg = existing.with_changes(value=value)
    if first_col >= 0 and end_col + growth > max_line():
        if index > 0 and not _breaks_after(args[index - 1]):
            args[index - 1] = args[index - 1].with_changes(comma=cst.Comma(
                whitespace_after=_aligned_newline(first_col)))
        if index < len(args) - 1 and not _breaks_after(existing):
            new_arg = new_arg.with_changes(comma=cst.Comma(
                whitespace_after=_aligned_newline(first_col)))
        if needs_partial and isinstance(value, cst.Call):
            new_arg = new_arg.with_changes(
                value=_wrapped_partial(value, first_col + len("worker_init_fn=")))
    args[index] = new_arg
    return call.with_changes(args=args), needs_partial


def _breaks_after(arg: cst.Arg) -> bool:
    """The line breaks right after the argument's comma."""
    return isinstance(arg.comma, cst.Comma) \
        and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace)


def _wrapped_partial(value: cst.Call, column: int) -> cst.Call:
    """`partial(f, previous=g)` as the value of `worker_init_fn=`, starting at `column`, when
    the whole would pass the line length: its second argument on a line of its own, aligned
    with the first; in a call nested too deep for that, both arguments on lines of their own,
    indented four columns past the keyword."""
    if column + len(_code(value)) + 1 <= max_line() or len(value.args) != 2:
        return value
    inner = column + len(_code(value.func)) + 1
    widest = max(len(_code(value.args[0].value)), len(_code(value.args[1])) + 1) + 1
    if inner + widest > max_line():
        hang = column - len("worker_init_fn=") + 4
        first = value.args[0].with_changes(
            comma=cst.Comma(whitespace_after=_aligned_newline(hang)))
        return value.with_changes(args=[first, value.args[1]],
                                  whitespace_before_args=_aligned_newline(hang))
    first = value.args[0].with_changes(comma=cst.Comma(whitespace_after=_aligned_newline(inner)))
    return value.with_changes(args=[first, value.args[1]])


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _aligned_newline(column: int) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, continuing at `column` (aligned with the first argument)."""
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[],
                                       indent=False, last_line=cst.SimpleWhitespace(" " * column))


def _append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression,
                    layout: tuple[int, int] = (-1, -1)) -> list[cst.Arg]:
    """Add `keyword=value` last, in the layout the call already uses (one line, one argument
    per line, trailing comma or not); a one-line call that would grow too long continues on
    the next line, aligned with its first argument."""
    args = list(call.args)
    no_space = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    new = cst.Arg(value, keyword=cst.Name(keyword), equal=no_space)
    if not args:
        return [new]
    last = args[-1]
    separator: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace(" ")
    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
        separator = args[-2].comma.whitespace_after
    elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        separator = call.whitespace_before_args
    first_col, end_col = layout
    if first_col >= 0 and end_col + len(keyword) + 3 + len(_code(value)) > max_line():
        separator = _aligned_newline(first_col)
    new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=separator),
                                 whitespace_after_arg=cst.SimpleWhitespace(""))
    return args + [new]


def _worker_init_place(edit: FileEdit) -> int:
    """Where the file's worker init goes: before the first module-level definition or the
    first statement building a wired DataLoader, whichever comes first (after the imports)."""
    wired_lines = [edit.located.positions[call].start.line for call in edit.wiring]
    body = statements(edit.located.module.body)
    for index, node in enumerate(body):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return index
        start, end = edit.located.lines_of(node)
        if any(start <= line <= end for line in wired_lines):
            return index
    return len(body) - 1


def _wired_with(call: cst.Call, name: str) -> bool:
    """The call already passes the worker init `name` (alone or chained)."""
    existing = next((a for a in call.args if a.keyword and a.keyword.value == "worker_init_fn"),
                    None)
    return existing is not None and any(isinstance(n, cst.Name) and n.value == name
                                        for n in walk(existing.value))


def _insert_imports(body: list[cst.BaseStatement], imports: list[cst.BaseStatement]
                    ) -> list[cst.BaseStatement]:
    """New standard-library imports go where isort would put them: in order among the
    module's standard-library imports, else in a group of their own before the others."""
    for new in imports:
        body = _insert_import(body, new)
    return body


def _first_definition(body: list[cst.BaseStatement]) -> int:
    return next((i for i, s in enumerate(body) if isinstance(s, (cst.ClassDef, cst.FunctionDef))),
                len(body))


def _insert_import(body: list[cst.BaseStatement], new: cst.BaseStatement
                   ) -> list[cst.BaseStatement]:
    name = _import_root(new)
    start = 0
    while start < len(body) and ((_is_docstring(body[start]) and start == 0)
                                 or _is_future_import(body[start])):
        start += 1
    if start < len(body) and not _is_import(body[start]):  # code first (a notebook's cell):
        start = next((i for i, s in enumerate(body[:_first_definition(body)])  # the imports
                      if i > start and _is_import(s)), start)  # before the first def or class
    block = start
    while block < len(body) and _is_import(body[block]):
        block += 1
    stdlib = [i for i in range(start, block) if _import_root(body[i]) in _STDLIB]
    new = new.with_changes(leading_lines=[])
    if stdlib:
        after = [i for i in stdlib if _import_root(body[i]) > name]
        at = after[0] if after and after[0] <= stdlib[-1] else stdlib[-1] + 1
        if at == stdlib[0]:  # becomes the first of the group: take over its leading lines
            new = with_leading_lines(new, leading_lines(body[at]))
            body = body[:at] + [with_leading_lines(body[at], [])] + body[at + 1:]
        return body[:at] + [new] + body[at:]
    if start < block:  # only third-party or local imports: a group of its own, first
        first = body[start]
        new = with_leading_lines(new, leading_lines(first))
        rest = with_leading_lines(first, [cst.EmptyLine(indent=False)])
        return body[:start] + [new, rest] + body[start + 1:]
    if start < len(body):
        following = body[start]
        return body[:start] + [with_leading_lines(new, leading_lines(following)),
                               with_leading_lines(following, [
                                   cst.EmptyLine(indent=False)])] + body[start + 1:]
    return body + [new]


def _import_root(node: cst.BaseStatement) -> str:
    if not isinstance(node, cst.SimpleStatementLine) or not node.body:
        return ""
    small = node.body[0]
    if isinstance(small, cst.Import):
        return cst.Module([]).code_for_node(small.names[0].name).split(".")[0]
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        return cst.Module([]).code_for_node(small.module).split(".")[0]
    return ""


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) or frozenset({
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "collections",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "enum", "functools", "glob",
    "gzip", "hashlib", "heapq", "io", "itertools", "json", "logging", "math", "multiprocessing",
    "os", "pathlib", "pickle", "random", "re", "shutil", "socket", "sqlite3", "ssl", "string",
    "struct", "subprocess", "sys", "tarfile", "tempfile", "threading", "time", "typing",
    "unittest", "urllib", "uuid", "warnings", "weakref", "zipfile", "zlib",
})


def _is_future_import(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name)
        and s.module.value == "__future__" for s in node.body)


def _is_import(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in node.body)


def _is_docstring(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(
        node.body[0], cst.Expr) and isinstance(
            node.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _bound_to_file_objects(module: cst.Module) -> frozenset[str]:
    """The names and attributes (`raw`, `self.raw`) a module binds to an open file object
    (`raw = open(p, "rb")`; registry `FILE_OBJECT_OPENERS`, however the module imports them)."""
    imports = module_imports(module)
    return frozenset(dotted(target.target) for node in walk(module)
                     if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                     and in_full(dotted(node.value.func), imports) in FILE_OBJECT_OPENERS
                     for target in node.targets) - {""}


_file_objects = NodeMemo(_bound_to_file_objects)  # one walk per module, not one per finding
