"""What the walk knows at a point of the file: the frames it is inside (module, class,
function), the import scope, and one `Env` per function (and the module) of what names are
bound to."""

from __future__ import annotations

import ast
from typing import NamedTuple, Optional, Union

from . import syntax
from ..facts import DatasetRef, HeldCall, Span
from ..records import field, record
from ..registry import Registry
from .names import Scope, dotted, imported_by_call, qualify


@record()
class Handle:
    """A handle value: its creating call, and whether it is derived from it (or closed)."""

    call: ast.Call
    handle: str  # the registry key of the constructor
    derived: bool = False
    closed: bool = False

    def as_derived(self) -> Handle:
        return Handle(self.call, self.handle, True, self.closed)

    def as_closed(self) -> Handle:
        return Handle(self.call, self.handle, self.derived, True)


class Value:
    """What the right-hand side of `name = <expr>` is, as far as the facts care. (A plain class,
    not a record: compiled by mypyc, a native one; one is made per assignment.)"""

    def __init__(self, refs: list[DatasetRef], int_value: Optional[int] = None,
                 kwargs: Optional[dict[str, ast.expr]] = None, context: str = "",
                 identity: bool = False) -> None:
        self.refs = refs  # the dataset(s) it may be
        self.int_value = int_value  # a constant int (for `num_workers=n`)
        self.kwargs = kwargs  # a dict literal (for `**loader_kwargs`)
        # a multiprocessing context's start method (for `get_context(...)`)
        self.context = context
        self.identity = identity  # a process or worker identity (`os.getpid()`, `info.id`)


class Binding:
    """What one name is bound to in one `Env` (merged over its assignments). (A plain class, as
    `Value`: one per name bound.)"""

    def __init__(self) -> None:
        self.refs: Optional[list[DatasetRef]] = None  # the last assignment that was a dataset
        self.assigned = False  # assigned through `name = <expr>` (int_value is meaningful)
        self.int_value: Optional[int] = None  # None unless assigned once, to a constant int
        self.kwargs: Optional[dict[str, ast.expr]] = None
        self.context = ""
        self.identity = False


class Env:
    """Names bound in one function (or at module level); lookups fall back to the module."""

    def __init__(self, parent: Optional[Env] = None) -> None:
        self.parent = parent
        self.bindings: dict[str, Binding] = {}
        self.handles: dict[str, Handle] = {}  # local handles: never looked up in the parent
        self._ref_names: dict[str, None] = {}  # names bound to datasets, in order of first bind

    def assign(self, name: str, value: Value) -> None:
        binding = self.bindings.get(name)
        if binding is None:
            binding = self.bindings[name] = Binding()
        # assigned twice: not a constant
        binding.int_value = None if binding.assigned else value.int_value
        binding.assigned = True
        refs = value.refs
        if refs:  # (`assign_refs`, inline)
            if binding.refs is None:
                binding.refs = list(refs)
            else:
                _add_new(binding.refs, refs)
            self._ref_names.setdefault(name)
        if value.kwargs is not None:
            binding.kwargs = value.kwargs
        if value.context:
            binding.context = value.context
        binding.identity |= value.identity

    def assign_refs(self, name: str, refs: list[DatasetRef]) -> None:
        """Add what the name may be: the union over its assignments (both branches of an
        `if`, each `append`), not the last one in source order."""
        binding = self.bindings.get(name)
        if binding is None:
            binding = self.bindings[name] = Binding()
        if binding.refs is None:
            binding.refs = list(refs)
        else:
            _add_new(binding.refs, refs)
        self._ref_names.setdefault(name)

    def all_refs(self) -> dict[str, list[DatasetRef]]:
        """Every name bound here to dataset(s), in the order they were first bound so."""
        return {name: self.bindings[name].refs or [] for name in self._ref_names}

    def _chain(self, name: str) -> list[Binding]:
        found = []
        env: Optional[Env] = self
        while env is not None:
            binding = env.bindings.get(name)
            if binding is not None:
                found.append(binding)
            env = env.parent
        return found

    def refs(self, name: str) -> Optional[list[DatasetRef]]:
        env: Optional[Env] = self  # (asked at most names: _chain without the list)
        while env is not None:
            binding = env.bindings.get(name)
            if binding is not None and binding.refs is not None:
                return binding.refs
            env = env.parent
        return None

    def int_value(self, name: str) -> tuple[bool, Optional[int]]:
        """(name assigned at all, its constant value or None)."""
        env: Optional[Env] = self  # (asked of most names passed: _chain without the list)
        while env is not None:
            binding = env.bindings.get(name)
            if binding is not None and binding.assigned:
                return True, binding.int_value
            env = env.parent
        return False, None

    def kwargs(self, name: str) -> Optional[dict[str, ast.expr]]:
        return next((b.kwargs for b in self._chain(name) if b.kwargs is not None), None)

    def context(self, name: str) -> str:
        return next((b.context for b in self._chain(name) if b.context), "")

    def identity(self, name: str) -> bool:
        env: Optional[Env] = self
        while env is not None:
            binding = env.bindings.get(name)
            if binding is not None and binding.identity:
                return True
            env = env.parent
        return False


