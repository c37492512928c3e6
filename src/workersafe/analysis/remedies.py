"""Facts about the remedies people write for shared handles (the WS3xx rules), after the main
walk, on the same value model (the main walk's import scope, module bindings and handle
lookups). What the main walk can gather for it, it does (per class: the attributes of self
its methods subscript and the members of them they use, which methods may hold a lazy
accessor or test an attribute's presence: walker.SelfUses); the qualified names it computed
under the complete module scope are this pass's too (State.adopt_names). What follows reads
module-level code and module functions' statements in order (its bindings differ from the
walk's: the complete module scope, a function's parameters unbound), and a class's methods'
statements: `__init__`, and the methods the walk saw a lazy accessor's candidate in; each
method's nodes only in a class that spells a process call and has such a method.

- per class: attributes `__init__` sets to None, and lazy accessors (`if self.x is None:
  self.x = <handle>`) with whether a process check guards them;
- per worker_init_fn (module function, or a lambda passed as `worker_init_fn=`): what it sets
  on, and calls on, `get_worker_info().dataset` (however bound), and whether it walks wrappers;
- per DataLoader: whether its dataset is a torch wrapper, and where it is first iterated;
- parent-side uses of datasets: `ds[i]`, `iter(ds)`, `for x in ds`, `len(ds)`."""

from __future__ import annotations

import ast
from typing import Optional, Union

from . import syntax
from ..facts import (
    AttrSite, DatasetRef, DatasetUse, LazyOpen, LoaderWrap, RemedyClass, RemedyFacts, UseKind,
    WorkerInit,
)
from ..records import field, record
from ..torchnames import LOADERS, TORCH_DATA, WRAPPERS
from .loader_args import loader_arguments
from .nodes import REVERSED_FIELDS, breadth_first, child_nodes, reversed_fields, subtree
from .state import ClassState, Env, FunctionState, MethodState, State
from .values import (
    Evaluator, elements, is_none, is_self, or_self, presence, self_attr, unset_tests,
)
from .walker import SelfUses

GET_WORKER_INFO = frozenset(f"{TORCH_DATA}{mod}.get_worker_info"
                            for mod in ("", ".dataloader", "._utils.worker"))
# Calls whose value tells which process runs: a test reading one is a process check.
PROCESS_CALLS = GET_WORKER_INFO | frozenset({
    "os.getpid", "os.getppid", "multiprocessing.current_process",
    "multiprocessing.parent_process", "torch.multiprocessing.current_process",
})
# The last names of PROCESS_CALLS: a file spelling none of them has no process check (a
# qualified name's last part is spelled in the file, as an attribute or an imported name).
PROCESS_WORDS = tuple(sorted({name.rpartition(".")[2] for name in PROCESS_CALLS}))
# The attributes a torch wrapper keeps the wrapped dataset(s) in.
WRAPPER_ATTRS = frozenset({"dataset", "datasets"})
SPLITS = frozenset(name for name in WRAPPERS if name.endswith(".random_split"))
# Calls that look at a value without unwrapping it.
# Parts of a compound statement that hold statements but are not statements themselves
# (`ast.match_case` exists from Python 3.10).
_CLAUSES: tuple[type, ...] = tuple(getattr(ast, name) for name in (
    "withitem", "excepthandler", "match_case") if hasattr(ast, name))
# The statements that hold statements (the others hold none under them).
_COMPOUND = frozenset(getattr(ast, name) for name in (
    "FunctionDef", "AsyncFunctionDef", "ClassDef", "For", "AsyncFor", "While", "If", "With",
    "AsyncWith", "Match", "Try", "TryStar") if hasattr(ast, name))
_LOOKS = frozenset({"isinstance", "hasattr", "getattr", "type", "print", "repr", "id", "len"})
# The statements `statement` reads nothing of: definitions (not followed), and those holding
# no expression (`import`: aliases only).
_SKIPPED = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                      ast.ImportFrom, ast.Pass, ast.Break, ast.Continue, ast.Global,
                      ast.Nonlocal})

# What a name is bound to, as far as these facts care.
INFO, DATASET = "info", "dataset"  # get_worker_info() and its `.dataset`


@record(frozen=True)
class Wrapped:
    wrapper: str  # qualified wrapper name


@record(frozen=True)
class LoaderValue:
    index: int  # into _Remedies.loaders


