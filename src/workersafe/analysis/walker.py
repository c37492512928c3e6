"""The one walk over a file's `ast`: a dispatch table from node type to hook, in source order.

The hooks keep the frames (module, class, function) and record, per class, where handles are
created and which attributes each method reads; per file, DataLoader calls and module-level
handles. What an expression *is* is asked of the `Evaluator` (values.py); how a DataLoader
call is read is in loader_args.py."""

from __future__ import annotations

import ast
from typing import Any, Callable, Final, Iterator, Optional, cast

from . import syntax
from ..facts import OWN_CLASS, CallSite, DatasetRef, HeldCall, LoaderCall
from ..frameworks import LOADER_LAST_PARTS, framework_loader
from ..records import field, record
from ..registry import Registry
from ..torchnames import CACHE_DECORATORS, LOADERS, SET_START_METHOD
from .loader_args import read_candidate_loader, read_framework_loader, read_loader
from .names import Scope, annotated_class, bind_import, bind_import_from, imported_by_call
from .positions import Positions
from .state import (
    ClassState, Env, Frame, FunctionState, Handle, MethodState, State,
)
from .values import (
    Evaluator, argument, elements, first_arg, int_value, is_member_key, is_name, is_none,
    is_self, is_string_key, is_super, or_self, presence, self_attr, string, unset_tests,
)

# Deeper code is reported (WS001), not analysed: nobody writes it, and libcst (which `fix`
# gives the files with findings) recurses in native code once per level.
MAX_DEPTH: Final = 1000


class TooDeep(Exception):
    """The file nests deeper than MAX_DEPTH; the message is for WS001."""

    def __init__(self, node: Optional[ast.AST]) -> None:
        super().__init__(f"too deeply nested to analyse (an expression more than {MAX_DEPTH} "
                         f"levels deep, line {getattr(node, 'lineno', '?')})")


# Appending a handle to `self.x` keeps it on the instance as surely as `self.x = handle`.
CONTAINER_ADDERS: Final = frozenset({"append", "add", "extend", "insert", "setdefault", "update"})
# Calls whose value is never a handle a project function returns (not worth a link-time look).
_NOT_HANDLE_CALLEES: Final = frozenset({
    "super", "len", "list", "dict", "tuple", "set", "int", "str", "float", "bool", "range",
    "sorted", "print", "isinstance"})
# Registers what each forked child runs (`after_in_child=open_archive.cache_clear`).
_REGISTER_AT_FORK: Final = "os.register_at_fork"
# Libraries whose functions are never a project function a dataset is passed to.
_LIBRARY_ROOTS: Final = frozenset({
    "os", "sys", "re", "json", "math", "random", "time", "logging", "pickle", "itertools",
    "functools", "collections", "pathlib", "shutil", "glob", "warnings", "argparse", "typing",
    "copy", "numpy", "torch", "torchvision", "PIL", "cv2", "pandas", "scipy", "sklearn",
    "builtins", "tqdm", "yaml", "h5py", "lmdb", "io", "struct", "subprocess",
})
_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef)
_AST: Final = ast.AST
_NAME: Final = ast.Name
_CONSTANT: Final = ast.Constant
_ATTRIBUTE: Final = ast.Attribute
_CALL: Final = ast.Call
_ASSIGN: Final = ast.Assign
_SUBSCRIPT: Final = ast.Subscript
_EXPR: Final = ast.Expr
_COMPARE: Final = ast.Compare
_FUNCTION_DEF: Final = ast.FunctionDef
_IF: Final = ast.If
_TUPLE: Final = ast.Tuple
_LIST: Final = ast.List
_RETURN: Final = ast.Return
_BIN_OP: Final = ast.BinOp
_FOR: Final = ast.For
_CLASS_DEF: Final = ast.ClassDef
# The tests that may check an attribute of self is unset (values.unset_tests).
_MAYBE_UNSET: Final = frozenset({ast.Compare, ast.UnaryOp, ast.BoolOp})
# Loader names a star import may bring in (a project package re-exporting torch's)
_STAR_LOADER_NAMES: Final = frozenset({"DataLoader"})


@record()
class SelfUses:
    """What the methods of one class do with attributes of self (for the remedy facts)."""

    indexed: set[str] = field(default_factory=set)  # `self.x[i]`
    members: set[tuple[str, str, str]] = field(default_factory=set)  # (method, x, m)
    # the methods testing whether an attribute of self is there (values.presence: `if self.x
    # is None:`, `a if self.x else b`) or falling back from it (`self.x or b`), nested code
    # included (annotations are not walked)
    presence: set[str] = field(default_factory=set)
    # the methods that may hold a lazy accessor (nested code included): an `if` whose test
    # checks an attribute of self is unset (values.unset_tests), an assignment
    # `self.x = self.x or b` (values.or_self); the others record none (remedies.py)
    lazy: set[str] = field(default_factory=set)