def _add_new(found: list[DatasetRef], refs: list[DatasetRef]) -> None:
    """Append each of `refs` not in `found` yet, those appended included (`found.extend` of a
    generator testing `found` did so in CPython, not compiled with mypyc, which makes the list
    first)."""
    for ref in refs:
        if ref not in found:
            found.append(ref)


class MethodState:
    """What the walk found in one method. (Plain classes, this and `FunctionState`, not
    records: compiled by mypyc, native ones, whose attributes the walk reads at most nodes.)"""

    def __init__(self, name: str) -> None:
        self.name = name
        self.attrs_read: set[str] = set()
        self.attrs_used: set[str] = set()
        self.config_reads: set[int] = set()  # id() of `self.x` in `self.x.headers`
        self.self_calls: set[str] = set()
        self.super_calls: set[str] = set()  # `super().m(...)`, but `__init__`
        self.globals_read: set[str] = set()
        self.guarded_attrs: set[str] = set()
        self.guarded_calls: set[str] = set()
        self.calls_super_init = False
        self.effects: list[str] = []
        self.returns_handle: Optional[Handle] = None
        self.returns_call = ""
        self.returns: list[DatasetRef] = []  # `return cls(...)`


@record()
class ClassState:
    name: str
    qualname: str
    span: Span
    bases: tuple[str, ...]
    methods: list[MethodState] = field(default_factory=list)
    held: dict[tuple[str, str, int], Handle] = field(default_factory=dict)  # (method, attr, call)
    closed: set[tuple[str, str]] = field(default_factory=set)  # (method, attr)
    # the `held` keys a close in their method follows (`self.db.close()` before the method
    # opens `self.db` again closes the one before: not this one)
    closed_held: set[tuple[str, str, int]] = field(default_factory=set)
    class_held: dict[tuple[str, int], Handle] = field(default_factory=dict)
    attr_refs: dict[str, list[DatasetRef]] = field(default_factory=dict)
    init_params: tuple[str, ...] = ()
    param_attrs: list[tuple[str, str]] = field(default_factory=list)
    param_members: list[tuple[str, str, str]] = field(default_factory=list)
    registered: list[tuple[str, str]] = field(default_factory=list)  # ClassFacts.registered
    held_calls: list[HeldCall] = field(default_factory=list)
    derived_attrs: list[tuple[str, str, str]] = field(default_factory=list)
    param_types: list[tuple[str, str]] = field(default_factory=list)
    init_int_defaults: list[tuple[str, int]] = field(default_factory=list)
    identity_attrs: set[str] = field(default_factory=set)  # `self._pid = os.getpid()`

    def held_in(self, method: str, attr: str) -> Optional[Handle]:
        return next((h for (m, a, _), h in self.held.items() if m == method and a == attr), None)


class FunctionState:
    """What the walk found in one function or method (a plain class: see `MethodState`)."""

    def __init__(self, name: str, qualname: str, cached: bool, is_module_level: bool, env: Env,
                 method: Optional[MethodState] = None) -> None:
        self.name = name
        self.qualname = qualname
        self.cached = cached
        self.is_module_level = is_module_level
        self.env = env
        self.method = method  # set when this function is a method of a class
        self.returns: list[DatasetRef] = []
        self.returned_handle: Optional[Handle] = None
        self.returns_call = ""
        self.params: tuple[str, ...] = ()
        self.node: Optional[ast.AST] = None  # a module-level function's definition
        self.method_calls: set[str] = set()
        self.attr_handle_assigns: set[str] = set()
        self.globals_declared: set[str] = set()
        self.calls: set[str] = set()  # project functions called (or passed on)
        self.chosen: list[tuple[int, str, str]] = []  # FunctionFacts.chosen
        # a local bound to a call that may return a handle (`env = self.connect_db(p)`), for
        # the attribute or container it is kept in next (`self.envs.append(env)`)
        self.call_locals: dict[str, ast.Call] = {}


Frame = Union[ClassState, FunctionState, None]


class RegistrySets(NamedTuple):
    """What every walk asks of the registry as a whole (computed once per registry object: a
    registry is frozen, and its rows are not changed once it is made)."""

    registry: Registry
    known: frozenset[str]  # the constructors' qualified names
    closers: frozenset[str]  # Registry.closers
    config_attrs: frozenset[str]  # Registry.config_attrs
    module_roots: frozenset[str]  # Registry.module_roots