Kind = Union[str, Wrapped, LoaderValue, None]


@record()
class _Scope:
    name: str
    kinds: dict[str, Kind] = field(default_factory=dict)
    # for a worker_init_fn
    sets: list[AttrSite] = field(default_factory=list)
    calls: list[AttrSite] = field(default_factory=list)
    derived: list[tuple[str, AttrSite]] = field(default_factory=list)
    walks: bool = False
    touched: bool = False  # reached `get_worker_info().dataset`
    # names bound to a `random_split(...)` call: a list of Subsets, whose `[0]`, `len()` and
    # loop are none of the dataset's
    splits: set[str] = field(default_factory=set)


class _Remedies:
    def __init__(self, walker_state: State, ev: Evaluator, classes: list[ClassState],
                 self_uses: dict[int, SelfUses], process_possible: bool, info_possible: bool
                 ) -> None:
        state = State(walker_state.module_name, walker_state.registry)
        state.module_scope = state.scope = walker_state.module_scope
        state.module_env = walker_state.module_env
        state.module_handles = walker_state.module_handles
        self.state = state
        self.ev = Evaluator(state, ev.positions)
        self.ev.share_args(ev)
        # no fact of this pass reads a process identity (the walk's own evaluator does): a
        # binding's `identity` is never asked here, so it is not computed
        self.ev.identity_possible = False
        self.span = ev.positions.span
        self.class_states = {c.qualname: c for c in classes}
        self.classes: list[RemedyClass] = []
        self.inits: list[WorkerInit] = []
        self.loaders: list[LoaderWrap] = []
        self.uses: list[DatasetUse] = []
        self.scope = _Scope("")
        self.loader_index: dict[int, int] = {}  # id() of a DataLoader call → its LoaderWrap
        self.self_uses = self_uses
        self.process_possible = process_possible
        # a module-level name standing for a process call under another name (`from os import
        # getpid as pid`): then a class may make one without spelling it
        self.process_aliased = process_possible and any(
            qualified.rpartition(".")[2] in PROCESS_WORDS
            and local != qualified.rpartition(".")[2]
            for local, qualified in walker_state.module_scope.names.items())
        self.positions = ev.positions
        self.info_possible = info_possible
        # no name is bound during this pass (the scope is the module's, complete): each
        # node's qualified name is computed once, by `state` (shared with the evaluator's
        # lookups), starting from those the main walk computed under the complete scope
        state.adopt_names(walker_state)

    def facts(self) -> RemedyFacts:
        return RemedyFacts(tuple(self.classes), tuple(self.inits), tuple(self.loaders),
                           tuple(self.uses))

    # --- module level -------------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, syntax.ClassDef):
                cls = self.class_states.get(self.state.qual(stmt.name))
                if cls is not None:
                    self.classes.append(_ClassReader(self, cls).read(
                        stmt, self.self_uses.get(id(stmt)) or SelfUses()))
                    for method in stmt.body:  # `worker_init_fn=Frames.worker_init_fn`
                        if isinstance(method, (syntax.FunctionDef, syntax.AsyncFunctionDef)) \
                                and _static(method):
                            self.function(method, f"{cls.qualname}.{method.name}")
            elif isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)):
                self.function(stmt)
            else:
                self.statements([stmt])

    def function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef],
                 qualname: str = "") -> None:
        """A module function, or a class's staticmethod (`qualname` given)."""
        outer = self.scope
        state = self.state
        func = FunctionState(node.name, qualname or state.qual(node.name), False, True,
                             Env(state.module_env))
        state.push(func)
        self.scope = _Scope(node.name)
        try:
            self.statements(node.body)
            scope = self.scope
            if scope.touched:
                self.inits.append(WorkerInit(func.qualname, self.span(node), tuple(scope.sets),
                                             tuple(scope.calls), scope.walks,
                                             derived=tuple(scope.derived)))
        finally:
            state.pop()
            self.scope = outer

    # --- statements (in order: the bindings follow them) --------------------------------

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        kind = type(stmt)  # (exact types: `ast` makes no subclasses of its node types)
        if kind is syntax.Assign:
            self.expression(stmt.value)  # type: ignore[attr-defined]
            for target in stmt.targets:  # type: ignore[attr-defined]
                self.assign(target, stmt.value)  # type: ignore[attr-defined]
            return
        if kind is syntax.Expr:  # (the most frequent others: their nodes in field order)
            self.expression(stmt.value)  # type: ignore[attr-defined]
            return
        if kind is syntax.If:
            self.expression(stmt.test)  # type: ignore[attr-defined]
            self.statements(stmt.body)  # type: ignore[attr-defined]
            self.statements(stmt.orelse)  # type: ignore[attr-defined]
            return
        if kind is syntax.Return:
            if stmt.value is not None:  # type: ignore[attr-defined]
                self.expression(stmt.value)  # type: ignore[attr-defined]
            return
        if kind in _SKIPPED:
            return  # nested definitions: not followed; imports, `pass`...: no expression
        if kind is syntax.Assert:  # (then these: their nodes in field order)
            self.expression(stmt.test)  # type: ignore[attr-defined]
            if stmt.msg is not None:  # type: ignore[attr-defined]
                self.expression(stmt.msg)  # type: ignore[attr-defined]
            return
        if isinstance(stmt, syntax.AnnAssign) and stmt.value is not None:
            self.expression(stmt.value)
            self.assign(stmt.target, stmt.value)
            return
        if isinstance(stmt, (syntax.For, syntax.AsyncFor)):
            self.iterated(stmt.iter, stmt.iter)
            self.expression(stmt.iter)
            if self.dataset(stmt.iter):
                self.scope.walks = True
            elif isinstance(stmt.target, syntax.Name) and self._parts_of_dataset(stmt.iter):
                # `for part in getattr(dataset, "datasets", [dataset])`: the worker's dataset,
                # or each dataset a ConcatDataset joins
                self.scope.kinds[stmt.target.id] = DATASET
                self.scope.walks = True
            self.statements(stmt.body)
            self.statements(stmt.orelse)
            return
        for child in child_nodes(stmt):
            if isinstance(child, syntax.stmt):
                self.statement(child)
            elif isinstance(child, syntax.expr):
                self.expression(child)
            elif isinstance(child, _CLAUSES):
                for sub in child_nodes(child):
                    if isinstance(sub, syntax.stmt):
                        self.statement(sub)
                    elif isinstance(sub, syntax.expr):
                        self.expression(sub)

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        scope = self.scope
        if isinstance(target, syntax.Name):
            scope.kinds[target.id] = self.kind(value)
            if isinstance(value, syntax.Call) and self.state.q_dotted(value.func) in SPLITS:
                scope.splits.add(target.id)
            else:
                scope.splits.discard(target.id)
            handle = self.ev.handle_of(value)
            env = self.state.env
            if handle is not None:
                env.handles[target.id] = handle
            env.assign(target.id, self.ev.value_of(value))
        elif isinstance(target, (syntax.Tuple, syntax.List)):
            kind = self.kind(value)
            wrapped = kind if isinstance(kind, Wrapped) else None
            for element in elements(target):
                if isinstance(element, syntax.Name):
                    scope.kinds[element.id] = wrapped  # `train, val = random_split(ds, ...)`
                    refs = self.ev.refs_of(value)
                    if refs:
                        self.state.env.assign_refs(element.id, refs)
        elif isinstance(target, syntax.Attribute):
            if self.dataset(target.value):
                handle = self.ev.handle_of(value)
                if handle is not None:
                    scope.sets.append(AttrSite(target.attr, self.span(target)))
                else:
                    source = self._derived_from(value)
                    if source:
                        scope.derived.append((source, AttrSite(target.attr, self.span(target))))
            else:
                self.expression(target.value)

    def _derived_from(self, value: ast.expr) -> str:
        """The handle this worker_init_fn set on the dataset before that `value` reads
        (`dataset.data = dataset.h5[key]` → "h5"), or ""."""
        made = {s.attr for s in self.scope.sets}
        if not made:
            return ""
        return next((node.attr for node in subtree(value, into_lambdas=False)
                     if type(node) is syntax.Attribute and node.attr in made
                     and self.dataset(node.value)), "")

    def _parts_of_dataset(self, expr: ast.expr) -> bool:
        """Whether iterating `expr` gives the worker's dataset or the datasets it joins:
        `dataset.datasets`, `getattr(dataset, "datasets", [dataset])`, `[dataset]`."""
        if isinstance(expr, syntax.Attribute):
            return expr.attr == "datasets" and self.dataset(expr.value)
        if isinstance(expr, (syntax.List, syntax.Tuple)):
            return any(self.dataset(element) for element in expr.elts)
        if isinstance(expr, syntax.Call) and isinstance(expr.func, syntax.Name) \
                and expr.func.id == "getattr" and len(expr.args) == 3 \
                and isinstance(expr.args[1], syntax.Constant) \
                and expr.args[1].value == "datasets":
            return self.dataset(expr.args[0]) and (
                self.dataset(expr.args[2]) or self._parts_of_dataset(expr.args[2]))
        return False

    def dataset(self, expr: ast.expr) -> bool:
        """Whether `expr` is `get_worker_info().dataset` (however bound); never in a file
        that does not spell `get_worker_info`."""
        return self.info_possible and self.kind(expr) == DATASET

    def kind(self, expr: ast.expr) -> Kind:
        if isinstance(expr, syntax.Name):
            return self.scope.kinds.get(expr.id)
        if isinstance(expr, syntax.Call):
            name = self.state.q_dotted(expr.func)
            if name in GET_WORKER_INFO:
                return INFO
            if name in WRAPPERS:
                return Wrapped(name)
            index = self.loader_index.get(id(expr))
            return LoaderValue(index) if index is not None else None
        if isinstance(expr, syntax.Attribute):
            if expr.attr == "dataset" and self.kind(expr.value) == INFO:
                self.scope.touched = True
                return DATASET
            if expr.attr == "dataset" and self.kind(expr.value) == DATASET:
                # unwrapping (`while hasattr(ds, "dataset"): ds = ds.dataset`): still the
                # worker's dataset, the one a loader with no wrapper gives
                self.scope.walks = True
                return DATASET
            return None
        if isinstance(expr, syntax.Subscript):
            inner = self.kind(expr.value)
            return inner if isinstance(inner, Wrapped) else None  # random_split(...)[0]
        return None

    # --- expressions --------------------------------------------------------------------

    def expression(self, expr: ast.expr) -> None:
        """Each node of `expr` in source order (nodes.subtree's, not under a lambda), read as
        it is reached (the handlers change no node): one traversal, no list of the nodes."""
        # exact types (`ast` makes no subclasses of its node types): the tests run per node
        stack: list[Optional[ast.AST]] = [expr]
        pop, push, extend = stack.pop, stack.append, stack.extend
        fields_of = REVERSED_FIELDS
        name_type, constant, call, attribute, subscript, lam, comprehension, load = (
            syntax.Name, syntax.Constant, syntax.Call, syntax.Attribute, syntax.Subscript,
            syntax.Lambda, syntax.comprehension, syntax.Load)
        refs = self.state.env.refs  # (no handler changes the frames: the same Env throughout)
        info = self.info_possible
        while stack:
            node = pop()
            if node is None:
                continue  # (a list's None: `Dict.keys` of `**d`)
            kind = type(node)
            if kind is name_type or kind is constant:
                continue  # (the most frequent nodes: nothing to do, nothing under them)
            # (calls, attributes and subscripts, most of the others: their children pushed
            # here, in the order of their fields; a keyword's value for the keyword, which
            # reads nothing)
            if kind is call:
                self.call(node)  # type: ignore[arg-type]
                keywords = node.keywords  # type: ignore[attr-defined]
                if keywords:
                    extend([k.value for k in reversed(keywords)])
                args = node.args  # type: ignore[attr-defined]
                if args:
                    extend(reversed(args))
                push(node.func)  # type: ignore[attr-defined]
                continue
            if kind is attribute:
                value = node.value  # type: ignore[attr-defined]
                if (info and node.attr in WRAPPER_ATTRS  # type: ignore[attr-defined]
                        and self.kind(value) == DATASET):
                    self.scope.walks = True  # `dataset.dataset`, `dataset.datasets`
                elif type(node.ctx) is load:  # type: ignore[attr-defined]
                    # a member use: `ds.get_env` (called or read) and `ds.reader.open`, what
                    # the parent runs of the dataset, or of an object it keeps, outside
                    # `ds[i]`/`len(ds)`; of a name bound to a dataset (not an import)
                    if type(value) is name_type:
                        bound = refs(value.id)
                        if bound is not None:
                            self._member_use(value, node, node.attr, "", bound)  # type: ignore
                        continue  # (a name: nothing to read under it)
                    elif type(value) is attribute and type(value.value) is name_type:
                        bound = refs(value.value.id)
                        if bound is not None:
                            self._member_use(value.value, node, node.attr,  # type: ignore
                                             value.attr, bound)
                push(value)
                continue
            if kind is subscript:
                if type(node.ctx) is load:  # type: ignore[attr-defined]
                    self.use("getitem", node.value, node)  # type: ignore[attr-defined]
                push(node.slice)  # type: ignore[attr-defined]
                push(node.value)  # type: ignore[attr-defined]
                continue
            if kind is comprehension:
                self.iterated(node.iter, node.iter)  # type: ignore[attr-defined]
            elif kind is lam:
                continue  # (read on its own when passed as `worker_init_fn=`)
            fields = fields_of.get(kind)
            if fields is None:
                fields = reversed_fields(kind)
            for field_name in fields:  # (reversed: popped in field order)
                value = getattr(node, field_name, None)
                if type(value) is list:
                    if value:
                        extend(reversed(value))
                elif value is not None:
                    push(value)

    def call(self, node: ast.Call) -> None:
        func = node.func
        name = self.state.q_dotted(func)
        if name in LOADERS:
            self.loader(node)
        info = self.info_possible  # (`dataset` is never true without it)
        if info and isinstance(func, syntax.Attribute) and self.dataset(func.value):
            self.scope.calls.append(AttrSite(func.attr, self.span(func)))
        bare = func.id if isinstance(func, syntax.Name) else ""
        if bare in ("iter", "next", "list", "enumerate", "tuple", "sorted", "sum"):
            for arg in node.args[:1]:
                self.iterated(arg, node)
        elif bare == "len" and node.args:
            self.use("len", node.args[0], node)
        elif self.loader_index and name not in LOADERS:  # (none made yet: none iterated)
            for arg in node.args:
                self.iterated_loader(arg, node)  # `trainer.fit(model, loader)`, `tqdm(loader)`
        if not info:
            return
        if any(  # (kind() first: it notes that a scope reached it)
                self.dataset(a) for a in (*node.args, *(k.value for k in node.keywords))) \
                and bare not in _LOOKS \
                and name not in GET_WORKER_INFO:
            self.scope.walks = True  # passed on: a helper may unwrap it
        if bare in ("isinstance", "hasattr") and node.args and self.dataset(node.args[0]):
            self.scope.walks = True

    def loader(self, node: ast.Call) -> None:
        args = loader_arguments(node, self.ev)
        dataset = args.get("dataset")
        kind = self.kind(dataset) if dataset is not None else None
        wrapper = kind.wrapper if isinstance(kind, Wrapped) else ""
        self.loader_index[id(node)] = len(self.loaders)
        self.loaders.append(LoaderWrap(self.span(node), wrapper, 0, self.scope.name))
        init = args.get("worker_init_fn")
        if isinstance(init, syntax.Lambda):
            self.lambda_init(init, node)
        elif isinstance(init, syntax.Attribute) and isinstance(init.value, syntax.Name) \
                and self.state.env.refs(init.value.id) is not None:
            # `worker_init_fn=rows.open`, a method bound to a dataset: it runs in each worker
            # on that dataset's copy (pickled with it under spawn, inside any wrapper), never
            # in the main process; as a call of the method on the worker's dataset, unwrapped
            site = AttrSite(init.attr, self.span(init))
            self.inits.append(WorkerInit(f"{init.value.id}.{init.attr}", self.span(init), (),
                                         (site,), True, loader=self.span(node)))

    def lambda_init(self, init: ast.Lambda, loader: ast.Call) -> None:
        outer = self.scope
        self.scope = _Scope(outer.name, dict(outer.kinds))
        try:
            self.expression(init.body)
            if self.scope.touched:
                self.inits.append(WorkerInit("", self.span(init), tuple(self.scope.sets),
                                             tuple(self.scope.calls), self.scope.walks,
                                             loader=self.span(loader),
                                             derived=tuple(self.scope.derived)))
        finally:
            self.scope = outer

    def iterated(self, expr: ast.expr, at: ast.AST) -> None:
        if not self.loader_index or not self.iterated_loader(expr, at):
            self.use("iter", expr, at)

    def iterated_loader(self, expr: ast.expr, at: ast.AST) -> bool:
        """Record the first iteration of a loader bound to a name (or built in place)."""
        index: Optional[int] = None
        if isinstance(expr, syntax.Name):
            kind = self.scope.kinds.get(expr.id)
            index = kind.index if isinstance(kind, LoaderValue) else None
        elif isinstance(expr, syntax.Call):
            index = self.loader_index.get(id(expr))
        if index is None:
            return False
        current = self.loaders[index]
        if not current.iterated_line:
            line = getattr(at, "lineno", 0)
            self.loaders[index] = LoaderWrap(current.loader, current.wrapper, line,
                                             current.scope)
        return True

    def _member_use(self, name: ast.Name, at: ast.Attribute, member: str, via: str,
                    bound: list[DatasetRef]) -> None:
        """`use("member", name, at, member, via)` of a name the Env binds to `bound` (what
        `use` would look up again: `refs_of` of a bound name is its binding)."""
        if not bound or self.state.current_class() is not None:
            return
        scope = self.scope
        if isinstance(scope.kinds.get(name.id), LoaderValue) or name.id in scope.splits:
            return
        self.uses.append(DatasetUse("member", tuple(bound), self.span(at), scope.name, member,
                                    via))

    def use(self, kind: UseKind, expr: ast.expr, at: ast.AST, member: str = "",
            via: str = "") -> None:
        if self.state.current_class() is not None or isinstance(expr, syntax.Call):
            return
        if isinstance(expr, syntax.Name) and (
                isinstance(self.scope.kinds.get(expr.id), LoaderValue)
                or expr.id in self.scope.splits):
            return
        refs = self.ev.refs_of(expr)
        if refs and isinstance(at, (syntax.expr, syntax.stmt)):
            self.uses.append(DatasetUse(kind, tuple(refs), self.span(at), self.scope.name,
                                        member, via))