class FactWalker:
    """Walks one module; `extract.extract_facts` turns what it found into `FileFacts`."""

    def __init__(self, path: str, module_name: str, is_package: bool, registry: Registry,
                 positions: Positions) -> None:
        self.path = path
        self.module_name = module_name
        self._own = f"{module_name}."  # this module's own definitions, qualified
        self.is_package = is_package
        self.state = State(module_name, registry)
        self.ev = Evaluator(self.state, positions)
        self.positions = positions
        self.config_attrs = self.state.sets.config_attrs
        self.closers = self.state.sets.closers
        self.classes: list[ClassState] = []
        self.functions: list[FunctionState] = []
        self.function_names: set[str] = set()  # qualified names of `functions`
        self.loaders: list[LoaderCall] = []
        self.loader_candidates: list[LoaderCall] = []
        self.calls: list[CallSite] = []
        self.loop_items: dict[str, str] = {}  # loop variable → the self attribute it iterates
        self._choice: Optional[tuple[str, str]] = None  # `if name == "a":` (param, "a")
        self.globals_outside: set[str] = set()
        self.start_method = ""  # set at module level (`if __name__ == "__main__":` too)
        self.scoped_starts: dict[str, str] = {}  # function or method → the start method it sets
        self.entry_calls: set[str] = set()  # functions module-level code calls (or passes on)
        # module-level functions whose cache each forked process empties:
        # `os.register_at_fork(after_in_child=open_archive.cache_clear)` at module level
        self.cleared_at_fork: set[str] = set()
        self.store_nodes: set[int] = set()  # id() of assignment targets: not reads
        # For the remedy facts (remedies.py), gathered here rather than by walking each method
        # again: per module-level class (by id() of its node), the attributes of self its
        # methods subscript (`self.x[i]`) and the members of them they use (`self.x.get`).
        self.self_uses: dict[int, SelfUses] = {}
        self._self_uses: Optional[SelfUses] = None  # the class being walked
        self._uses_method = ""  # the method (of that class) being walked, nested code included
        # id() of the method definitions that call their base's `__init__` (super().__init__,
        # Base.__init__(self)): baseinit.py reads only those
        self.super_init_defs: set[int] = set()
        self._method_def: Optional[ast.AST] = None  # the method being walked (not nested code)
        self._sink: Optional[set[str]] = None
        self._sink_valid = False
        self.depth = 0

    # --- traversal ----------------------------------------------------------------------------

    def walk(self, node: ast.AST) -> None:
        kind = type(node)
        if kind is _NAME:  # a quarter of the nodes: visit_Name, without a frame of its own
            if self.depth >= MAX_DEPTH:
                raise TooDeep(node)
            if id(node) not in self.store_nodes:
                sink = self._sink if self._sink_valid else self._new_sink()
                if sink is not None:
                    sink.add(node.id)  # type: ignore[attr-defined]
            return
        if kind is _CONSTANT:  # a leaf; see visit_Constant
            if self.depth >= MAX_DEPTH:
                raise TooDeep(node)
            value = node.value  # type: ignore[attr-defined]
            if value is None or value is True or value is False:
                self._read_names((repr(value),))
            return
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooDeep(node)
        # The most frequent hooked nodes, called directly (compiled by mypyc, a native call;
        # through `_HOOKS`, a generic one), in order of frequency; the others through `_HOOKS`.
        if kind is _ATTRIBUTE:
            self.visit_Attribute(node)  # type: ignore[arg-type]
        elif kind is _CALL:
            self.visit_Call(node)  # type: ignore[arg-type]
        elif kind is _ASSIGN:
            self.visit_Assign(node)  # type: ignore[arg-type]
        elif kind is _SUBSCRIPT:
            self.visit_Subscript(node)  # type: ignore[arg-type]
        elif kind is _EXPR:
            self.walk(node.value)  # type: ignore[attr-defined]
        elif kind is _COMPARE:
            self.visit_Compare(node)  # type: ignore[arg-type]
        elif kind is _FUNCTION_DEF:
            self.visit_FunctionDef(node)  # type: ignore[arg-type]
        elif kind is _IF:
            self.visit_If(node)  # type: ignore[arg-type]
        elif kind is _TUPLE or kind is _LIST:
            self.walk_all(node.elts)  # type: ignore[attr-defined]
        elif kind is _RETURN:
            self.visit_Return(node)  # type: ignore[arg-type]
        elif kind is _BIN_OP:
            self.visit_BinOp(node)  # type: ignore[arg-type]
        elif kind is _FOR:
            self.visit_For(node)  # type: ignore[arg-type]
        elif kind is _CLASS_DEF:
            self.visit_ClassDef(node)  # type: ignore[arg-type]
        else:
            hook = _HOOKS.get(kind)
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
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                if value:
                    self.walk_all(value)
            elif isinstance(value, ast.AST):
                self.walk(value)

    def walk_all(self, nodes: list[Any]) -> None:
        """`walk` of each node (and None or a string skipped), names and constants inline (as
        `walk` reads them). (A list of nodes: compiled by mypyc, an indexed loop.)"""
        for node in nodes:
            kind = type(node)
            if kind is _NAME:
                if self.depth >= MAX_DEPTH:
                    raise TooDeep(node)
                if id(node) not in self.store_nodes:
                    sink = self._sink if self._sink_valid else self._new_sink()
                    if sink is not None:
                        sink.add(node.id)
            elif kind is _CONSTANT:
                if self.depth >= MAX_DEPTH:
                    raise TooDeep(node)
                value = node.value
                if value is None or value is True or value is False:
                    self._read_names((repr(value),))
            elif isinstance(node, _AST):
                self.walk(node)

    # The most frequent nodes without a hook of their own: `children` of each, field by field.
    def visit_Expr(self, node: ast.Expr) -> None:
        self.walk(node.value)

    def visit_Compare(self, node: ast.Compare) -> None:
        self.walk(node.left)
        self.walk_all(node.comparators)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.walk(node.left)
        self.walk(node.right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self.walk(node.operand)

    def visit_Tuple(self, node: ast.Tuple | ast.List) -> None:
        self.walk_all(node.elts)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.walk_all(node.values)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        self.walk(node.value)
        if node.format_spec is not None:
            self.walk(node.format_spec)

    def _push(self, frame: Frame) -> None:
        self.state.push(frame)
        self._sink_valid = False

    def _pop(self) -> None:
        self.state.pop()
        self._sink_valid = False

    # --- module, imports, classes and functions ---------------------------------------------

    def visit_Module(self, node: ast.Module) -> None:
        # Bind module-level classes and functions first: uses may precede definitions.
        state = self.state
        for stmt in node.body:
            if isinstance(stmt, (syntax.ClassDef, *_FUNCTIONS)):
                state.bind(stmt.name, state.qual(stmt.name), state.module_scope)
        self.walk_all(node.body)

    # The names an import statement spells count as names read, as they always have: a module
    # handle imported elsewhere (`from .db import CONN`) counts as used outside the dataset.
    def visit_Import(self, node: ast.Import) -> None:
        bind_import(self.state.scope, node)
        self.state.rebound()
        self._read_names([part for alias in node.names
                          for part in (alias.name.split(".", 1)[0], alias.asname) if part])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        bind_import_from(self.state.scope, node, self.module_name, self.is_package,
                         self.state.sets.module_roots if node.level else frozenset())
        self.state.rebound()
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
            cls.registered = [r for r in map(self._registered, node.decorator_list) if r]
            self.classes.append(cls)
            self._push(cls)
        outer_uses = self._self_uses
        if not state.frames[:-1]:
            self._self_uses = self.self_uses[id(node)] = SelfUses()
        if node.decorator_list:
            self.walk_all(node.decorator_list)
        self.walk_all(node.bases)
        if node.keywords:
            self.walk_all(node.keywords)
        self.walk_all(node.body)
        self._self_uses = outer_uses
        self._pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        state = self.state
        state.enter_scope()
        owner = state.frame
        env = Env(state.module_env)
        if isinstance(owner, ClassState):
            method = MethodState(node.name)
            owner.methods.append(method)
            if node.name == "__init__":
                args = node.args
                owner.init_params = tuple(a.arg for a in (*args.posonlyargs, *args.args)[1:]) \
                    + tuple(a.arg for a in args.kwonlyargs)
                for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                    named = annotated_class(arg.annotation) if arg.annotation else None
                    annotated = state.q(named) if named is not None else None
                    if annotated:
                        owner.param_types.append((arg.arg, annotated))
                owner.init_int_defaults = _int_defaults(args)
            func = FunctionState(node.name, f"{owner.qualname}.{node.name}", False, False, env,
                                 method)
            if node.name != "__init__":  # `def evaluate(self, dataset)`: what callers pass
                static = any(state.q(d) == "staticmethod" for d in node.decorator_list)
                _bind_params(node.args, func.qualname, env, skip=0 if static else 1)
        else:
            decorators = {state.q(_decorator_callee(d)) for d in node.decorator_list}
            module_level = not state.frames
            qual = state.qual(node.name) if module_level else node.name
            func = FunctionState(node.name, qual, bool(decorators & CACHE_DECORATORS),
                                 module_level, env)
            if module_level:
                self.functions.append(func)
                self.function_names.add(qual)
                func.params = _bind_params(node.args, qual, env)
                func.node = node
                if decorators - CACHE_DECORATORS:  # `@hydra.main(...)`, `@app.command()`:
                    self.entry_calls.add(qual)  # the decorator is given the function to run
        outer_method, outer_def = self._uses_method, self._method_def
        self._method_def = node if isinstance(owner, ClassState) else None
        if isinstance(owner, ClassState):
            self._uses_method = node.name
        self._push(func)
        if node.decorator_list:
            self.walk_all(node.decorator_list)
        self.visit_arguments(node.args)
        self.walk_all(node.body)
        self._pop()
        self._uses_method, self._method_def = outer_method, outer_def
        state.leave_scope()

    def visit_arguments(self, node: ast.arguments) -> None:
        """Only defaults hold syntax we read (annotations are not walked)."""
        if node.defaults:
            self.walk_all(node.defaults)
        if node.kw_defaults:
            self.walk_all(node.kw_defaults)

    def visit_Global(self, node: ast.Global) -> None:
        func = self.state.function
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
        if self._uses_method and self._self_uses is not None:
            if type(node.test) in _MAYBE_UNSET and self._uses_method not in self._self_uses.lazy \
                    and unset_tests(node.test):
                self._self_uses.lazy.add(self._uses_method)
            if presence(node.test)[0] is not None:
                self._self_uses.presence.add(self._uses_method)
        guarded = self.ev.identity_possible and self.ev.is_identity(node.test)
        self.state.pid_guard_depth += guarded
        self.walk(node.test)
        outer, choice = self._choice, self._chosen_by(node.test)
        self._choice = choice or outer
        self.walk_all(node.body)
        self._choice = outer
        if node.orelse:
            self.walk_all(node.orelse)
        self.state.pid_guard_depth -= guarded

    def visit_Match(self, node: ast.Match) -> None:
        """`match name: case "lmdb": return LMDB(p)`: as `if name == "lmdb":`."""
        self.walk(node.subject)
        outer = self._choice
        for case in node.cases:
            pattern = case.pattern
            text = string(cast("ast.MatchValue", pattern).value) \
                if type(pattern) is syntax.MatchValue else None
            self._choice = (self._param_choice(node.subject, text) if text is not None
                            else None) or outer
            self.walk(pattern)
            if case.guard is not None:
                self.walk(case.guard)
            self.walk_all(case.body)
        self._choice = outer

    def _chosen_by(self, test: ast.expr) -> Optional[tuple[str, str]]:
        """`if name == "lmdb":` in a module-level function, `name` its parameter: (the
        parameter, "lmdb"), the returns below are what that argument chooses."""
        if type(test) is not syntax.Compare or len(test.ops) != 1 \
                or type(test.ops[0]) is not syntax.Eq:
            return None
        left, right = test.left, test.comparators[0]
        if string(left) is not None:
            left, right = right, left
        text = string(right)
        return self._param_choice(left, text) if text is not None else None

    def _param_choice(self, subject: ast.expr, text: str) -> Optional[tuple[str, str]]:
        """(the parameter `subject` is, `text`) when it is a parameter of the module-level
        function being walked."""
        func = self.state.function
        if func is None or not func.is_module_level:
            return None
        refs = self.state.env.refs(subject.id) if type(subject) is syntax.Name else None
        if not refs or len(refs) != 1 or refs[0].kind != "param" \
                or not refs[0].target.startswith(f"{func.qualname}#"):
            return None
        return refs[0].target, text

    def _registered(self, decorator: ast.expr) -> Optional[tuple[str, str]]:
        """`@DATASETS.register_module()`, `@registry.register_task("x")`,
        `@register_dataset(name="x")`: (the qualified callee, the name given or "")."""
        callee = self.state.q(_decorator_callee(decorator))
        if not callee or not callee.rpartition(".")[2].startswith("register"):
            return None
        name = None
        if type(decorator) is syntax.Call:
            name = string(argument(decorator, 0, "name"))
        return callee, name or ""

    def visit_For(self, node: ast.For) -> None:
        self._bind_loop_target(node.target, node.iter)
        attr = self_attr(node.iter)
        if attr is None or type(node.target) is not syntax.Name:
            self.children(node)
            return
        # `for conn in self.conns: conn.close()` closes what self.conns holds
        name = node.target.id
        outer = self.loop_items.get(name)
        self.loop_items[name] = attr
        self.children(node)
        if outer is None:
            del self.loop_items[name]
        else:
            self.loop_items[name] = outer

    def visit_ListComp(self, node: ast.ListComp) -> None:
        """Generators first: they bind the names the element uses."""
        self.walk_all(node.generators)
        self.walk(node.elt)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self.walk_all(node.generators)
        self.walk(node.key)
        self.walk(node.value)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._bind_loop_target(node.target, node.iter)
        self.children(node)

    def _bind_loop_target(self, target: ast.expr, iterable: ast.expr) -> None:
        """`for ds in datasets:` — ds may be each dataset the iterable holds."""
        names = [target] if type(target) is syntax.Name else elements(target)
        refs = None
        for name in names:
            if type(name) is syntax.Name:
                refs = self.ev.refs_of(iterable) if refs is None else refs
                if refs:
                    self.state.env.assign_refs(name.id, refs)

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert isinstance(reader, Reader)` in `__init__` types the parameter."""
        test, cls = node.test, self.state.cls
        method = self.state.method
        if cls is not None and method is not None and method.name == "__init__" \
                and type(test) is syntax.Call and is_name(test.func, "isinstance") \
                and len(test.args) == 2 and type(test.args[0]) is syntax.Name:
            checked = self.state.q(test.args[1])
            if checked:
                cls.param_types.append((test.args[0].id, checked))
        self.children(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        method = self.state.method
        for target in node.targets:
            attr = self_attr(target)
            if attr is not None and method is not None:
                method.effects.append(f"reset:{attr}")
        self.children(node)

    # --- names and attributes ---------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        method = self.state.method
        read = method is not None and id(node) not in self.store_nodes  # (an attribute read)
        if isinstance(value, syntax.Name):  # (most attributes)
            if read and method is not None:  # `self.x`, `cls.x`, `<its class>.x`
                cls = self.state.cls
                if value.id in ("self", "cls") or (cls is not None and value.id == cls.name):
                    method.attrs_read.add(node.attr)
                    if id(node) not in method.config_reads:
                        method.attrs_used.add(node.attr)
            # `walk` of the name, inline
            if self.depth >= MAX_DEPTH:
                raise TooDeep(value)
            if id(value) not in self.store_nodes:
                sink = self._sink if self._sink_valid else self._new_sink()
                if sink is not None:
                    sink.add(value.id)
                    if id(node) not in self.store_nodes:
                        read_attr = self.imported_attr(self.state.scope, value.id, node.attr)
                        if read_attr is not None:
                            sink.add(read_attr)
            return
        if type(value) is syntax.Attribute:
            attr = self_attr(value)
            if attr is not None:
                if self._uses_method and self._self_uses is not None:
                    # `self.reader.get(k)`: what it uses of an object it keeps
                    self._self_uses.members.add((self._uses_method, attr, node.attr))
                if read and method is not None and node.attr in self.config_attrs:
                    method.config_reads.add(id(value))
        self.walk(value)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self._uses_method and self._self_uses is not None:
            attr = self_attr(node.value)
            if attr is not None:
                self._self_uses.indexed.add(attr)
        self.walk(node.value)
        self.walk(node.slice)

    def visit_Name(self, node: ast.Name) -> None:
        if id(node) in self.store_nodes:
            return
        sink = self._sink if self._sink_valid else self._new_sink()
        if sink is not None:
            sink.add(node.id)

    def imported_attr(self, scope: Scope, head: str, attr: str) -> Optional[str]:
        """`head.attr` qualified when `head` is a module (or a name) another module's import
        binds in `scope`: `clients.SESSION`, `zio.get_zip` → "utils.io.get_zip", a name read
        beside `head` (the linker resolves it); None for this module's own or a local's."""
        imported = scope.lookup(head)
        if imported is None or imported.startswith(self._own):
            return None
        return f"{imported}.{attr}"

    def _read_names(self, names: "tuple[str, ...] | list[str]") -> None:
        sink = self._sink if self._sink_valid else self._new_sink()
        if sink is not None:
            sink.update(names)

    def _new_sink(self) -> Optional[set[str]]:
        """Where a name read here is recorded (recomputed when the innermost frame changes:
        a quarter of the nodes are names)."""
        state = self.state
        method = state.method
        if method is not None:
            sink: Optional[set[str]] = method.globals_read
        elif state.cls is None and not isinstance(state.frame, ClassState):
            sink = self.globals_outside
        else:
            sink = None
        self._sink_valid, self._sink = True, sink
        return sink

    # --- statements -------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        if type(node.value) is syntax.BoolOp and self._uses_method and self._self_uses is not None \
                and any(or_self(node.value, attr) for attr in map(self_attr, node.targets) if attr):
            self._self_uses.lazy.add(self._uses_method)
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
        if isinstance(target, (syntax.Name, syntax.Attribute)):
            self.store_nodes.add(id(target))
        elif isinstance(target, (syntax.Tuple, syntax.List)):
            for element in elements(target):
                self._mark_store(element)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            handle = self.ev.handle_of(item.context_expr)
            name = item.optional_vars
            if handle is not None and type(name) is syntax.Name:
                self._locals()[name.id] = handle.as_closed()
                self.store_nodes.add(id(name))
        self.children(node)

    def visit_Return(self, node: ast.Return) -> None:
        func = self.state.function
        value = node.value
        if func is not None and value is not None and (func.is_module_level or func.method):
            handle = self.ev.handle_of(value)
            callee = self._callee(value) if handle is None else ""
            if func.method is not None:
                if handle is not None and not handle.closed:
                    func.method.returns_handle = handle
                func.method.returns_call = func.method.returns_call or callee
                if handle is None:  # `return cls(root)`, `return self.train_set`: a factory
                    func.method.returns.extend(  # or getter method; `return DATASETS[name]`
                        r for r in self.ev.refs_of(value) if r.kind in ("attr", "param")
                        or (r.kind in ("call", "name")
                            and r.target.partition(".")[0] not in _LIBRARY_ROOTS))
            else:
                refs = self.ev.refs_of(value)
                if self._choice is not None:
                    start = len(func.returns)
                    func.chosen.extend((start + i, *self._choice) for i in range(len(refs)))
                func.returns.extend(refs)
                if handle is not None:
                    func.returned_handle = handle
                func.returns_call = func.returns_call or callee
        if node.value is not None:
            self.walk(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        state = self.state
        func = node.func
        name = state.q(func)
        outer = state.outer
        plain = False  # not a loader nor `set_start_method` (most calls)
        if name is None:  # (a call of a call's result, of a subscript)
            plain = True
        elif name in LOADERS:
            self.loaders.append(read_loader(node, self.ev, _qualname(outer)))
        elif name.rpartition(".")[2] in LOADER_LAST_PARTS and (
                row := framework_loader(name, state.scope.all_star_modules())) is not None:
            self.loaders.append(read_framework_loader(node, row, self.ev, _qualname(outer)))
        elif name in _STAR_LOADER_NAMES and any(state.scope.all_star_modules()):
            # `DataLoader` from `from utils import *`: the linker decides (LoaderCall.star_name)
            self.loaders.append(read_loader(node, self.ev, _qualname(outer), star_name=name))
        elif name in SET_START_METHOD and (node.args or node.keywords):
            method = string(first_arg(node)) or "?"
            if outer is None:
                self.start_method = method
            else:
                self.scoped_starts.setdefault(outer.qualname, method)
        else:
            plain = True
        if plain:
            if outer.is_module_level if outer is not None else not state.frames:
                self._note_calls(node, name, outer)  # (it notes nothing elsewhere)
                if name == _REGISTER_AT_FORK and outer is None:
                    self._note_cleared_at_fork(node)
            if not (node.args or node.keywords):
                pass  # (no argument: no call site)
            elif name is not None and name not in _NOT_HANDLE_CALLEES \
                    and name.partition(".")[0] not in _LIBRARY_ROOTS \
                    and self._function_call(func):
                self._function_site(node, name, outer)
            elif type(func) is syntax.Attribute:
                self._method_site(node, func)
        if type(func) is syntax.Attribute:
            if func.attr in _CACHE_ADDERS:
                self._cache_add(node, func)  # before the call binds the container here
            self._method_call(node, func)
        self.walk(func)
        if node.args:
            self.walk_all(node.args)
        if node.keywords:
            self.walk_all([keyword.value for keyword in node.keywords])

    def _function_site(self, node: ast.Call, name: str, outer: Optional[FunctionState]
                       ) -> None:
        """`val(net, test_dataset)`: a call site linked to val's parameters, when an argument
        may be a dataset; of a class, also read as a DataLoader call (the linker decides)."""
        ev = self.ev
        ev.steady(node)  # (nothing is bound below: its arguments' refs are computed once)
        args = ev.arg_refs(node, with_refs=True)
        if any(a.refs for a in args):
            self.calls.append(CallSite(name, tuple(args), self.positions.span(node)))
            if name not in self.function_names \
                    and name.rpartition(".")[2][:1].isupper():  # a class: a DataLoader?
                self.loader_candidates.append(
                    read_candidate_loader(node, name, ev, _qualname(outer)))
        ev.steady(None)

    def _outer_function(self) -> Optional[FunctionState]:
        """The outermost function (or method) the walk is in: what a call inside it runs for."""
        return self.state.outer

    def _note_calls(self, node: ast.Call, name: Optional[str],
                    outer: Optional[FunctionState]) -> None:
        """The project functions module-level code or a module-level function calls, or passes
        on (`mp.spawn(main_worker)`, `Process(target=run)`): which code runs from the entry
        (for the `set_start_method` calls it reaches)."""
        if outer is None:
            if self.state.frames:  # a class body
                return
            sink = self.entry_calls
        elif outer.is_module_level:
            sink = outer.calls
        else:
            return
        state = self.state
        scope, bindings = state.scope, state.env.bindings
        # the callee (`f(...)`, `mod.f(...)`) and each argument that is a bare name
        # (`mp.spawn(main_worker)`); not a local, `obj.m` or `a.b` passed on; each only if
        # not a local and bound in the scope (a module-level function or import)
        func = root = node.func
        while type(root) is syntax.Attribute:  # (`_root`, inline)
            root = root.value
        if type(root) is syntax.Name and root.id not in bindings \
                and scope.lookup(root.id) is not None:
            _note_called(sink, name or state.q(func))
        for arg in node.args:
            if type(arg) is syntax.Name and arg.id not in bindings \
                    and scope.lookup(arg.id) is not None:
                _note_called(sink, state.q(arg))
        for keyword in node.keywords:
            arg = keyword.value
            if type(arg) is syntax.Name and arg.id not in bindings \
                    and scope.lookup(arg.id) is not None:
                _note_called(sink, state.q(arg))

    def _function_call(self, func: ast.expr) -> bool:
        """A call of a function by name (`val(...)`, `mod.val(...)` with `mod` imported),
        not a method of some object: only those are linked to parameters."""
        if type(func) is syntax.Name:
            return True
        root = _root(func)
        return type(root) is syntax.Name and not is_self(root) \
            and self.state.scope.lookup(root.id) is not None \
            and root.id not in self.state.env.bindings

    def _method_site(self, node: ast.Call, func: ast.Attribute) -> None:
        """`self.evaluate(ds)`, `trainer.fit(ds)`, `Trainer(cfg).fit(ds)`: a call site of a
        method whose parameters the linker may follow to a loader, when an argument may be a
        dataset and the receiver a project object (`self`: this class)."""
        if func.attr in CONTAINER_ADDERS:
            return
        receiver = func.value
        if is_self(receiver):
            cls = self.state.cls
            if cls is None:
                return
            args = self.ev.arg_refs(node, with_refs=True)  # (first: most calls pass no dataset)
            refs = [DatasetRef("call", cls.qualname)] if args else []
        elif type(receiver) is syntax.Name and self.state.env.refs(receiver.id) \
                or type(receiver) in (syntax.Call, syntax.Attribute):
            refs = [r for r in self.ev.refs_of(receiver) if r.target != OWN_CLASS]
            args = self.ev.arg_refs(node, with_refs=True) if refs else []
        else:
            return
        if not refs:
            return
        if any(a.refs for a in args):
            self.calls.append(CallSite(func.attr, tuple(args), self.positions.span(node),
                                       tuple(refs)))

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        state = self.state
        method_name = func.attr
        frame = state.function
        if frame is not None:
            frame.method_calls.add(method_name)
        method, cls = state.method, state.cls
        receiver = func.value
        if method is not None:
            if is_self(receiver):
                method.self_calls.add(method_name)
                method.effects.append(f"call:{method_name}")
                if state.pid_guard_depth:
                    method.guarded_calls.add(method_name)
            elif is_super(receiver) and method_name != "__init__":
                method.super_calls.add(method_name)
            if method_name == "__init__":
                if is_super(receiver):
                    method.calls_super_init = True
                    method.effects.append("call:__init__")
                    self.super_init_defs.add(id(self._method_def))
                else:
                    first = first_arg(node)
                    if cls is not None and first is not None and is_self(first):
                        method.calls_super_init = True  # Base.__init__(self, ...)
                        method.effects.append("call:__init__")
                        self.super_init_defs.add(id(self._method_def))
        if method_name in self.closers:
            self._record_close(receiver)
        elif method_name in CONTAINER_ADDERS:
            self._add_to_container(node, receiver)

    def _add_to_container(self, node: ast.Call, receiver: ast.expr) -> None:
        """`self.envs.append(lmdb.open(p))` holds a handle; `datasets.append(DS(p))` and
        `self.dbs.append(Inner(p))` collect datasets."""
        state = self.state
        cls, method = state.cls, state.method
        attr = self_attr(receiver)
        if attr is None and type(receiver) is syntax.Subscript \
                and not self.ev.is_identity(receiver.slice):  # `self.lmdbs[t].append(DS(p))`
            attr = self_attr(receiver.value)
        for arg in self.ev.args(node):
            handle = self.ev.handle_of(arg.value)
            if handle is not None:
                if attr is not None and cls is not None and method is not None:
                    self._hold(cls, method, attr, handle)
                continue
            refs = self.ev.refs_of(arg.value)
            if attr is not None and cls is not None and method is not None:
                self._held_call(cls, method, attr, arg.value)
                if refs:
                    cls.attr_refs.setdefault(attr, []).extend(refs)
            elif refs and type(receiver) is syntax.Name:
                state.env.assign_refs(receiver.id, refs)

    def _record_close(self, receiver: ast.expr) -> None:
        cls, method = self.state.cls, self.state.method
        attr = self_attr(receiver)
        if attr is None and type(receiver) is syntax.Name:
            attr = self.loop_items.get(receiver.id)
        if attr is not None and cls is not None and method is not None:
            cls.closed.add((method.name, attr))
            cls.closed_held.update(key for key in cls.held
                                   if key[0] == method.name and key[1] == attr)
            method.effects.append(f"close:{attr}")

    # --- assignment -------------------------------------------------------------------------

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        state = self.state
        frame = state.frames[-1] if state.frames else None
        if isinstance(frame, ClassState):
            if isinstance(target, syntax.Name):
                for each in self.ev.handles_in(value):
                    frame.class_held[(target.id, id(each.call))] = each
            return
        kind = type(target)
        # (imported_by_call's first test)
        if (kind is syntax.Name or kind is syntax.Tuple or kind is syntax.List) and (
                type(value) is syntax.Subscript or isinstance(value, syntax.Call)
                and value.args and type(value.args[0]) is syntax.Constant):
            self._bind_imported(target, value)
        if isinstance(target, syntax.Name):  # (most targets)
            self._name_assign(target.id, value)
        elif isinstance(target, syntax.Attribute):
            self._attr_assign(target, value)
        elif isinstance(target, syntax.Subscript):
            cls, method = state.cls, state.method
            attr = self_attr(target.value) if cls and method else None
            handle = self.ev.handle_of(value) if attr else None
            if attr and handle and cls and method:
                # `self.h[worker_id] = open(p)`: one handle per process
                per_process = self.ev.is_identity(target.slice)
                self._hold(cls, method, attr, handle, per_process)
            elif attr and cls and method and not self.ev.is_identity(target.slice):
                self._held_call(cls, method, attr, value)  # `self.envs[k] = self.open_db(p)`
            if handle is None and attr is None and type(target.value) is syntax.Name \
                    and not self.ev.is_identity(target.slice):  # `_CACHE[os.getpid(), p]`
                # before the refs below bind the name here (`zf = _CACHE.get(p)` has refs)
                self._cache_store(target.value.id, value)
            refs = self.ev.refs_of(value) if handle is None else []
            if refs and attr and cls:
                cls.attr_refs.setdefault(attr, []).extend(refs)
            elif refs and type(target.value) is syntax.Name:  # datasets[name] = DS(p)
                state.env.assign_refs(target.value.id, refs)
        elif isinstance(target, (syntax.Tuple, syntax.List)):
            targets = elements(target)
            if isinstance(value, (syntax.Tuple, syntax.List)) and len(targets) == len(value.elts):
                for element, item in zip(targets, elements(value)):  # a, b = x(), y()
                    self._assign(element, item)
                return
            refs = self.ev.refs_of(value)
            cls, method = state.cls, state.method
            for element in targets:
                if isinstance(element, syntax.Name) and refs:
                    state.env.assign_refs(element.id, refs)
                elif type(element) is syntax.Attribute and refs and cls is not None \
                        and method is not None and is_self(element.value):
                    # `self.train_set, self.val_set = random_split(ds, [0.8, 0.2])` in a
                    # data module; not in a dataset's own methods (`self.data, self.slices =
                    # torch_load(p)` in every pytorch_geometric InMemoryDataset: its parts
                    # are its data, and following them parsed half as many files again)
                    if not any(b.endswith("Dataset") for b in cls.bases):
                        cls.attr_refs.setdefault(element.attr, []).extend(refs)

    def _bind_imported(self, target: ast.expr, value: ast.expr) -> None:
        """`lmdb = optional_import("lmdb")`, `lmdb, _ = optional_import("lmdb")`,
        `h5 = importlib.import_module("h5py")`: the name is that module, as if imported."""
        if type(target) is not syntax.Name:
            names = elements(target)
            target = names[0] if names else target
        if type(target) is syntax.Name:
            module = imported_by_call(value)
            if module is not None:
                self.state.bind(target.id, module)

    def _attr_assign(self, target: ast.Attribute, value: ast.expr) -> None:
        state = self.state
        cls, method = state.cls, state.method
        attr = target.attr
        if cls is not None and method is not None and is_self(target.value):
            held = self.ev.handles_in(value)
            # `{worker_id: tarfile.open(p)}`: a handle per process, re-opened for a new key
            per_process = type(value) is syntax.Dict and any(
                k is not None and self.ev.is_identity(k) for k in value.keys)
            for each in held:
                self._hold(cls, method, attr, each, per_process)
            if not held:
                if is_none(value):
                    method.effects.append(f"reset:{attr}")
                elif self.ev.is_identity(value):
                    cls.identity_attrs.add(attr)
                else:
                    self._held_call(cls, method, attr, value)
            if method.name == "__init__":  # `self.h5 = source`, also as one alternative:
                # `source if isinstance(source, h5py.File) else h5py.File(source)`, `h5 or ...`
                for name in _alternative_names(value):  # (a loop: see state._add_new)
                    if name in cls.init_params and (name, attr) not in cls.param_attrs:
                        cls.param_attrs.append((name, attr))
                for name in _displayed_names(value):  # `self.datasets = [first, second]`
                    if name in cls.init_params and (name, attr) not in cls.param_attrs:
                        cls.param_attrs.append((name, attr))
                member = _member_of_name(value)  # `self.x = h5[split]`
                if member is not None and member[0] in cls.init_params:
                    cls.param_members.append((member[0], attr, member[1]))
            refs = self.ev.refs_of(value)
            if refs:
                cls.attr_refs.setdefault(attr, []).extend(refs)
            return
        func = state.function
        if func is not None and not is_self(target.value) \
                and self.ev.handle_of(value) is not None:
            func.attr_handle_assigns.add(attr)  # e.g. worker_init_fn: info.dataset.s = ...

    def _hold(self, cls: ClassState, method: MethodState, attr: str, handle: Handle,
              per_process: bool = False) -> None:
        if handle.closed:
            return
        if self.state.pid_guard_depth or per_process:
            method.guarded_attrs.add(attr)
        method.effects.append(f"open:{attr}")
        cls.held.setdefault((method.name, attr, id(handle.call)), handle)

    def _held_call(self, cls: ClassState, method: MethodState, attr: str,
                   value: ast.expr) -> None:
        """`self.env = open_env(p)` / `self._connect(p)`: the linker looks up what it returns;
        also each element of `[self.open_db(p) for p in paths]` (or a dict's values), and a
        local bound to such a call (`env = self.connect_db(p)`, then `self.envs.append(env)`)."""
        if type(value) is syntax.Name and self.state.function is not None:
            value = self.state.function.call_locals.get(value.id, value)
        if isinstance(value, (syntax.ListComp, syntax.SetComp, syntax.GeneratorExp)):
            value = value.elt
        elif isinstance(value, syntax.DictComp):
            value = value.value
        callee = self._callee(value)
        if isinstance(value, syntax.Call) and isinstance(value.func, syntax.Attribute):
            source = self_attr(value.func.value)
            if source is not None and source != attr:  # `self.txn = self.env.begin()`
                cls.derived_attrs.append((attr, source, value.func.attr))
        if callee:
            assert isinstance(value, syntax.Call)  # (`_callee`)
            cls.held_calls.append(HeldCall(attr, method.name, callee, self.positions.span(value),
                                           tuple(self.ev.handle_args(value))))
            if self.state.pid_guard_depth:
                method.guarded_attrs.add(attr)

    def _note_cleared_at_fork(self, node: ast.Call) -> None:
        """`os.register_at_fork(after_in_child=open_archive.cache_clear)` (or a lambda calling
        it): each forked process starts with that function's cache empty."""
        for keyword in node.keywords:
            if keyword.arg != "after_in_child":
                continue
            value = keyword.value
            if type(value) is syntax.Lambda:
                body = value.body
                if type(body) is not syntax.Call or body.args or body.keywords:
                    continue
                value = body.func
            if type(value) is syntax.Attribute and value.attr == "cache_clear" \
                    and type(value.value) is syntax.Name:
                self.cleared_at_fork.add(value.value.id)

    def _callee(self, value: ast.expr) -> str:
        """"self.m" for `self.m(...)`, the qualified name for `f(...)` / `mod.f(...)`, else ""."""
        if type(value) is not syntax.Call:
            return ""
        func = value.func
        method = self_attr(func)
        if method is not None:
            return f"self.{method}"
        name = self.state.q(func)
        if name is None or name in _NOT_HANDLE_CALLEES or name.startswith(("torch.", "builtins.")):
            return ""
        return name

    def _name_assign(self, name: str, value: ast.expr) -> None:
        state = self.state
        handle = self.ev.handle_of(value)
        func = state.function
        if func is not None:
            if handle is None and type(value) is syntax.Call and self._callee(value):
                func.call_locals[name] = value
            else:
                func.call_locals.pop(name, None)
        if handle is None and func is None and not state.frames:
            handle = self._module_alias(value)
        if handle is not None:
            if func is None and not state.frames:
                state.module_handles[name] = (handle, False)
            elif func is not None and name in func.globals_declared \
                    and name not in state.module_handles and name in state.module_env.bindings:
                # `_client = None` at module level, `global _client; _client = Client()` in a
                # function: a lazy process-global, filled like a cache by that function
                self._cache_store(name, value)
            elif func is not None and name in func.globals_declared \
                    and not state.pid_guard_depth:
                state.module_handles[name] = (handle, False)
                if func.is_module_level:
                    state.module_handles.setdefault(func.name, (handle, True))
            else:
                self._locals()[name] = handle
        state.env.assign(name, self.ev.value_of(value))

    def _cache_store(self, name: str, value: ast.expr) -> None:
        """`_CACHE[path] = zipfile.ZipFile(path)` in a function, `_CACHE` a module-level
        container: a process-global handle cache, filled by that function."""
        state = self.state
        func = state.function
        if func is None or name in func.env.bindings or name not in state.module_env.bindings:
            return
        handle = self.ev.handle_of(value)
        outer = next((f for f in state.frames if isinstance(f, FunctionState)), func)
        if handle is not None and not handle.closed and not state.pid_guard_depth:
            state.module_caches.setdefault(name, (handle, outer.qualname))

    def _cache_add(self, node: ast.Call, func: ast.Attribute) -> None:
        """`_CACHE.setdefault(p, lmdb.open(p))`, `_ENVS.append(lmdb.open(p))` in a function:
        a module-level container filled like `_CACHE[p] = ...` (`_cache_store`)."""
        position = _CACHE_ADDERS.get(func.attr)
        if position is None or type(func.value) is not syntax.Name or len(node.args) <= position:
            return
        if func.attr == "setdefault" and self.ev.is_identity(node.args[0]):
            return  # keyed by the process
        self._cache_store(func.value.id, node.args[position])

    def _module_alias(self, value: ast.expr) -> Optional[Handle]:
        """`db = client.capstone` (`client[...]`) at module level: derived from the module
        handle `client`, so its creating call."""
        base = value
        while isinstance(base, (syntax.Attribute, syntax.Subscript)):
            base = base.value
        if base is value or not isinstance(base, syntax.Name):
            return None
        pair = self.state.module_handles.get(base.id)
        return pair[0].as_derived() if pair is not None and not pair[1] else None

    def _locals(self) -> dict[str, Handle]:
        """Where a local handle is bound: the innermost function, or the module."""
        return self.state.env.handles

    # --- expressions with an order of their own -----------------------------------------------

    def visit_IfExp(self, node: ast.IfExp) -> None:
        if self._uses_method and self._self_uses is not None \
                and presence(node.test)[0] is not None:
            self._self_uses.presence.add(self._uses_method)
        self.walk(node.body)
        self.walk(node.test)
        self.walk(node.orelse)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        if self._uses_method and self._self_uses is not None and type(node.op) is syntax.Or \
                and self_attr(node.values[0]) is not None:
            self._self_uses.presence.add(self._uses_method)  # `self.x or default`
        self.children(node)

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


def _alternative_names(value: ast.expr) -> Iterator[str]:
    """The names an expression may evaluate to as it is: `x`, each branch of `a if c else b`,
    each operand of `a or b` (not names only read by it, `f(x)`)."""
    kind = type(value)
    if kind is syntax.Name:
        assert isinstance(value, syntax.Name)
        yield value.id
    elif kind is syntax.IfExp:
        assert isinstance(value, syntax.IfExp)
        yield from _alternative_names(value.body)
        yield from _alternative_names(value.orelse)
    elif kind is syntax.BoolOp:
        assert isinstance(value, syntax.BoolOp)
        for operand in value.values:
            yield from _alternative_names(operand)


def _member_of_name(value: ast.expr) -> Optional[tuple[str, str]]:
    """(name, how) for a member of what a plain name holds (`h5[split]`, `h5["g"]["x"]`,
    `h5.get("x")`): how is the first step from the name, "[]" or the method's name. As for a
    handle's own members (`Evaluator._subscript_keeps_handle`): a key names a member, not a
    selection of data (`h5["x"][:]` is an array), and past the first step only string keys
    (`h5["x"][0]` reads a row)."""
    steps: list[ast.expr] = []
    while type(value) is syntax.Subscript:
        assert isinstance(value, syntax.Subscript)
        steps.append(value.slice)
        value = value.value
    if any(not is_string_key(k) for k in steps[:-1]):
        return None
    if type(value) is syntax.Call and type(value.func) is syntax.Attribute \
            and type(value.func.value) is syntax.Name:
        assert isinstance(value, syntax.Call) and isinstance(value.func, syntax.Attribute)
        if steps and not is_string_key(steps[-1]):
            return None
        return value.func.value.id, value.func.attr
    if type(value) is syntax.Name and steps:
        assert isinstance(value, syntax.Name)
        keys = steps[-1].elts if type(steps[-1]) is syntax.Tuple else [steps[-1]]
        return (value.id, "[]") if all(is_member_key(k) for k in keys) else None
    return None


def _displayed_names(value: ast.expr) -> list[str]:
    """The plain names a list or tuple display holds (`[first, second]`): each is kept."""
    kind = type(value)
    if kind is syntax.List or kind is syntax.Tuple:
        assert isinstance(value, (syntax.List, syntax.Tuple))
        return [e.id for e in value.elts if isinstance(e, syntax.Name)]
    return []


def _qualname(function: Optional[FunctionState]) -> str:
    """What LoaderCall.function says of a call in `function` ("": module level)."""
    return function.qualname if function is not None else ""


def _note_called(sink: set[str], called: Optional[str]) -> None:
    """Add a project function called (or passed on) to `sink`; not a library's, a builtin."""
    if called and called.partition(".")[0] not in _LIBRARY_ROOTS \
            and called not in _NOT_HANDLE_CALLEES:
        sink.add(called)


def _decorator_callee(node: ast.expr) -> ast.expr:
    return node.func if type(node) is syntax.Call else node


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, syntax.Attribute):
        node = node.value
    return node


