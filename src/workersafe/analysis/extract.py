"""One libcst pass over a file → `FileFacts`.

The visitor keeps a stack of scopes (module, class, function) and records, per class, where
handles are created and which attributes each method reads; per file, DataLoader calls and
what their dataset argument refers to. Expressions are evaluated by small recursive helpers,
not further visitor passes, so each tree is walked once."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..facts import (
    ClassFacts, DatasetRef, FileFacts, FunctionFacts, HandleArg, HandleSite, HeldHandle,
    LoaderCall, MethodFacts, ModuleHandle, Span,
)
from ..registry import DERIVED_CALLABLE_SUFFIXES, GENERIC_DERIVED_METHODS, Registry
from ..source import physical_lines
from .names import (
    CACHE_DECORATORS, GET_CONTEXT, LOADERS, PARTIAL, SET_START_METHOD, WRAPPERS, Scope,
    bind_import, bind_import_from, dotted, qualify,
)

# Reading `self.x.<attr>` with one of these does no I/O: configuring, not using, the handle.
CONFIG_ATTRS = frozenset({
    "headers", "mount", "auth", "verify", "proxies", "cert", "params", "cookies", "trust_env",
    "max_redirects", "hooks", "adapters", "close", "timeout", "base_url", "event_hooks",
})
CONTAINER_ADDERS = frozenset({"append", "add", "extend", "insert", "setdefault", "update"})
CLOSERS = frozenset({"close", "shutdown", "dispose", "terminate"})
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")


@dataclass
class _Handle:
    """A handle value during evaluation: its creating call, and whether it is derived."""

    call: cst.Call
    handle: str
    derived: bool = False
    closed: bool = False


@dataclass
class _Method:
    name: str
    attrs_read: set[str] = field(default_factory=set)
    attrs_used: set[str] = field(default_factory=set)
    config_reads: set[int] = field(default_factory=set)
    self_calls: set[str] = field(default_factory=set)
    globals_read: set[str] = field(default_factory=set)
    guarded_attrs: set[str] = field(default_factory=set)
    guarded_calls: set[str] = field(default_factory=set)
    calls_super_init: bool = False
    locals: dict[str, _Handle] = field(default_factory=dict)
    closed_locals: set[str] = field(default_factory=set)


@dataclass
class _Class:
    name: str
    qualname: str
    node: cst.ClassDef
    bases: tuple[str, ...]
    methods: list[_Method] = field(default_factory=list)
    held: dict[tuple[str, str, int], _Handle] = field(default_factory=dict)
    closed: set[tuple[str, str]] = field(default_factory=set)  # (method, attr)
    parent_used: set[tuple[str, str]] = field(default_factory=set)
    class_held: dict[tuple[str, int], _Handle] = field(default_factory=dict)
    attr_refs: dict[str, list[DatasetRef]] = field(default_factory=dict)
    init_params: tuple[str, ...] = ()
    param_attrs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Function:
    name: str
    qualname: str
    node: cst.FunctionDef
    cached: bool
    is_module_level: bool
    returns: list[DatasetRef] = field(default_factory=list)
    returned_handle: Optional[_Handle] = None
    method_calls: set[str] = field(default_factory=set)
    attr_handle_assigns: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    env_refs: dict[str, list[DatasetRef]] = field(default_factory=dict)
    env_ints: dict[str, Optional[int]] = field(default_factory=dict)
    env_kwargs: dict[str, dict[str, cst.BaseExpression]] = field(default_factory=dict)
    env_context: dict[str, str] = field(default_factory=dict)
    globals_declared: set[str] = field(default_factory=set)
    handles: dict[str, _Handle] = field(default_factory=dict)


@dataclass
class _Loader:
    call: cst.Call
    refs: list[DatasetRef]
    num_workers: Optional[int]
    num_workers_text: str
    persistent: Optional[bool]
    context: str
    worker_inits: tuple[str, ...]
    has_worker_init: bool


_Frame = Union[_Class, _Function, None]


class FactExtractor(cst.CSTVisitor):
    """Collects the facts of one module. Use `extract_facts` rather than this class."""

    def __init__(self, module: cst.Module, path: str, module_name: str, is_package: bool,
                 registry: Registry) -> None:
        self.module = module
        self.path = path
        self.module_name = module_name
        self.is_package = is_package
        self.registry = registry
        self.known = frozenset(registry.types)
        self.scope = Scope()
        self.module_scope = self.scope
        self.frames: list[_Frame] = []  # innermost last; None marks a nested, ignored scope
        self.classes: list[_Class] = []
        self.functions: list[_Function] = []
        self.loaders: list[_Loader] = []
        self.module_handles: dict[str, tuple[_Handle, bool]] = {}
        self.module_env_refs: dict[str, list[DatasetRef]] = {}
        self.module_env_ints: dict[str, Optional[int]] = {}
        self.module_env_kwargs: dict[str, dict[str, cst.BaseExpression]] = {}
        self.module_env_context: dict[str, str] = {}
        self.module_locals: dict[str, _Handle] = {}
        self.globals_outside: set[str] = set()
        self.start_method = ""
        self.pid_guard_depth = 0
        self.pid_guards: set[int] = set()  # id() of the `if` statements that test a pid
        self._sink_valid = False
        self._name_sink: Optional[set[str]] = None
        self.call_order: dict[int, int] = {}
        self.class_order: dict[int, int] = {}
        self.text: Optional[str] = None
        self.python_tree: Optional[ast.Module] = None
        self.skip_names: set[int] = set()
        self.store_nodes: set[int] = set()
        self._predeclare(module)

    # --- traversal ----------------------------------------------------------------------------
    # libcst's own `visit` rebuilds every node it passes (a visit costs about as much as the
    # parse). This walk only reads fields: the syntax-bearing ones, in source order.

    def walk(self, node: cst.CSTNode) -> None:
        visit, leave, fields = _PLANS.get(type(node)) or _plan(type(node))
        if visit is None or visit(self, node) is not False:
            for name in fields:
                value = getattr(node, name)
                kind = type(value)
                if kind is tuple or kind is list:
                    for item in value:
                        is_node = _IS_NODE.get(type(item))
                        if is_node or (is_node is None and _is_node(type(item))):
                            self.walk(item)
                else:
                    is_node = _IS_NODE.get(kind)
                    if is_node or (is_node is None and _is_node(kind)):
                        self.walk(value)
        if leave is not None:
            leave(self, node)

    # --- scopes ---------------------------------------------------------------------------

    def _predeclare(self, module: cst.Module) -> None:
        """Bind module-level classes and functions first: uses may precede definitions."""
        for stmt in module.body:
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
                self.scope.bind(stmt.name.value, self._qual(stmt.name.value))

    def _qual(self, name: str) -> str:
        return f"{self.module_name}.{name}" if self.module_name else name

    def q(self, node: cst.BaseExpression) -> Optional[str]:
        name = dotted(node)
        return qualify(name, self.scope, self.known) if name else None

    def _push(self, frame: _Frame) -> None:
        self.frames.append(frame)
        self._sink_valid = False

    def _pop(self) -> None:
        self.frames.pop()
        self._sink_valid = False

    @property
    def frame(self) -> _Frame:
        return self.frames[-1] if self.frames else None

    def current_class(self) -> Optional[_Class]:
        """The class whose method we are in (directly), if any."""
        if len(self.frames) >= 2 and isinstance(self.frames[-1], _Function):
            owner = self.frames[-2]
            if isinstance(owner, _Class):
                return owner
        return None

    def current_method(self) -> Optional[_Method]:
        cls = self.current_class()
        return cls.methods[-1] if cls is not None and cls.methods else None

    def enclosing_function(self) -> Optional[_Function]:
        for frame in reversed(self.frames):
            if isinstance(frame, _Function):
                return frame
        return None

    # --- imports --------------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        bind_import(self.scope, node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        bind_import_from(self.scope, node, self.module_name, self.is_package)

    # --- classes and functions --------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
        self.class_order[id(node)] = len(self.class_order)
        self.skip_names.add(id(node.name))
        if self.frames:  # nested classes: not analysed, but their calls still count
            self._push(None)
            return True
        bases = tuple(filter(None, (self.q(arg.value) for arg in node.bases if arg.keyword is None)))
        cls = _Class(node.name.value, self._qual(node.name.value), node, bases)
        self.classes.append(cls)
        self._push(cls)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self.skip_names.add(id(node.name))
        self.scope = Scope(self.scope)
        owner = self.frame
        if isinstance(owner, _Class):
            method = _Method(node.name.value)
            owner.methods.append(method)
            if node.name.value == "__init__":
                params = node.params
                owner.init_params = tuple(p.name.value for p in (
                    *params.posonly_params, *params.params)[1:]) + tuple(
                    p.name.value for p in params.kwonly_params)
            func = _Function(node.name.value, f"{owner.qualname}.{node.name.value}", node,
                             False, False)
        else:
            decorators = {self.q(_decorator_callee(d.decorator)) for d in node.decorators}
            cached = bool(decorators & CACHE_DECORATORS)
            module_level = not self.frames
            qual = self._qual(node.name.value) if module_level else node.name.value
            func = _Function(node.name.value, qual, node, cached, module_level)
            if module_level:
                self.functions.append(func)
        self._push(func)
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()
        self.scope = self.scope.parent or self.module_scope

    def visit_Param(self, node: cst.Param) -> None:
        self.skip_names.add(id(node.name))

    def visit_Lambda(self, node: cst.Lambda) -> None:
        for param in node.params.params:
            self.skip_names.add(id(param.name))

    def visit_Global(self, node: cst.Global) -> None:
        func = self.enclosing_function()
        if func is not None:
            func.globals_declared.update(item.name.value for item in node.names)

    # --- pid guards -------------------------------------------------------------------------

    def visit_If(self, node: cst.If) -> None:
        if _mentions_pid(node.test):
            self.pid_guards.add(id(node))
            self.pid_guard_depth += 1

    def leave_If(self, original_node: cst.If) -> None:
        if id(original_node) in self.pid_guards:
            self.pid_guard_depth -= 1

    # --- names and attributes ---------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip_names.add(id(node.attr))
        method = self.current_method()
        if method is None or id(node) in self.store_nodes:
            return
        if node.attr.value in CONFIG_ATTRS and _self_attr(node.value) is not None:
            method.config_reads.add(id(node.value))
        if _is_self(node.value) or _is_name(node.value, self.current_class_name()):
            method.attrs_read.add(node.attr.value)
            if id(node) not in method.config_reads:
                method.attrs_used.add(node.attr.value)

    def current_class_name(self) -> str:
        cls = self.current_class()
        return cls.name if cls else ""

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip_names.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.skip_names or id(node) in self.store_nodes:
            return
        sink = self._name_sink if self._sink_valid else self._new_sink()
        if sink is not None:
            sink.add(node.value)

    def _new_sink(self) -> Optional[set[str]]:
        """Where a name read here is recorded (recomputed when the innermost frame changes:
        a quarter of the nodes are names)."""
        method = self.current_method()
        if method is not None:
            sink: Optional[set[str]] = method.globals_read
        elif self.current_class() is None and not isinstance(self.frame, _Class):
            sink = self.globals_outside
        else:
            sink = None
        self._sink_valid, self._name_sink = True, sink
        return sink

    # --- statements -------------------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._mark_store(target.target)
        for target in node.targets:
            self._assign(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark_store(node.target)
        if node.value is not None:
            self._assign(node.target, node.value)

    def _mark_store(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Name, cst.Attribute)):
            self.store_nodes.add(id(target))
            if isinstance(target, cst.Attribute):
                self.skip_names.add(id(target.attr))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._mark_store(element.value)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            handle = self.handle_of(item.item)
            if handle is None or item.asname is None:
                continue
            if isinstance(item.asname.name, cst.Name):
                closed = _Handle(handle.call, handle.handle, handle.derived, closed=True)
                self._locals()[item.asname.name.value] = closed
                self.store_nodes.add(id(item.asname.name))

    def visit_Return(self, node: cst.Return) -> None:
        func = self.enclosing_function()
        if func is None or node.value is None or not func.is_module_level:
            return
        func.returns.extend(self.refs_of(node.value))
        handle = self.handle_of(node.value)
        if handle is not None:
            func.returned_handle = handle

    def visit_Call(self, node: cst.Call) -> None:
        self.call_order[id(node)] = len(self.call_order)
        name = self.q(node.func)
        func = self.enclosing_function()
        if name is not None and func is not None:
            func.calls.add(name)
        if name in LOADERS:
            self.loaders.append(self._loader(node))
        elif name in SET_START_METHOD and node.args:
            self.start_method = _string(node.args[0].value) or "?"
        if isinstance(node.func, cst.Attribute):
            self._method_call(node, node.func)

    def _method_call(self, node: cst.Call, func: cst.Attribute) -> None:
        method_name = func.attr.value
        frame = self.enclosing_function()
        if frame is not None:
            frame.method_calls.add(method_name)
        method, cls = self.current_method(), self.current_class()
        receiver = func.value
        if method is not None and _is_self(receiver):
            method.self_calls.add(method_name)
            if self.pid_guard_depth:
                method.guarded_calls.add(method_name)
        if _is_super(receiver) and method_name == "__init__" and method is not None:
            method.calls_super_init = True
        if (method is not None and method_name == "__init__" and cls is not None
                and node.args and _is_self(node.args[0].value)):
            method.calls_super_init = True  # Base.__init__(self, ...)
        if method_name in CLOSERS:
            self._record_close(receiver)
        elif method_name in CONTAINER_ADDERS and cls is not None and method is not None:
            attr = _self_attr(receiver)
            if attr is not None:
                for arg in node.args:
                    handle = self.handle_of(arg.value)
                    if handle is not None:
                        self._hold(cls, method, attr, handle)

    def _record_close(self, receiver: cst.BaseExpression) -> None:
        cls, method = self.current_class(), self.current_method()
        attr = _self_attr(receiver)
        if attr is not None and cls is not None and method is not None:
            cls.closed.add((method.name, attr))
        elif isinstance(receiver, cst.Name):
            self._closed_locals().add(receiver.value)

    # --- assignment -------------------------------------------------------------------------

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        cls, method = self.current_class(), self.current_method()
        frame = self.frame
        if isinstance(frame, _Class):
            self._class_body_assign(frame, target, value)
            return
        if isinstance(target, cst.Attribute):
            self._attr_assign(cls, method, target, value)
        elif isinstance(target, cst.Subscript) and cls and method:
            attr = _self_attr(target.value)
            handle = self.handle_of(value) if attr else None
            if attr and handle:
                self._hold(cls, method, attr, handle)
        elif isinstance(target, cst.Name):
            self._name_assign(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            for element, item in zip(target.elements, value.elements):  # a, b = x(), y()
                self._assign(element.value, item.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            refs = self.refs_of(value)
            for element in target.elements:
                if isinstance(element.value, cst.Name) and refs:
                    self._env_refs()[element.value.value] = list(refs)

    def _class_body_assign(self, cls: _Class, target: cst.BaseExpression,
                           value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            for handle in self.handles_in(value):
                cls.class_held[(target.value, id(handle.call))] = handle

    def _attr_assign(self, cls: Optional[_Class], method: Optional[_Method],
                     target: cst.Attribute, value: cst.BaseExpression) -> None:
        attr = target.attr.value
        handle = self.handle_of(value)
        if cls is not None and method is not None and _is_self(target.value):
            held = self.handles_in(value)
            for each in held:
                self._hold(cls, method, attr, each)
            if not held and isinstance(value, cst.Name) and value.value in cls.init_params \
                    and method.name == "__init__":
                cls.param_attrs.append((value.value, attr))
            refs = self.refs_of(value)
            if refs:
                cls.attr_refs.setdefault(attr, []).extend(refs)
            return
        func = self.enclosing_function()
        if handle is not None and func is not None and not _is_self(target.value):
            func.attr_handle_assigns.add(attr)  # e.g. worker_init_fn: info.dataset.s = ...

    def _hold(self, cls: _Class, method: _Method, attr: str, handle: _Handle) -> None:
        if handle.closed:
            return
        if self.pid_guard_depth:
            method.guarded_attrs.add(attr)
        cls.held.setdefault((method.name, attr, id(handle.call)), handle)

    def _name_assign(self, name: str, value: cst.BaseExpression) -> None:
        handle = self.handle_of(value)
        func = self.enclosing_function()
        if handle is not None:
            if func is None and not self.frames:
                self.module_handles[name] = (handle, False)
            elif func is not None and name in func.globals_declared and not self.pid_guard_depth:
                self.module_handles[name] = (handle, False)
                if func.is_module_level:
                    self.module_handles.setdefault(func.name, (handle, True))
            else:
                self._locals()[name] = handle
        refs = self.refs_of(value)
        if refs:
            self._env_refs()[name] = list(refs)
        ints = self._env_ints()
        ints[name] = _int_value(value) if name not in ints else None
        kwargs = _dict_literal(value, self)
        if kwargs is not None:
            self._env_kwargs()[name] = kwargs
        context = self._context_of_call(value)
        if context:
            self._env_context()[name] = context

    # --- environments (function-local, or module level) ---------------------------------------

    def _locals(self) -> dict[str, _Handle]:
        method = self.current_method()
        if method is not None:
            return method.locals
        return self.module_locals if self.enclosing_function() is None else self._func_locals()

    def _func_locals(self) -> dict[str, _Handle]:
        func = self.enclosing_function()
        assert func is not None
        return func.handles

    def _closed_locals(self) -> set[str]:
        method = self.current_method()
        if method is not None:
            return method.closed_locals
        return set()

    def _env_refs(self) -> dict[str, list[DatasetRef]]:
        func = self.enclosing_function()
        return func.env_refs if func is not None else self.module_env_refs

    def _env_ints(self) -> dict[str, Optional[int]]:
        func = self.enclosing_function()
        return func.env_ints if func is not None else self.module_env_ints

    def _env_kwargs(self) -> dict[str, dict[str, cst.BaseExpression]]:
        func = self.enclosing_function()
        return func.env_kwargs if func is not None else self.module_env_kwargs

    def _env_context(self) -> dict[str, str]:
        func = self.enclosing_function()
        return func.env_context if func is not None else self.module_env_context

    def _lookup_local_handle(self, name: str) -> Optional[_Handle]:
        method = self.current_method()
        if method is not None and name in method.locals:
            return method.locals[name]
        func = self.enclosing_function()
        if func is not None:
            found = func.handles.get(name)
            if found is not None:
                return found
        if func is None:
            return self.module_locals.get(name) or _first(self.module_handles.get(name))
        return None

    # --- expression evaluation ----------------------------------------------------------------

    def handles_in(self, expr: cst.BaseExpression) -> list[_Handle]:
        """Every handle a container literal holds; else the one handle the value is."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return [h for e in expr.elements for h in self.handles_in(e.value)]
        if isinstance(expr, cst.Dict):
            return [h for e in expr.elements if isinstance(e, cst.DictElement)
                    for h in self.handles_in(e.value)]
        handle = self.handle_of(expr)
        return [handle] if handle is not None else []

    def handle_of(self, expr: cst.BaseExpression) -> Optional[_Handle]:
        """The handle an expression evaluates to (created, derived or held), if any."""
        if isinstance(expr, cst.Call):
            return self._handle_of_call(expr)
        if isinstance(expr, cst.Subscript):
            base = self.handle_of(expr.value)
            if base is None or not self._subscript_keeps_handle(base, expr):
                return None
            return _Handle(base.call, base.handle, True, base.closed)
        if isinstance(expr, cst.Name):
            return self._lookup_local_handle(expr.value)
        if isinstance(expr, cst.Attribute) and _is_self(expr.value):
            cls, method = self.current_class(), self.current_method()
            if cls is not None and method is not None:
                return next((h for (m, a, _), h in cls.held.items()
                             if m == method.name and a == expr.attr.value), None)
            return None
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return _first_handle(self.handle_of(e.value) for e in expr.elements
                                 if isinstance(e, cst.Element))
        if isinstance(expr, cst.Dict):
            return _first_handle(self.handle_of(e.value) for e in expr.elements
                                 if isinstance(e, cst.DictElement))
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.handle_of(expr.elt)
        if isinstance(expr, cst.DictComp):
            return self.handle_of(expr.value)
        if isinstance(expr, cst.BooleanOperation):
            return self.handle_of(expr.left) or self.handle_of(expr.right)
        if isinstance(expr, cst.IfExp):
            return self.handle_of(expr.body) or self.handle_of(expr.orelse)
        return None

    def _handle_of_call(self, call: cst.Call) -> Optional[_Handle]:
        name = self.q(call.func)
        if name is not None and self.registry.lookup(name) is not None:
            return _Handle(call, name)
        func = call.func
        if isinstance(func, cst.Attribute):
            base = self.handle_of(func.value)
            if base is not None and self._method_keeps_handle(base, func.attr.value):
                return _Handle(base.call, base.handle, True, base.closed)
        if name is not None and name.rsplit(".", 1)[-1].endswith(DERIVED_CALLABLE_SUFFIXES):
            for arg in call.args:
                base = self.handle_of(arg.value)
                if base is not None:
                    return _Handle(base.call, base.handle, True, base.closed)
        return None

    def _method_keeps_handle(self, base: _Handle, method: str) -> bool:
        htype = self.registry.lookup(base.handle)
        derived = htype.derived_methods if htype else ()
        return method in derived or method in GENERIC_DERIVED_METHODS

    def _subscript_keeps_handle(self, base: _Handle, expr: cst.Subscript) -> bool:
        htype = self.registry.lookup(base.handle)
        if htype is None or not htype.derived_subscript:
            return False
        # f["images"] keeps the file open; f["images"][:] or [()] reads the data out.
        return all(
            isinstance(el.slice, cst.Index) and isinstance(el.slice.value, (cst.SimpleString,
                                                                           cst.FormattedString,
                                                                           cst.Name))
            for el in expr.slice
        ) and (not base.derived or _string_keys(expr))

    def refs_of(self, expr: cst.BaseExpression) -> list[DatasetRef]:
        """What dataset(s) an expression may evaluate to."""
        if isinstance(expr, cst.Call):
            return self._refs_of_call(expr)
        if isinstance(expr, cst.Name):
            local = self._env_refs().get(expr.value)
            if local is not None:
                return local
            if expr.value in self.module_env_refs:
                return self.module_env_refs[expr.value]
            qualified = self.q(expr)
            return [DatasetRef("name", qualified)] if qualified and "." in qualified else []
        if isinstance(expr, cst.Attribute) and _is_self(expr.value):
            cls = self.current_class()
            if cls is not None:
                return [DatasetRef("attr", f"{cls.qualname}.{expr.attr.value}")]
            return []
        if isinstance(expr, cst.Subscript):
            return self.refs_of(expr.value)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [r for e in expr.elements for r in self.refs_of(e.value)]
        if isinstance(expr, cst.IfExp):
            return self.refs_of(expr.body) + self.refs_of(expr.orelse)
        if isinstance(expr, cst.BooleanOperation):
            return self.refs_of(expr.left) + self.refs_of(expr.right)
        return []

    def _refs_of_call(self, call: cst.Call) -> list[DatasetRef]:
        name = self.q(call.func)
        if name is None:
            return []
        wrapper = WRAPPERS.get(name)
        if wrapper is not None:
            return self._refs_through_wrapper(call, wrapper)
        if name.startswith(("torch.", "builtins.")) or name in _BUILTINS:
            return []
        if self.registry.lookup(name) is not None:
            return []
        return [DatasetRef("call", name, tuple(self._handle_args(call)))]

    def _refs_through_wrapper(self, call: cst.Call, spec: tuple) -> list[DatasetRef]:
        how, position, keyword = spec
        if how == "all":
            return [r for arg in call.args for r in self.refs_of(arg.value)]
        arg = _argument(call.args, position, keyword)
        return self.refs_of(arg) if arg is not None else []

    def _handle_args(self, call: cst.Call) -> list[HandleArg]:
        found = []
        for index, arg in enumerate(call.args):
            if arg.star:
                continue
            handle = self.handle_of(arg.value)
            if handle is None or handle.closed:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else ""
            found.append(HandleArg(-1 if keyword else index, keyword, self._site(handle)))
        return found

    def _context_of_call(self, expr: cst.BaseExpression) -> str:
        if isinstance(expr, cst.Call) and self.q(expr.func) in GET_CONTEXT:
            return (_string(expr.args[0].value) or "?") if expr.args else ""
        return ""

    # --- DataLoader calls -------------------------------------------------------------------

    def _loader(self, call: cst.Call) -> _Loader:
        args = self._loader_args(call)
        dataset = args.get("dataset")
        refs = self.refs_of(dataset) if dataset is not None else []
        workers = args.get("num_workers")
        num_workers, text = self._num_workers(workers)
        persistent_node = args.get("persistent_workers")
        persistent = _bool_value(persistent_node) if persistent_node is not None else False
        context = self._context_value(args.get("multiprocessing_context"))
        init_node = args.get("worker_init_fn")
        worker_init = self._worker_init_names(init_node) if init_node is not None else ()
        has_init = init_node is not None and not _is_none(init_node)
        return _Loader(call, refs, num_workers, text, persistent, context, worker_init, has_init)

    def _loader_args(self, call: cst.Call) -> dict[str, cst.BaseExpression]:
        args: dict[str, cst.BaseExpression] = {}
        position = 0
        for arg in call.args:
            if arg.star == "**":
                args.update(self._kwargs_of(arg.value))
            elif arg.star:
                args["num_workers"] = arg.value  # *args: unknown, assume anything
            elif arg.keyword is not None:
                args[arg.keyword.value] = arg.value
            else:
                if position < len(LOADER_POSITIONAL):
                    args[LOADER_POSITIONAL[position]] = arg.value
                position += 1
        return args

    def _kwargs_of(self, expr: cst.BaseExpression) -> dict[str, cst.BaseExpression]:
        literal = _dict_literal(expr, self)
        if literal is not None:
            return literal
        if isinstance(expr, cst.Name):
            for env in (self._env_kwargs(), self.module_env_kwargs):
                if expr.value in env:
                    return env[expr.value]
        return {"num_workers": expr}  # unknown **kwargs: may set num_workers

    def _num_workers(self, node: Optional[cst.BaseExpression]) -> tuple[Optional[int], str]:
        if node is None:
            return 0, "0"
        text = self.module.code_for_node(node)
        value = _int_value(node)
        if value is None and isinstance(node, cst.Name):
            for env in (self._env_ints(), self.module_env_ints):
                if node.value in env:
                    value = env[node.value]
                    break
        return value, text

    def _context_value(self, node: Optional[cst.BaseExpression]) -> str:
        if node is None or _is_none(node):
            return ""
        literal = _string(node)
        if literal is not None:
            return literal
        direct = self._context_of_call(node)
        if direct:
            return direct
        if isinstance(node, cst.Name):
            for env in (self._env_context(), self.module_env_context):
                if node.value in env:
                    return env[node.value]
        return "?"

    def _worker_init_names(self, node: cst.BaseExpression) -> tuple[str, ...]:
        """`fn`, or `partial(fn, ..., previous=other)` → every function that will run."""
        if isinstance(node, cst.Call) and self.q(node.func) in PARTIAL and node.args:
            names = self._worker_init_names(node.args[0].value)
            for arg in node.args[1:]:  # chained functions: partial(fn, previous=seed)
                names += self._worker_init_names(arg.value)
            return names
        name = self.q(node)
        return (name,) if name else ()

    # --- output -----------------------------------------------------------------------------

    def _site(self, handle: _Handle) -> HandleSite:
        return HandleSite(handle.handle, _NodeSpan(handle.call))  # type: ignore[arg-type]

    def facts(self) -> FileFacts:
        spans = _Spans(self.module, self.text, self.call_order, self.class_order,
                       self.python_tree)
        classes = tuple(self._class_facts(c, spans) for c in self.classes)
        functions = tuple(self._function_facts(f, spans) for f in self.functions)
        loaders = tuple(
            LoaderCall(spans.of(l.call), tuple(_fix_refs(l.refs, spans)), l.num_workers,
                       l.num_workers_text, l.persistent, l.context, l.worker_inits,
                       l.has_worker_init)
            for l in self.loaders
        )
        handles = tuple(
            ModuleHandle(name, HandleSite(h.handle, spans.of(h.call)), via_call)
            for name, (h, via_call) in self.module_handles.items()
        )
        module_vars = tuple((n, tuple(_fix_refs(r, spans))) for n, r in self.module_env_refs.items())
        return FileFacts(
            path=self.path, module=self.module_name,
            imports=tuple(sorted(self.module_scope.names.items())),
            star_imports=tuple(self.module_scope.star_modules),
            classes=classes, functions=functions, loaders=loaders, module_handles=handles,
            module_vars=module_vars,
            globals_read_outside_classes=tuple(sorted(self.globals_outside)),
            start_method=self.start_method,
        )

    def _class_facts(self, cls: _Class, spans: "_Spans") -> ClassFacts:
        held = tuple(
            HeldHandle(attr, HandleSite(h.handle, spans.of(h.call)), method, h.derived,
                       closed=(method, attr) in cls.closed)
            for (method, attr, _), h in cls.held.items()
        )
        class_held = tuple(
            HeldHandle(attr, HandleSite(h.handle, spans.of(h.call)), "", h.derived)
            for (attr, _), h in cls.class_held.items()
        )
        methods = tuple(
            MethodFacts(m.name, tuple(sorted(m.attrs_read)), tuple(sorted(m.attrs_used)),
                        tuple(sorted(m.self_calls)),
                        tuple(sorted(m.globals_read)), tuple(sorted(m.guarded_attrs)),
                        tuple(sorted(m.guarded_calls)), m.calls_super_init)
            for m in cls.methods
        )
        return ClassFacts(
            cls.name, cls.qualname, cls.bases, spans.of(cls.node), methods, held,
            class_held, cls.init_params, tuple(cls.param_attrs),
            tuple((attr, tuple(_fix_refs(refs, spans))) for attr, refs in cls.attr_refs.items()),
        )

    def _function_facts(self, func: _Function, spans: "_Spans") -> FunctionFacts:
        if func.cached and func.returned_handle is not None:
            self.module_handles.setdefault(func.name, (func.returned_handle, True))
        return FunctionFacts(
            func.name, func.qualname, tuple(_fix_refs(func.returns, spans)),
            tuple(sorted(func.method_calls)), tuple(sorted(func.attr_handle_assigns)),
            tuple(sorted(func.calls)),
        )