class _ClassReader:
    """The remedy facts of one class: `None` in `__init__`, lazy accessors, wrapped attrs."""

    def __init__(self, owner: _Remedies, cls: ClassState) -> None:
        self.owner = owner
        self.cls = cls
        self.init_none: list[AttrSite] = []
        self.init_set: set[str] = set()
        self.lazy: list[LazyOpen] = []
        self.param_attrs: set[str] = set()
        self.pid_attrs: set[str] = set()  # `self._pid = os.getpid()` anywhere in the class
        self.pid_names: set[tuple[str, str]] = set()  # (method, local) likewise
        self.param_kept: list[tuple[str, AttrSite]] = []  # `self.db = db` in `__init__`
        self.none_defaults: tuple[str, ...] = ()

    def read(self, node: ast.ClassDef, uses: SelfUses) -> RemedyClass:
        """`uses`: what the main walk saw the methods do with attributes of self."""
        methods = [m for m in node.body
                   if isinstance(m, (syntax.FunctionDef, syntax.AsyncFunctionDef))]
        # A class spelling no process call has no process check: no walk of each method for one;
        # nor one with no lazy accessor (what a process check is asked for)
        nodes = {id(m): subtree(m) for m in methods} \
            if any(m.name in uses.lazy for m in methods) and self._may_check_process(node) \
            else {}
        self._process_values(methods, nodes)
        for method in methods:
            self.method(method, nodes.get(id(method), []), uses)
        return RemedyClass(self.cls.qualname, tuple(self.init_none),
                           tuple(sorted(self.init_set - {a.attr for a in self.init_none})),
                           tuple(self.lazy), tuple(sorted(self.param_attrs & uses.indexed)),
                           tuple(sorted(uses.members)), tuple(self.param_kept),
                           self.none_defaults,
                           # only attributes left None can be read None-safely
                           # (a method with no test of an attribute's presence has none)
                           tuple(sorted((m.name, a) for m in methods if m.name in uses.presence
                                        for a in _none_safe(m)))
                           if self.init_none else ())

    def _may_check_process(self, node: ast.ClassDef) -> bool:
        """Whether the class may call one of PROCESS_CALLS: its lines spell one (the last
        part of a qualified name is spelled where it is used, unless imported under another
        name)."""
        owner = self.owner
        if not owner.process_possible or owner.process_aliased:
            return owner.process_possible
        lines = owner.positions.rows[node.lineno - 1:node.end_lineno]
        return any(word in line for line in lines for word in PROCESS_WORDS)

    def method(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], nodes: list[ast.AST],
               uses: SelfUses) -> None:
        lazy = node.name in uses.lazy  # (the main walk saw a candidate in it)
        if node.name != "__init__" and not lazy:
            return  # (outside `__init__`, `block` records lazy accessors only)
        state = self.owner.state
        func = FunctionState(node.name, f"{self.cls.qualname}.{node.name}", False, False,
                             Env(state.module_env), MethodState(node.name))
        state.push(self.cls, func)
        try:
            params = {a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                      *node.args.kwonlyargs)}
            if node.name == "__init__":
                self.none_defaults = _none_defaults(node.args)
            checked = lazy and any(self._process_value(t.test, node.name) for t in nodes
                                   if isinstance(t, (syntax.If, syntax.IfExp, syntax.While,
                                                     syntax.Assert)))
            self.block(node.name, node.body, params, checked, lazy)
        finally:
            state.pop(2)

    def block(self, method: str, body: list[ast.stmt], params: set[str], checked: bool,
              lazy: bool) -> None:
        """`lazy`: whether the method may hold a lazy accessor (SelfUses.lazy); if not, what
        only `_lazy` reads (local handles, unset tests) is not computed."""
        ev = self.owner.ev
        for stmt in body:
            if isinstance(stmt, syntax.Assign):
                # (asked for a name's binding only: most targets are attributes of self)
                handle = ev.handle_of(stmt.value) \
                    if lazy and any(type(t) is syntax.Name for t in stmt.targets) else None
                for target in stmt.targets:
                    if isinstance(target, syntax.Name) and handle is not None:
                        self.owner.state.env.handles[target.id] = handle
                    attr = self_attr(target)
                    if attr and method == "__init__":
                        if is_none(stmt.value):
                            self.init_none.append(AttrSite(attr, self.owner.span(target)))
                        else:
                            self.init_set.add(attr)
                        if isinstance(stmt.value, syntax.Name) and stmt.value.id in params:
                            self.param_attrs.add(attr)
                            self.param_kept.append(
                                (stmt.value.id, AttrSite(attr, self.owner.span(target))))
            elif isinstance(stmt, syntax.AnnAssign) and stmt.value is not None:
                attr = self_attr(stmt.target)
                if attr and method == "__init__":
                    if is_none(stmt.value):
                        self.init_none.append(AttrSite(attr, self.owner.span(stmt.target)))
                    else:
                        self.init_set.add(attr)
            elif lazy and isinstance(stmt, syntax.If):
                for attr in unset_tests(stmt.test):
                    self._lazy(method, attr, stmt.body, checked)
            if lazy and isinstance(stmt, syntax.Assign) and method != "__init__":
                for target in stmt.targets:
                    attr = self_attr(target)
                    if attr and or_self(stmt.value, attr):
                        self._lazy(method, attr, [stmt], checked)
            if type(stmt) not in _COMPOUND:
                continue  # (no statement under it)
            inner: list[ast.stmt] = []  # the statements under it, in order: one block
            for child in child_nodes(stmt):
                if isinstance(child, syntax.stmt):
                    inner.append(child)
                elif isinstance(child, _CLAUSES):
                    inner.extend(s for s in child_nodes(child) if isinstance(s, syntax.stmt))
            self.block(method, inner, params, checked, lazy)

    def _lazy(self, method: str, attr: str, body: list[ast.stmt], checked: bool) -> None:
        ev = self.owner.ev
        # (ast.walk's order: the first assignment or call found is the one recorded)
        for stmt in breadth_first(syntax.Module(body=body, type_ignores=[])):
            if isinstance(stmt, syntax.Assign) and any(self_attr(t) == attr for t in stmt.targets):
                handle = ev.handle_of(stmt.value)
                if handle is not None:
                    self.lazy.append(LazyOpen(attr, method, ev.site(handle), "", checked))
                    return
            if isinstance(stmt, syntax.Call) and isinstance(stmt.func, syntax.Attribute) \
                    and is_self(stmt.func.value):
                self.lazy.append(LazyOpen(attr, method, None, stmt.func.attr, checked))
                return

    def _process_values(self, methods: list[Union[ast.FunctionDef, ast.AsyncFunctionDef]],
                        nodes: dict[int, list[ast.AST]]) -> None:
        """The attributes (class-wide) and locals (per method) holding a value derived from
        a process call: `self._pid = os.getpid()`, `info = get_worker_info(); w = info.id`."""
        assigns = [(m.name, a) for m in methods for a in nodes.get(id(m), ())
                   if isinstance(a, syntax.Assign)]
        changed = True
        while changed:
            changed = False
            for method, assign in assigns:
                if not self._process_value(assign.value, method):
                    continue
                for target in assign.targets:
                    for element in (elements(target) or [target]):
                        attr = self_attr(element)
                        if attr and attr not in self.pid_attrs:
                            self.pid_attrs.add(attr)
                            changed = True
                        if isinstance(element, syntax.Name) \
                                and (method, element.id) not in self.pid_names:
                            self.pid_names.add((method, element.id))
                            changed = True

    def _process_value(self, expr: ast.expr, method: str) -> bool:
        for node in subtree(expr):
            if isinstance(node, syntax.Call) \
                    and self.owner.state.q_dotted(node.func) in PROCESS_CALLS:
                return True
            if isinstance(node, syntax.Name) and (method, node.id) in self.pid_names:
                return True
            if isinstance(node, syntax.Attribute) and self_attr(node) in self.pid_attrs:
                return True
        return False