def _bind_params(args: ast.arguments, qual: str, env: Env, skip: int = 0) -> tuple[str, ...]:
    """Each parameter of a function (a method's after `self`: `skip`) may be what its callers
    pass."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][skip:]
    for index, name in enumerate(positional):
        env.assign_refs(name, [DatasetRef("param", f"{qual}#{index}#{name}")])
    for arg in args.kwonlyargs:
        env.assign_refs(arg.arg, [DatasetRef("param", f"{qual}#-1#{arg.arg}")])
    return tuple(positional)


# Fields that never hold syntax the hooks read: names, contexts, operators, annotations.
_SKIPPED: Final = frozenset({
    "ctx", "type_comment", "kind", "annotation", "returns", "type_params", "id", "attr", "arg",
    "name", "names", "module", "level", "conversion", "simple", "is_async", "op", "ops",
})
_FIELDS: Final[dict[type, tuple[str, ...]]] = {}
_HOOKS: Final[dict[type, Callable[[FactWalker, ast.AST], None]]] = {
    getattr(ast, name[len("visit_"):]): hook
    for name, hook in vars(FactWalker).items()
    if name.startswith("visit_") and isinstance(getattr(ast, name[len("visit_"):], None), type)
}
_HOOKS[ast.AsyncFunctionDef] = _HOOKS[ast.FunctionDef]
_HOOKS[ast.AsyncWith] = _HOOKS[ast.With]
_HOOKS[ast.AsyncFor] = _HOOKS[ast.For]
_HOOKS[ast.SetComp] = _HOOKS[ast.GeneratorExp] = _HOOKS[ast.ListComp]
_HOOKS[ast.List] = _HOOKS[ast.Tuple]


# Methods putting a value into a container, with the value's position.
_CACHE_ADDERS: Final = {"setdefault": 1, "append": 0, "add": 0, "insert": 1}


def _int_defaults(args: ast.arguments) -> list[tuple[str, int]]:
    """(parameter, value) for each parameter whose default is a constant int."""
    positional = (*args.posonlyargs, *args.args)
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    return [(arg.arg, value) for arg, default in pairs
            if default is not None and (value := int_value(default)) is not None]