_last_sets: list[RegistrySets] = []  # the registry last asked for (one run uses one or two)


def registry_sets(registry: Registry) -> RegistrySets:
    for sets in _last_sets:
        if sets.registry is registry:
            return sets
    sets = RegistrySets(registry, frozenset(registry.types), registry.closers(),
                        registry.config_attrs(), registry.module_roots())
    _last_sets[:] = [sets]
    return sets


_UNKNOWN = object()  # None: a nested class, not analysed


class State:
    """The frames and scope the walk is in; the module's own Env and handles."""

    def __init__(self, module_name: str, registry: Registry) -> None:
        self.module_name = module_name
        self.registry = registry
        sets = registry_sets(registry)
        self.known = sets.known
        self.sets = sets
        self.module_scope = self._scope = Scope()
        # id() of a node → its qualified name under the current scope (`q`): hooks and
        # evaluators ask for the same callee several times. Cleared whenever what a name means
        # may change: a new scope (`scope = ...`) or a binding (`bind`).
        self._qualified: dict[int, Optional[str]] = {}
        # dotted name → its qualified name, under the same condition (many nodes, few names)
        self._by_name: dict[str, str] = {}
        # per function scope entered (innermost last): the names qualified outside it, put
        # aside when a name is first bound in it and taken back when it is left (they are
        # what they were: nothing inside binds outside); None until then
        self._outside: list[Optional[tuple[dict[int, Optional[str]], dict[str, str]]]] = []
        self._module_env = Env()
        # the Env of the innermost function, or the module's (kept by push, pop and setting
        # `module_env`; read it, do not set it)
        self.env = self._module_env
        # innermost last; a tuple, replaced by push and pop only (which keep what follows)
        self.frames: tuple[Frame, ...] = ()
        # what the frames say, kept by push and pop (asked for at most nodes of the walk; read
        # them, do not set them)
        self.function: Optional[FunctionState] = None  # the innermost function
        self.outer: Optional[FunctionState] = None  # the outermost function
        self.cls: Optional[ClassState] = None  # current_class()
        self.method: Optional[MethodState] = None  # current_method()
        # what they said before each frame was pushed (one entry per frame)
        self._saved: list[tuple[Optional[FunctionState], Optional[FunctionState],
                                Optional[ClassState], Optional[MethodState]]] = []
        # module-level name → (handle, whether it is returned by a cached function)
        self.module_handles: dict[str, tuple[Handle, bool]] = {}
        # module-level container → (handle, the function storing it: `_CACHE[k] = open(k)`)
        self.module_caches: dict[str, tuple[Handle, str]] = {}
        self.pid_guard_depth = 0

    def qual(self, name: str) -> str:
        return f"{self.module_name}.{name}" if self.module_name else name

    @property
    def scope(self) -> Scope:
        """The innermost import scope (function-local imports shadow module ones)."""
        return self._scope

    @scope.setter
    def scope(self, scope: Scope) -> None:
        self._scope = scope
        self._forget(True)

    def enter_scope(self) -> Scope:
        """A function's own import scope, inside the current one. Until something is bound
        in it, every name qualifies as outside it: the cached names stay."""
        self._scope = Scope(self._scope)
        self._outside.append(None)
        return self._scope

    def leave_scope(self) -> None:
        """Back to the scope `enter_scope` was called in (what was qualified through names
        bound inside is forgotten, what was qualified outside before is back)."""
        inner = self._scope
        self._scope = inner.parent or self.module_scope
        outside = self._outside.pop() if self._outside else None
        if outside is not None:
            self._qualified, self._by_name = outside
        elif inner.names or inner.star_modules:  # (bound behind `bind` and `rebound`)
            self._qualified.clear()
            self._by_name.clear()

    def bind(self, local: str, qualified: str, scope: Optional[Scope] = None) -> None:
        """Bind a name in `scope` (default: the current one); names qualified so far may now
        mean something else."""
        (scope or self._scope).bind(local, qualified)
        self._forget(scope is not None and scope is not self._scope)

    def rebound(self) -> None:
        """The current scope changed behind `bind` (an import statement bound its names)."""
        self._forget(False)

    def _forget(self, outside_too: bool) -> None:
        """Names may now qualify otherwise in the current scope (`outside_too`: in the scopes
        around it as well)."""
        outside = self._outside
        if outside and not outside_too and outside[-1] is None:
            # the first binding in a function: what was qualified so far is kept aside for
            # when it is left (valid outside it, and inside it until now)
            outside[-1] = (self._qualified, self._by_name)
            self._qualified, self._by_name = {}, {}
            return
        self._qualified.clear()
        self._by_name.clear()
        if outside_too:  # (none kept aside is valid any more)
            outside[:] = [({}, {}) if kept is not None else None for kept in outside]

    def q(self, node: ast.AST) -> Optional[str]:
        """The qualified name of a dotted expression, through this file's imports (computed
        once per node while no binding changes)."""
        if type(node) is syntax.Name:  # (by its name: as cheap as by the node)
            found = self._by_name.get(node.id)  # (`qualify`, inline)
            return found if found is not None else self.qualify(node.id)
        key = id(node)
        cached = self._qualified.get(key, _UNKNOWN)
        if cached is not _UNKNOWN:
            return cached  # type: ignore[return-value]
        found = self._q(node)
        self._qualified[key] = found
        return found

    def q_dotted(self, node: ast.AST) -> Optional[str]:
        """`q` of a dotted name only (`a.b.c`, `a[...]`): None for an attribute of the module
        an import call returns (`__import__("lmdb").open`), which `q` qualifies."""
        found = self.q(node)
        if found is not None and type(node) is syntax.Attribute:
            root = node.value  # (`dotted` of an attribute chain: rooted at a name)
            while type(root) is syntax.Attribute:
                root = root.value
            if type(root) is not syntax.Name:
                return None
        return found

    def adopt_names(self, other: State) -> None:
        """Start from the qualified names `other` computed, when this state's scope is
        `other`'s module scope and `other` has finished binding names in it: what `other`
        still holds was computed under that scope as it is (any binding, and leaving a
        function scope that bound names, cleared it)."""
        self._qualified.update(other._qualified)
        self._by_name.update(other._by_name)

    def qualify(self, name: str) -> str:
        """A dotted name qualified through this file's imports (names.qualify), computed once
        per name while no binding changes."""
        found = self._by_name.get(name)
        if found is None:
            found = self._by_name[name] = qualify(name, self._scope, self.known)
        return found

    def _q(self, node: ast.AST) -> Optional[str]:
        name = dotted(node)
        if name:
            return self.qualify(name)
        # `__import__("lmdb").open`: an attribute of a module an import call returns
        attrs = []
        while type(node) is syntax.Attribute:
            attrs.append(node.attr)
            node = node.value
        module = imported_by_call(node) if attrs else None
        return ".".join([module, *reversed(attrs)]) if module else None

    def push(self, *frames: Frame) -> None:
        """Enter `frames` (what the frames say is updated by the one frame entered; what it
        said before is kept for `pop`)."""
        saved = self._saved
        for frame in frames:
            saved.append((self.function, self.outer, self.cls, self.method))
            last = self.frames[-1] if self.frames else None
            self.frames += (frame,)
            if type(frame) is FunctionState:
                self.function = frame
                if self.outer is None:
                    self.outer = frame
                self.method = frame.method
                self.cls = last if isinstance(last, ClassState) else None
            else:
                self.method = self.cls = None
        func = self.function
        self.env = func.env if func is not None else self._module_env

    def pop(self, count: int = 1) -> None:
        self.frames = self.frames[:-count]
        saved = self._saved
        if 0 < count <= len(saved):
            self.function, self.outer, self.cls, self.method = saved[-count]
            del saved[-count:]
            func = self.function
            self.env = func.env if func is not None else self._module_env
        else:  # (not a pop of frames pushed)
            saved.clear()
            self._refresh()

    def _refresh(self) -> None:
        frames = self.frames
        inner = outer = None
        for frame in frames:
            if type(frame) is FunctionState:
                inner = frame
                if outer is None:
                    outer = frame
        self.function, self.outer = inner, outer
        self.env = inner.env if inner is not None else self._module_env
        last = frames[-1] if frames else None
        self.method = last.method if isinstance(last, FunctionState) else None
        owner = frames[-2] if len(frames) >= 2 and isinstance(last, FunctionState) else None
        self.cls = owner if isinstance(owner, ClassState) else None

    @property
    def frame(self) -> Frame:
        return self.frames[-1] if self.frames else None

    def current_class(self) -> Optional[ClassState]:
        """The class whose method we are in (directly), if any."""
        return self.cls

    def current_method(self) -> Optional[MethodState]:
        return self.method

    def enclosing_function(self) -> Optional[FunctionState]:
        return self.function

    def outermost_function(self) -> Optional[FunctionState]:
        return self.outer

    @property
    def module_env(self) -> Env:
        return self._module_env

    @module_env.setter
    def module_env(self, env: Env) -> None:
        self._module_env = env
        if self.function is None:
            self.env = env

    def local_handle(self, name: str) -> Optional[Handle]:
        func = self.function
        if func is not None:
            return func.env.handles.get(name)
        local = self._module_env.handles.get(name)
        if local is not None:
            return local
        pair = self.module_handles.get(name)
        return pair[0] if pair else None