def _hooks(prefix: str) -> dict[type, object]:
    hooks = {}
    for name, function in vars(FactExtractor).items():  # only this class's own hooks
        if name.startswith(prefix) and name.count("_") == 1:
            node_type = getattr(cst, name[len(prefix):], None)
            if isinstance(node_type, type):
                hooks[node_type] = function
    return hooks


_VISIT = _hooks("visit_")
_LEAVE = _hooks("leave_")

# Fields that hold only whitespace, punctuation or names the hooks read directly.
_SKIPPED_FIELDS = frozenset({
    "leading_lines", "lines_after_decorators", "lpar", "rpar", "lbracket", "rbracket",
    "lbrace", "rbrace", "comma", "colon", "equal", "semicolon", "dot", "operator", "header",
    "footer", "trailing_whitespace", "asynchronous", "star", "whitespace_after_star",
    "whitespace_after_arg", "whitespace_after_param",
})
# Where libcst's field order is not source order (or fields are read by the hooks directly).
# Annotations are not walked (a seventh of the nodes of typed code; no handle is created or
# used there): `_calls_and_classes` skips them in Python's tree too, so calls still pair up.
_FIELD_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.Attribute: ("value",),
    cst.Arg: ("value",),
    cst.Param: ("default",),
    cst.AnnAssign: ("target", "value"),
    cst.Import: (),
    cst.ImportFrom: (),
}
_Plan = tuple  # (visit hook or None, leave hook or None, fields to walk)
_PLANS: dict[type, _Plan] = {}
# Node type → is a CSTNode. A dict lookup instead of isinstance: CSTNode is an ABC, and its
# isinstance check was a tenth of the analysis time.
_IS_NODE: dict[type, bool] = {}


