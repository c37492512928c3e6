"""The one walk over a file's `ast`: a dispatch table from node type to hook, in source order.

The hooks keep the frames (module, class, function) and record, per class, where handles are
created and which attributes each method reads; per file, DataLoader calls and module-level
handles. What an expression *is* is asked of the `Evaluator` (values.py); how a DataLoader
call is read is in loader_args.py."""

from __future__ import annotations

import ast
from typing import Callable, Optional, Sequence

from ..facts import DatasetRef, LoaderCall
from ..registry import Registry
from ..torchnames import CACHE_DECORATORS, LOADERS, SET_START_METHOD
from .loader_args import read_loader
from .names import bind_import, bind_import_from
from .positions import Positions
from .state import (
    ClassState, Env, Frame, FunctionState, Handle, MethodState, State,
)
from .values import (
    Evaluator, call_args, elements, first_arg, is_name, is_self, is_super, self_attr, string,
)

# Deeper code is reported (WS001), not analysed: nobody writes it, and libcst (which `fix`
# gives the files with findings) recurses in native code once per level.
MAX_DEPTH = 1000


class TooDeep(Exception):
    """The file nests deeper than MAX_DEPTH; the message is for WS001."""

    def __init__(self, node: ast.AST) -> None:
        super().__init__(f"too deeply nested to analyse (an expression more than {MAX_DEPTH} "
                         f"levels deep, line {getattr(node, 'lineno', '?')})")