def _static(node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    return any(isinstance(d, syntax.Name) and d.id == "staticmethod" for d in node.decorator_list)


# The node types other than attributes that `_none_safe` reads.
_TESTS = frozenset({ast.Assert, ast.If, ast.IfExp, ast.BoolOp})


def _none_safe(node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> set[str]:
    """The attributes every read of which in the method handles None: the read is the test of
    a fallback (`self.s if self.s is not None else x`, `self.s or x`, `if self.s is None:`
    whose branch does not raise) or sits where the test says the value is there."""
    reads: list[tuple[str, int]] = []  # (attribute, id() of the read)
    safe: set[int] = set()
    raising: set[int] = set()  # tests whose None branch raises (or asserts): not handled
    # nodes.subtree rather than ast.walk: another order, the same sets, a third of the cost
    tests = _TESTS
    for sub in subtree(node):
        if isinstance(sub, syntax.Attribute):
            if isinstance(sub.ctx, syntax.Load):
                read = self_attr(sub)
                if read:
                    reads.append((read, id(sub)))
        elif type(sub) not in tests:
            continue  # (most nodes: one test)
        elif isinstance(sub, syntax.Assert):
            raising.update(id(n) for n in subtree(sub.test))
        elif isinstance(sub, (syntax.If, syntax.IfExp)):
            attr, present = presence(sub.test)
            if attr is None:
                continue
            there, missing = (sub.body, sub.orelse) if present else (sub.orelse, sub.body)
            block = there if isinstance(there, list) else [there]
            safe.update(id(n) for b in block for n in subtree(b)
                        if isinstance(n, syntax.Attribute) and self_attr(n) == attr)
            branch = missing if isinstance(missing, list) else [missing]
            if any(isinstance(n, syntax.Raise) for b in branch for n in subtree(b)):
                raising.update(id(n) for n in subtree(sub.test))
            else:
                safe.update(id(n) for n in subtree(sub.test) if isinstance(n, syntax.Attribute))
        elif isinstance(sub, syntax.BoolOp) and isinstance(sub.op, syntax.Or) \
                and self_attr(sub.values[0]):
            safe.add(id(sub.values[0]))
    read_attrs = {a for a, _ in reads}
    return read_attrs - {a for a, key in reads if key not in safe or key in raising}


def remedy_facts(tree: ast.Module, state: State, ev: Evaluator, classes: list[ClassState],
                 self_uses: dict[int, SelfUses], process_possible: bool = True,
                 info_possible: bool = True) -> RemedyFacts:
    """The remedy facts of a module the main walk (`state`, `ev`, `classes`) has walked;
    `self_uses`: what it gathered per class (walker.FactWalker.self_uses); `process_possible`:
    whether the text spells a process call at all (PROCESS_WORDS); `info_possible`: whether
    it spells `get_worker_info` (else nothing in it reaches a worker's dataset)."""
    reader = _Remedies(state, ev, classes, self_uses, process_possible, info_possible)
    reader.module(tree)
    return reader.facts()


__all__ = ["remedy_facts"]


def _none_defaults(args: ast.arguments) -> tuple[str, ...]:
    """The parameters whose default is the constant None."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return tuple(a.arg for a, d in pairs if is_none(d))