def _plan(kind: type) -> _Plan:
    fields = _FIELD_ORDER.get(kind) or _syntax_fields(kind)
    plan = _PLANS[kind] = (_VISIT.get(kind), _LEAVE.get(kind), fields)
    return plan


@functools.lru_cache(maxsize=None)
def _syntax_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold syntax: not whitespace, punctuation or text."""
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(kind)
                 if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
                 and f.type is not str)


def _is_node(kind: type) -> bool:
    is_node = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return is_node

_BUILTINS = frozenset({"list", "tuple", "dict", "set", "len", "range", "print", "iter", "next",
                       "sorted", "enumerate", "zip", "map", "filter", "open", "super", "type",
                       "isinstance", "getattr", "str", "int", "float"})


class _NodeSpan:
    """Placeholder for a node's position until positions are resolved (once, at the end)."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node


class _Spans:
    """Node positions, found cheaply: libcst's PositionProvider costs more than the parse
    itself, so positions come from Python's `ast` (about a tenth of the cost), matching the
    n-th call (or class) in source order; PositionProvider only when they disagree."""

    def __init__(self, module: cst.Module, text: Optional[str], call_order: dict[int, int],
                 class_order: dict[int, int], python_tree: Optional[ast.Module] = None) -> None:
        self.module = module
        self.text = text
        self.python_tree = python_tree
        self.orders = {"call": call_order, "class": class_order}  # id(node) → source order
        self._ast: Optional[dict[str, list]] = None
        self._positions: Optional[dict] = None
        self._lines: Optional[list[str]] = None

    def of(self, node: cst.CSTNode) -> Span:
        kind = "class" if isinstance(node, cst.ClassDef) else "call"
        spans = self._ast_spans()
        index = self.orders[kind].get(id(node))
        if spans is not None and index is not None and kind in spans:
            return self._span(spans[kind][index])
        return self._libcst_span(node)

    def _libcst_span(self, node: cst.CSTNode) -> Span:
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = dict(wrapper.resolve(PositionProvider))
        pos = self._positions[node]
        return Span(pos.start.line, pos.start.column, pos.end.line, pos.end.column)

    def _ast_spans(self) -> Optional[dict[str, list]]:
        if self._ast is not None or self.text is None:
            return self._ast or None
        self._ast = {}
        tree = self.python_tree or _python_tree(self.text)
        if tree is None:
            return None
        calls, classes = _calls_and_classes(tree)
        if len(calls) != len(self.orders["call"]) or len(classes) != len(self.orders["class"]):
            return None
        key = (lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))
        self._ast = {"call": sorted(calls, key=key), "class": sorted(classes, key=key)}
        return self._ast

    def _span(self, node) -> Span:  # type: ignore[no-untyped-def]
        return Span(node.lineno, self._char_col(node.lineno, node.col_offset),
                    node.end_lineno, self._char_col(node.end_lineno, node.end_col_offset))

    def _char_col(self, line: int, byte_col: int) -> int:
        """ast counts UTF-8 bytes; flake8 and libcst count characters."""
        if self._lines is None:
            self._lines = physical_lines(self.text) if self.text else []
        if not 0 < line <= len(self._lines):
            return byte_col
        text = self._lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