# Appending a handle to `self.x` keeps it on the instance as surely as `self.x = handle`.
CONTAINER_ADDERS = frozenset({"append", "add", "extend", "insert", "setdefault", "update"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class FactWalker:
    """Walks one module; `extract.extract_facts` turns what it found into `FileFacts`."""

    def __init__(self, path: str, module_name: str, is_package: bool, registry: Registry,
                 positions: Positions) -> None:
        self.path = path
        self.module_name = module_name
        self.is_package = is_package
        self.state = State(module_name, registry)
        self.ev = Evaluator(self.state, positions)
        self.positions = positions
        self.config_attrs = registry.config_attrs()
        self.closers = registry.closers()
        self.classes: list[ClassState] = []
        self.functions: list[FunctionState] = []
        self.loaders: list[LoaderCall] = []
        self.globals_outside: set[str] = set()
        self.start_method = ""
        self.store_nodes: set[int] = set()  # id() of assignment targets: not reads
        self._sink: Optional[set[str]] = None
        self._sink_valid = False
        self.depth = 0

    # --- traversal ----------------------------------------------------------------------------

    def walk(self, node: ast.AST) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooDeep(node)
        hook = _HOOKS.get(type(node))
        if hook is not None:
            hook(self, node)
        else:
            self.children(node)
        self.depth -= 1

    def children(self, node: ast.AST) -> None:
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SKIPPED)
        walk = self.walk
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        walk(item)
            elif isinstance(value, ast.AST):
                walk(value)

    def walk_all(self, nodes: Sequence[Optional[ast.AST]]) -> None:
        for node in nodes:
            if node is not None:
                self.walk(node)

    def _push(self, frame: Frame) -> None:
        self.state.frames.append(frame)
        self._sink_valid = False

    def _pop(self) -> None:
        self.state.frames.pop()
        self._sink_valid = False

    # --- module, imports, classes and functions ---------------------------------------------

    def visit_Module(self, node: ast.Module) -> None:
        # Bind module-level classes and functions first: uses may precede definitions.
        state = self.state
        for stmt in node.body:
            if isinstance(stmt, (ast.ClassDef, *_FUNCTIONS)):
                state.module_scope.bind(stmt.name, state.qual(stmt.name))
        self.walk_all(node.body)

    # The names an import statement spells count as names read, as they always have: a module
    # handle imported elsewhere (`from .db import CONN`) counts as used outside the dataset.
    def visit_Import(self, node: ast.Import) -> None:
        bind_import(self.state.scope, node)
        self._read_names([part for alias in node.names
                          for part in (alias.name.split(".", 1)[0], alias.asname) if part])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        bind_import_from(self.state.scope, node, self.module_name, self.is_package)
        names = [node.module.split(".", 1)[0]] if node.module else []
        names += [part for alias in node.names for part in (alias.name, alias.asname)
                  if part and part != "*"]
        self._read_names(names)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        state = self.state
        if state.frames:  # nested classes: not analysed, but their calls still count
            self._push(None)
        else:
            bases = tuple(filter(None, (state.q(base) for base in node.bases)))
            cls = ClassState(node.name, state.qual(node.name), self.positions.span(node), bases)
            self.classes.append(cls)
            self._push(cls)
        self.walk_all(node.decorator_list)
        self.walk_all(node.bases)
        self.walk_all(node.keywords)
        self.walk_all(node.body)
        self._pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        state = self.state
        state.scope = scope = type(state.scope)(state.scope)
        owner = state.frame
        env = Env(state.module_env)
        if isinstance(owner, ClassState):
            method = MethodState(node.name)
            owner.methods.append(method)
            if node.name == "__init__":
                args = node.args
                owner.init_params = tuple(a.arg for a in (*args.posonlyargs, *args.args)[1:]) \
                    + tuple(a.arg for a in args.kwonlyargs)
            func = FunctionState(node.name, f"{owner.qualname}.{node.name}", False, False, env,
                                 method)
        else:
            decorators = {state.q(_decorator_callee(d)) for d in node.decorator_list}
            module_level = not state.frames
            qual = state.qual(node.name) if module_level else node.name
            func = FunctionState(node.name, qual, bool(decorators & CACHE_DECORATORS),
                                 module_level, env)
            if module_level:
                self.functions.append(func)
        self._push(func)
        self.walk_all(node.decorator_list)
        self.visit_arguments(node.args)
        self.walk_all(node.body)
        self._pop()
        state.scope = scope.parent or state.module_scope

    def visit_arguments(self, node: ast.arguments) -> None:
        """Only defaults hold syntax we read (annotations are not walked)."""
        self.walk_all(node.defaults)
        self.walk_all(node.kw_defaults)

    def visit_Global(self, node: ast.Global) -> None:
        func = self.state.enclosing_function()
        if func is not None:
            func.globals_declared.update(node.names)
        self._read_names(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._read_names(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.walk(node.type)
        if node.name:
            self._read_names((node.name,))
        self.walk_all(node.body)

    # Names a `match` pattern binds count as read, like other binding targets but assignments.
    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.walk(node.pattern)
        if node.name:
            self._read_names((node.name,))

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._read_names((node.name,))

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.walk_all(node.keys)
        self.walk_all(node.patterns)
        if node.rest:
            self._read_names((node.rest,))

    # --- pid guards -------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        guarded = _mentions_pid(node.test)
        self.state.pid_guard_depth += guarded
        self.walk(node.test)
        self.walk_all(node.body)
        self.walk_all(node.orelse)
        self.state.pid_guard_depth -= guarded

    # --- names and attributes ---------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        method = self.state.current_method()
        if method is not None and id(node) not in self.store_nodes:
            value = node.value
            if node.attr in self.config_attrs and self_attr(value) is not None:
                method.config_reads.add(id(value))
            cls = self.state.current_class()
            if is_self(value) or is_name(value, cls.name if cls else ""):
                method.attrs_read.add(node.attr)
                if id(node) not in method.config_reads:
                    method.attrs_used.add(node.attr)
        self.walk(node.value)

    def visit_Name(self, node: ast.Name) -> None:
        if id(node) in self.store_nodes:
            return
        sink = self._sink if self._sink_valid else self._new_sink()
        if sink is not None:
            sink.add(node.id)

    def _read_names(self, names: "tuple[str, ...] | list[str]") -> None:
        sink = self._sink if self._sink_valid else self._new_sink()
        if sink is not None:
            sink.update(names)

    def _new_sink(self) -> Optional[set[str]]:
        """Where a name read here is recorded (recomputed when the innermost frame changes:
        a quarter of the nodes are names)."""
        state = self.state
        method = state.current_method()
        if method is not None:
            sink: Optional[set[str]] = method.globals_read
        elif state.current_class() is None and not isinstance(state.frame, ClassState):
            sink = self.globals_outside
        else:
            sink = None
        self._sink_valid, self._sink = True, sink
        return sink

    # --- statements -------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._mark_store(target)
        for target in node.targets:
            self._assign(target, node.value)
        self.walk_all(node.targets)
        self.walk(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._mark_store(node.target)
        if node.value is not None:
            self._assign(node.target, node.value)
            self.walk(node.target)
            self.walk(node.value)
        else:
            self.walk(node.target)

    def _mark_store(self, target: ast.expr) -> None:
        if isinstance(target, (ast.Name, ast.Attribute)):
            self.store_nodes.add(id(target))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in elements(target):
                self._mark_store(element)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            handle = self.ev.handle_of(item.context_expr)
            name = item.optional_vars
            if handle is not None and type(name) is ast.Name:
                self._locals()[name.id] = handle.as_closed()
                self.store_nodes.add(id(name))
        self.children(node)

    def visit_Return(self, node: ast.Return) -> None:
        func = self.state.enclosing_function()
        if func is not None and node.value is not None and func.is_module_level:
            func.returns.extend(self.ev.refs_of(node.value))
            handle = self.ev.handle_of(node.value)
            if handle is not None:
                func.returned_handle = handle
        if node.value is not None:
            self.walk(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.state.q(node.func)
        if name in LOADERS:
            self.loaders.append(read_loader(node, self.ev))
        elif name in SET_START_METHOD and (node.args or node.keywords):
            self.start_method = string(first_arg(node)) or "?"
        if type(node.func) is ast.Attribute:
            self._method_call(node, node.func)
        self.walk(node.func)
        self.walk_all(node.args)
        for keyword in node.keywords:
            self.walk(keyword.value)

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        state = self.state
        method_name = func.attr
        frame = state.enclosing_function()
        if frame is not None:
            frame.method_calls.add(method_name)
        method, cls = state.current_method(), state.current_class()
        receiver = func.value
        if method is not None:
            if is_self(receiver):
                method.self_calls.add(method_name)
                if state.pid_guard_depth:
                    method.guarded_calls.add(method_name)
            if method_name == "__init__":
                if is_super(receiver):
                    method.calls_super_init = True
                else:
                    first = first_arg(node)
                    if cls is not None and first is not None and is_self(first):
                        method.calls_super_init = True  # Base.__init__(self, ...)
        if method_name in self.closers:
            self._record_close(receiver)
        elif method_name in CONTAINER_ADDERS and cls is not None and method is not None:
            attr = self_attr(receiver)
            if attr is not None:
                for arg in call_args(node):
                    handle = self.ev.handle_of(arg.value)
                    if handle is not None:
                        self._hold(cls, method, attr, handle)

    def _record_close(self, receiver: ast.expr) -> None:
        cls, method = self.state.current_class(), self.state.current_method()
        attr = self_attr(receiver)
        if attr is not None and cls is not None and method is not None:
            cls.closed.add((method.name, attr))

    # --- assignment -------------------------------------------------------------------------

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        state = self.state
        frame = state.frame
        if isinstance(frame, ClassState):
            if isinstance(target, ast.Name):
                for each in self.ev.handles_in(value):
                    frame.class_held[(target.id, id(each.call))] = each
            return
        if isinstance(target, ast.Attribute):
            self._attr_assign(target, value)
        elif isinstance(target, ast.Subscript):
            cls, method = state.current_class(), state.current_method()
            attr = self_attr(target.value) if cls and method else None
            handle = self.ev.handle_of(value) if attr else None
            if attr and handle and cls and method:
                self._hold(cls, method, attr, handle)
        elif isinstance(target, ast.Name):
            self._name_assign(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            targets = elements(target)
            if isinstance(value, (ast.Tuple, ast.List)) and len(targets) == len(value.elts):
                for element, item in zip(targets, elements(value)):  # a, b = x(), y()
                    self._assign(element, item)
                return
            refs = self.ev.refs_of(value)
            for element in targets:
                if isinstance(element, ast.Name) and refs:
                    state.env.assign_refs(element.id, refs)

    def _attr_assign(self, target: ast.Attribute, value: ast.expr) -> None:
        state = self.state
        cls, method = state.current_class(), state.current_method()
        attr = target.attr
        if cls is not None and method is not None and is_self(target.value):
            held = self.ev.handles_in(value)
            for each in held:
                self._hold(cls, method, attr, each)
            if not held and type(value) is ast.Name and value.id in cls.init_params \
                    and method.name == "__init__":
                cls.param_attrs.append((value.id, attr))
            refs = self.ev.refs_of(value)
            if refs:
                cls.attr_refs.setdefault(attr, []).extend(refs)
            return
        func = state.enclosing_function()
        if func is not None and not is_self(target.value) \
                and self.ev.handle_of(value) is not None:
            func.attr_handle_assigns.add(attr)  # e.g. worker_init_fn: info.dataset.s = ...

    def _hold(self, cls: ClassState, method: MethodState, attr: str, handle: Handle) -> None:
        if handle.closed:
            return
        if self.state.pid_guard_depth:
            method.guarded_attrs.add(attr)
        cls.held.setdefault((method.name, attr, id(handle.call)), handle)

    def _name_assign(self, name: str, value: ast.expr) -> None:
        state = self.state
        handle = self.ev.handle_of(value)
        func = state.enclosing_function()
        if handle is not None:
            if func is None and not state.frames:
                state.module_handles[name] = (handle, False)
            elif func is not None and name in func.globals_declared \
                    and not state.pid_guard_depth:
                state.module_handles[name] = (handle, False)
                if func.is_module_level:
                    state.module_handles.setdefault(func.name, (handle, True))
            else:
                self._locals()[name] = handle
        state.env.assign(name, self.ev.value_of(value))

    def _locals(self) -> dict[str, Handle]:
        """Where a local handle is bound: the innermost function, or the module."""
        return self.state.env.handles

    # --- expressions with an order of their own -----------------------------------------------

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.walk(node.body)
        self.walk(node.test)
        self.walk(node.orelse)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                self.walk(key)
            self.walk(value)

    def visit_Constant(self, node: ast.Constant) -> None:
        """A leaf; `None`, `True` and `False` count as names read (they are names to libcst,
        on which these facts were first defined)."""
        value = node.value
        if value is None or value is True or value is False:
            self._read_names((repr(value),))

    def module_refs(self) -> dict[str, list[DatasetRef]]:
        return self.state.module_env.all_refs()


def _decorator_callee(node: ast.expr) -> ast.expr:
    return node.func if type(node) is ast.Call else node


def _mentions_pid(node: ast.expr) -> bool:
    """A test that reads a process id: `os.getpid() != self.pid`, `if self._pid is None`."""
    for current in ast.walk(node):
        if isinstance(current, ast.Name):
            text = current.id
        elif isinstance(current, ast.Attribute):
            text = current.attr
        elif isinstance(current, ast.keyword):
            text = current.arg or ""
        else:
            continue
        if "pid" in text.lower():
            return True
    return False


# Fields that never hold syntax the hooks read: names, contexts, operators, annotations.
_SKIPPED = frozenset({
    "ctx", "type_comment", "kind", "annotation", "returns", "type_params", "id", "attr", "arg",
    "name", "names", "module", "level", "conversion", "simple", "is_async", "op", "ops",
})
_FIELDS: dict[type, tuple[str, ...]] = {}
_HOOKS: dict[type, Callable[[FactWalker, ast.AST], None]] = {
    getattr(ast, name[len("visit_"):]): hook
    for name, hook in vars(FactWalker).items()
    if name.startswith("visit_") and isinstance(getattr(ast, name[len("visit_"):], None), type)
}
_HOOKS[ast.AsyncFunctionDef] = _HOOKS[ast.FunctionDef]
_HOOKS[ast.AsyncWith] = _HOOKS[ast.With]