# Never hold calls or classes: scalars, contexts, and annotations (not walked on libcst's
# side either, so calls still pair up).
_AST_SKIPPED = frozenset({"ctx", "type_comment", "kind", "annotation", "returns", "id", "attr",
                          "arg", "module", "level", "conversion", "simple", "is_async"})
_AST_SKIPPED_OF = {ast.Constant: {"value"}, ast.FunctionDef: {"name"},
                   ast.AsyncFunctionDef: {"name"}, ast.ClassDef: {"name"}, ast.alias: {"name"},
                   ast.Global: {"names"}, ast.Nonlocal: {"names"}, ast.ExceptHandler: {"name"}}
_AST_FIELDS: dict[type, tuple[str, ...]] = {}


def _calls_and_classes(tree: ast.AST) -> tuple[list[ast.Call], list[ast.ClassDef]]:
    """Every Call and ClassDef of `tree`, in no particular order (2.4x ast.walk's speed)."""
    calls: list[ast.Call] = []
    classes: list[ast.ClassDef] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            calls.append(node)  # type: ignore[arg-type]
        elif kind is ast.ClassDef:
            classes.append(node)  # type: ignore[arg-type]
        fields = _AST_FIELDS.get(kind)
        if fields is None:
            skipped = _AST_SKIPPED | _AST_SKIPPED_OF.get(kind, set())
            fields = _AST_FIELDS[kind] = tuple(f for f in kind._fields if f not in skipped)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        stack.append(item)
            elif isinstance(value, ast.AST):
                stack.append(value)
    return calls, classes


def _python_tree(text: str) -> Optional[ast.Module]:
    import warnings

    try:
        with warnings.catch_warnings():  # 3.12+ warns of invalid escapes: not ours to say
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _fix_refs(refs: Sequence[DatasetRef], spans: _Spans) -> list[DatasetRef]:
    """Replace node placeholders in handle arguments with real spans."""
    fixed = []
    for ref in refs:
        args = tuple(
            HandleArg(a.position, a.keyword,
                      HandleSite(a.site.handle, spans.of(a.site.span.node)))  # type: ignore
            if isinstance(a.site.span, _NodeSpan) else a
            for a in ref.handle_args
        )
        fixed.append(DatasetRef(ref.kind, ref.target, args))
    return fixed


# --- small expression helpers ---------------------------------------------------------------

def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("self", "cls")


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return bool(name) and isinstance(node, cst.Name) and node.value == name


def _is_super(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) \
        and node.func.value == "super"


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _self_attr(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Attribute) and _is_self(node.value):
        return node.attr.value
    return None


def _decorator_callee(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.func if isinstance(node, cst.Call) else node


def _first(pair: Optional[tuple[_Handle, bool]]) -> Optional[_Handle]:
    return pair[0] if pair else None


def _first_handle(handles) -> Optional[_Handle]:  # type: ignore[no-untyped-def]
    for handle in handles:
        if handle is not None:
            return _Handle(handle.call, handle.handle, False, handle.closed)
    return None


def _string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _string_keys(expr: cst.Subscript) -> bool:
    return all(isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString)
               for el in expr.slice)


def _int_value(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    return None


def _bool_value(node: cst.BaseExpression) -> Optional[bool]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _mentions_pid(node: cst.BaseExpression) -> bool:
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name and "pid" in current.value.lower():
            return True
        stack.extend(_child_nodes(current))
    return False


def _child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The syntax-bearing children of `node` (libcst's `children` property rebuilds them
    through a visitor: many times slower)."""
    for name in _syntax_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, cst.CSTNode))
        elif isinstance(value, cst.CSTNode):
            yield value


def _argument(args: Sequence[cst.Arg], position: int, keyword: str) -> Optional[cst.BaseExpression]:
    positional = [a for a in args if a.keyword is None and not a.star]
    for arg in args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return positional[position].value if len(positional) > position else None


def _dict_literal(node: cst.BaseExpression, ext: FactExtractor
                  ) -> Optional[dict[str, cst.BaseExpression]]:
    """`dict(num_workers=4)` or `{"num_workers": 4}` → {"num_workers": <node>}."""
    if isinstance(node, cst.Dict):
        out = {}
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = _string(element.key)
                if key is not None:
                    out[key] = element.value
        return out
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        return {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    return None


def extract_facts(module: cst.Module, path: str, module_name: str, is_package: bool,
                  registry: Registry, text: Optional[str] = None,
                  python_tree: Optional[ast.Module] = None) -> FileFacts:
    """`text`, the source the module was parsed from, makes positions cheap (see _Spans), and
    `python_tree`, Python's `ast` of that text if the caller has it, cheaper still."""
    extractor = FactExtractor(module, path, module_name, is_package, registry)
    extractor.text = text
    extractor.python_tree = python_tree
    extractor.walk(module)
    return extractor.facts()
