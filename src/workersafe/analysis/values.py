"""Expression evaluation: what a value is, as far as the facts care — a handle (created,
derived from one, or held), the dataset(s) it may be, a constant, a `**kwargs` dict literal,
a multiprocessing context. Small recursive functions over one expression, no tree walk."""

from __future__ import annotations

import ast
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional

from ..records import replace
from . import syntax
from ..facts import (
    LOOKUP_VERBS, OWN_CLASS, ArgRef, AttrArg, DatasetRef, HandleArg, HandleSite, RefKind,
)
from ..registry import DERIVED_CALLABLE_SUFFIXES, ELEMENT_KEEPERS, PAIR_KEEPERS
from ..torchnames import GET_CONTEXT, PARTIAL, PROCESS_IDENTITY, WRAPPERS
from .nodes import child_nodes
from .positions import Positions
from .state import Handle, State, Value

_BUILTINS = frozenset({"list", "tuple", "dict", "set", "len", "range", "print", "iter", "next",
                       "sorted", "enumerate", "zip", "map", "filter", "open", "super", "type",
                       "isinstance", "getattr", "str", "int", "float"})
# (no suffix holds a dot: a name ends in one exactly when its last part does)
assert not any("." in suffix for suffix in DERIVED_CALLABLE_SUFFIXES)
# builtins whose result holds the very objects of their one argument (`list(it)`)
_KEEP_ELEMENTS = frozenset(ELEMENT_KEEPERS + tuple(f"builtins.{n}" for n in ELEMENT_KEEPERS))
# builtins whose result holds the objects of the (name, object) pairs of their one argument
_KEEP_PAIRS = frozenset(PAIR_KEEPERS + tuple(f"builtins.{n}" for n in PAIR_KEEPERS))
_SEQUENCES = (ast.List, ast.Tuple, ast.Set)
# `.items()` / `.values()` of a dict of datasets, `.copy()` of a list of them: the same datasets
_SAME_ELEMENTS = frozenset({"items", "values", "copy"})
# Words a file must contain for any expression in it to be a process identity.
IDENTITY_WORDS = ("getpid", "get_worker_info", "current_process")
# Where a process identity may hide inside an expression (not lambdas, not displays).
_IDENTITY_PARTS = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.IfExp, ast.Subscript, ast.Call,
                   ast.Attribute, ast.Name, ast.NamedExpr)


class Arg(NamedTuple):
    """One argument of a call, in source order: `keyword=value`, `*value`, `**value`."""

    keyword: Optional[str]
    star: str  # "", "*" or "**"
    value: ast.expr


_NEW_TUPLE = tuple.__new__


def call_args(call: ast.Call) -> list[Arg]:
    """The arguments of a call in source order (ast keeps positional and keyword apart)."""
    new, arg = _NEW_TUPLE, Arg  # (`Arg(...)` without its Python-level `__new__`: one per call)
    positional = call.args
    if len(positional) == 1 and not call.keywords:  # (most calls given any: one argument)
        one = positional[0]
        return [new(arg, (None, "*", one.value)) if type(one) is syntax.Starred
                else new(arg, (None, "", one))]
    args = [new(arg, (None, "*", a.value)) if type(a) is syntax.Starred else new(arg, (None, "", a))
            for a in positional]
    if not call.keywords:
        return args
    keywords = [new(arg, (k.arg, "" if k.arg else "**", k.value)) for k in call.keywords]
    if not any(a.star for a in args) or not args:
        return args + keywords
    return sorted(args + keywords, key=lambda a: (a.value.lineno, a.value.col_offset))


def first_arg(call: ast.Call) -> Optional[ast.expr]:
    """The value of a call's first argument, positional or keyword."""
    args = call_args(call)
    return args[0].value if args else None


def argument(call: ast.Call, position: int, keyword: str) -> Optional[ast.expr]:
    """The argument passed as `keyword=`, else at `position` (not counting `*args`)."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    positional = [a for a in call.args if type(a) is not syntax.Starred]
    return positional[position] if len(positional) > position else None


def elements(node: ast.expr) -> list[ast.expr]:
    """The elements of a list, tuple or set display; `*x` unwrapped to `x`."""
    return [e.value if isinstance(e, syntax.Starred) else e for e in getattr(node, "elts", ())]


# --- constants ------------------------------------------------------------------------------

def _texts(call: ast.Call, args: list[Arg]) -> tuple[tuple[int, str, str], ...]:
    """The string constants a call is given (position or -1, keyword, value); of a dict
    given first, its "type" and "name" keys (`build(dict(type="X"))`): what picks a class by
    name from a registry or a factory."""
    found = []
    for index, arg in enumerate(args):
        value = arg.value  # (`string`, inline)
        if type(value) is syntax.Constant and type(value.value) is str and not arg.star:
            found.append((-1 if arg.keyword else index, arg.keyword or "", value.value))
    if call.args and type(call.args[0]) in (syntax.Dict, syntax.Call):
        _dict_texts(call.args[0], found)
    return tuple(found)


def _dict_texts(first: ast.expr, found: list[tuple[int, str, str]]) -> None:
    """The "type" and "name" keys of a dict given first (`_texts`), added to `found`."""
    literal = dict_literal(first)
    for key in ("type", "name"):
        text = string(literal.get(key)) if literal else None
        if text is not None:
            found.append((0, key, text))


# What `_refs_of_call` makes of a callee's qualified name, as far as the name alone decides:
# (_WRAPPER, ...) a dataset wrapper; (_NO_REFS, ...) never a dataset (torch, a builtin, a
# handle's constructor, a process identity); else (_REFS, its last part, whether it is
# class-like, whether it is lookup-like); _PARTIAL for `functools.partial`.
_WRAPPER, _NO_REFS, _REFS, _PARTIAL = 0, 1, 2, 3


def _callee_of(name: str, types: Mapping[str, Any]) -> tuple[int, str, bool, bool]:
    if name in WRAPPERS:
        return _WRAPPER, "", False, False
    if name in PARTIAL:
        return _PARTIAL, "", False, False
    if name.startswith(("torch.", "builtins.")) or name in _BUILTINS \
            or types.get(name) is not None or name in PROCESS_IDENTITY:
        return _NO_REFS, "", False, False
    short = name.rpartition(".")[2]
    return _REFS, short, short[:1].isupper() or name == OWN_CLASS, short.startswith(LOOKUP_VERBS)


def _selector(call: ast.Call, keyword: str) -> Optional[str]:
    """The string literal a call gives first, or by `keyword` (a registry row's selecting
    argument: `fsspec.filesystem("s3")`, `protocol="s3"`); None when it gives none."""
    if call.args:
        first = call.args[0]
        return None if type(first) is syntax.Starred else string(first)
    return next((string(k.value) for k in call.keywords if k.arg == keyword), None)


def string(node: Optional[ast.AST]) -> Optional[str]:
    if type(node) is syntax.Constant and type(node.value) is str:
        return node.value
    return None


def int_value(node: ast.AST) -> Optional[int]:
    if type(node) is syntax.Constant and type(node.value) is int:
        return node.value
    return None


def bool_value(node: ast.AST) -> Optional[bool]:
    if type(node) is syntax.Constant and type(node.value) is bool:
        return node.value
    return None


def is_none(node: ast.AST) -> bool:
    return type(node) is syntax.Constant and node.value is None


def is_self(node: ast.AST) -> bool:
    return type(node) is syntax.Name and node.id in ("self", "cls")


def is_name(node: ast.AST, name: str) -> bool:
    return bool(name) and type(node) is syntax.Name and node.id == name


def is_super(node: ast.AST) -> bool:
    return type(node) is syntax.Call and is_name(node.func, "super")


def self_attr(node: ast.AST) -> Optional[str]:
    """`self.x` → "x"."""
    if type(node) is syntax.Attribute and is_self(node.value):
        return node.attr
    return None


def dict_literal(node: ast.AST) -> Optional[dict[str, ast.expr]]:
    """`dict(num_workers=4)` or `{"num_workers": 4}` → {"num_workers": <node>}."""
    if type(node) is syntax.Dict:
        out = {}
        for key, value in zip(node.keys, node.values):
            name = string(key)
            if name is not None:
                out[name] = value
        return out
    if type(node) is syntax.Call and is_name(node.func, "dict"):
        return {k.arg: k.value for k in node.keywords if k.arg}
    return None


def _first_handle(handles: Iterable[Optional[Handle]]) -> Optional[Handle]:
    """The first handle a container holds (the container itself is not derived)."""
    for handle in handles:
        if handle is not None:
            return Handle(handle.call, handle.handle, False, handle.closed)
    return None


class Evaluator:
    """Evaluates expressions against the walk's current `State`."""

    def __init__(self, state: State, positions: Positions) -> None:
        self.state = state
        self.registry = state.registry
        self._types = state.registry.types  # (`registry.lookup`, without the call)
        # attributes naming a root node (`f.root`) of any row: most attribute reads name none
        self._node_attrs = frozenset(a for t in self._types.values() for a in t.node_attrs)
        self._callees: dict[str, tuple[int, str, bool, bool]] = {}  # name → _callee_of(name)
        self.positions = positions
        # the file names a process identity at all (else no expression in it is one)
        self.identity_possible = True
        # id() of a call → its arguments (`args`): asked by several hooks and evaluations;
        # shared with other evaluators of the same tree (`share_args`)
        self._args: dict[int, list[Arg]] = {}
        self._refs: dict[tuple[str, str, int], DatasetRef] = {}  # (_ref)
        # a call whose arguments' refs `arg_refs` keeps while nothing is bound (`steady`), and
        # those refs once computed
        self._steady: Optional[ast.Call] = None
        self._steady_refs: Optional[list[list[DatasetRef]]] = None

    def args(self, call: ast.Call) -> list[Arg]:
        """`call_args(call)`, computed once per call node (do not change the list)."""
        found = self._args.get(id(call))
        if found is None:
            found = self._args[id(call)] = call_args(call)
        return found

    def steady(self, call: Optional[ast.Call]) -> None:
        """From now until `steady(None)`, nothing the refs of `call`'s arguments depend on
        changes (no name is bound, no handle held): `arg_refs` computes them once."""
        self._steady, self._steady_refs = call, None

    def share_args(self, other: Evaluator) -> None:
        """Use `other`'s arguments computed so far and to come (an evaluator of the same tree),
        and what it made of callees' names and the refs it made (they depend on the names and
        the registry only)."""
        self._args = other._args
        if other.registry is self.registry:
            self._callees = other._callees
            self._refs = other._refs

    # --- handles ----------------------------------------------------------------------------

    def handles_in(self, expr: ast.expr) -> list[Handle]:
        """Every handle a container display holds; else the one handle the value is."""
        if isinstance(expr, _SEQUENCES):
            return [h for e in elements(expr) for h in self.handles_in(e)]
        if isinstance(expr, syntax.Dict):
            return [h for k, v in zip(expr.keys, expr.values)
                    if k is not None for h in self.handles_in(v)]
        handle = self.handle_of(expr)
        return [handle] if handle is not None else []

    def handle_of(self, expr: ast.expr) -> Optional[Handle]:
        """The handle an expression evaluates to (created, derived or held), if any."""
        kind = type(expr)  # (exact types: `ast` makes no subclasses of its node types)
        if kind is syntax.Call:
            return self._handle_of_call(expr)  # type: ignore[arg-type]
        if kind is syntax.Name:
            return self.state.local_handle(expr.id)  # type: ignore[attr-defined]
        if kind is syntax.Constant:
            return None
        how = _HANDLE_OF.get(kind)
        return how(self, expr) if how is not None else None

    def _handle_of_subscript(self, expr: ast.Subscript) -> Optional[Handle]:
        root = self._root_of(expr.value)
        if root is not None:  # `f.root[name]`: a member of the root node, by its name
            keys = expr.slice.elts if type(expr.slice) is syntax.Tuple else [expr.slice]
            return root.as_derived() if all(is_member_key(k) for k in keys) else None
        base = self.handle_of(expr.value)
        if base is None or not self._subscript_keeps_handle(base, expr):
            return None
        return base.as_derived()

    def _handle_of_attribute(self, expr: ast.Attribute) -> Optional[Handle]:
        if not is_self(expr.value):
            # `f.root`, and a child named on it (`f.root.images`): nodes keeping the file (one
            # step down a chain of attributes only when it passes a root's name)
            if expr.attr in self._node_attrs:
                root = self._root_of(expr)
            elif not expr.attr.startswith("_"):
                root = self._root_of(expr.value)
            else:
                root = None
            return root.as_derived() if root is not None else None
        cls, method = self.state.cls, self.state.method
        if cls is not None and method is not None:
            return cls.held_in(method.name, expr.attr)
        return None

    def _root_of(self, expr: ast.expr) -> Optional[Handle]:
        """The handle (not a derived object) whose root node `expr` names (`f.root`, a
        registry row's `node_attrs`), else None."""
        if type(expr) is not syntax.Attribute or expr.attr not in self._node_attrs:
            return None
        base = self.handle_of(expr.value)
        if base is None or base.derived \
                or expr.attr not in self.registry.node_attrs(base.handle):
            return None
        return base

    def _handle_of_sequence(self, expr: ast.List | ast.Tuple | ast.Set) -> Optional[Handle]:
        return _first_handle(self.handle_of(e) for e in expr.elts if type(e) is not syntax.Starred)

    def _handle_of_dict(self, expr: ast.Dict) -> Optional[Handle]:
        return _first_handle(self.handle_of(v) for k, v in zip(expr.keys, expr.values)
                             if k is not None)

    def _handle_of_element(self, expr: ast.ListComp | ast.SetComp | ast.GeneratorExp
                           ) -> Optional[Handle]:
        # `[blob for blob in client.list_blobs(b)]`: the elements the iterable derives
        loop = expr.generators[0]
        if type(expr.elt) is syntax.Name and type(loop.target) is syntax.Name \
                and expr.elt.id == loop.target.id and len(expr.generators) == 1:
            return self._listed(loop.iter)
        return self.handle_of(expr.elt)

    def _handle_of_dictcomp(self, expr: ast.DictComp) -> Optional[Handle]:
        # `{k: g for k, g in f.items()}`: the objects of the pairs the iterable lists
        loop, value = expr.generators[0], expr.value
        target = loop.target
        if type(value) is syntax.Name and type(target) is syntax.Tuple \
                and len(target.elts) == 2 and len(expr.generators) == 1:
            name, obj = target.elts
            if type(name) is syntax.Name and type(obj) is syntax.Name \
                    and obj.id == value.id != name.id:
                return self._paired(loop.iter)
        return self.handle_of(expr.value)

    def _handle_of_boolop(self, expr: ast.BoolOp) -> Optional[Handle]:
        return next((h for h in map(self.handle_of, expr.values) if h is not None), None)

    def _handle_of_ifexp(self, expr: ast.IfExp) -> Optional[Handle]:
        return self.handle_of(expr.body) or self.handle_of(expr.orelse)

    def _handle_of_call(self, call: ast.Call) -> Optional[Handle]:
        name = self.state.q(call.func)
        htype = self._types.get(name) if name is not None else None
        if htype is not None and (not htype.selector_values
                                  or htype.selects(_selector(call, htype.selector_keyword))):
            return Handle(call, htype.name)
        func = call.func
        if type(func) is syntax.Attribute:
            value = func.value  # (a name's: `handle_of`, inline)
            base = self.state.local_handle(value.id) if isinstance(value, syntax.Name) \
                else self.handle_of(value)
            if base is not None and func.attr in self.registry.derived_methods(base.handle):
                return base.as_derived()
        if name in _KEEP_ELEMENTS and len(call.args) == 1 and not call.keywords:
            return self._listed(call.args[0])  # `list(bucket.list_blobs())`: the same objects
        if name in _KEEP_PAIRS and len(call.args) == 1 and not call.keywords:
            return self._paired(call.args[0])  # `dict(f.items())`: the same objects, named
        if name is not None and name.endswith(DERIVED_CALLABLE_SUFFIXES):  # (its last part's)
            for arg in self.args(call):
                base = self.handle_of(arg.value)
                if base is not None:
                    return base.as_derived()
        return None

    def _listed(self, expr: ast.expr) -> Optional[Handle]:
        """The handle each element of `expr` keeps: a call of a registry row's iterable
        method (`client.list_blobs(b)`), or of its pair method, each (name, object) pair
        keeping its object (`list(f.items())`); None for other iterables (a cursor's rows)."""
        if type(expr) is not syntax.Call or type(expr.func) is not syntax.Attribute:
            return None
        base = self.handle_of(expr.func.value)
        if base is None or (expr.func.attr not in self.registry.iterable_methods(base.handle)
                            and expr.func.attr not in self.registry.pair_methods(base.handle)):
            return None
        return base.as_derived()

    def _paired(self, expr: ast.expr) -> Optional[Handle]:
        """The handle the object of each (name, object) pair of `expr` keeps: a call of a
        registry row's pair method (`f.items()`); None for other iterables."""
        if type(expr) is not syntax.Call or type(expr.func) is not syntax.Attribute:
            return None
        base = self.handle_of(expr.func.value)
        if base is None or expr.func.attr not in self.registry.pair_methods(base.handle):
            return None
        return base.as_derived()

    def _subscript_keeps_handle(self, base: Handle, expr: ast.Subscript) -> bool:
        htype = self.registry.lookup(base.handle)
        if htype is None or not htype.derived_subscript:
            return False
        # f["images"] keeps the file open; f["images"][:] or [()] reads the data out.
        keys = expr.slice.elts if type(expr.slice) is syntax.Tuple else [expr.slice]
        if not all(is_member_key(k) for k in keys):
            return False
        return not base.derived or not htype.subscript_reads or all(is_string_key(k) for k in keys)

    def site(self, handle: Handle) -> HandleSite:
        return HandleSite(handle.handle, self.positions.span(handle.call))

    # --- datasets ---------------------------------------------------------------------------

    def refs_of(self, expr: ast.expr) -> list[DatasetRef]:
        """What dataset(s) an expression may evaluate to."""
        kind = type(expr)
        if kind is syntax.Call:
            return self._refs_of_call(expr)  # type: ignore[arg-type]
        if kind is syntax.Name:
            bound = self.state.env.refs(expr.id)  # type: ignore[attr-defined]
            if bound is not None:
                return bound
            qualified = self.state.q(expr)
            return [self._ref("name", qualified)] if qualified and "." in qualified else []
        if kind is syntax.Constant:
            return []
        if isinstance(expr, syntax.Attribute):  # `self.x`: what the class keeps in it
            cls = self.state.cls
            if cls is not None and is_self(expr.value):
                return [self._ref("attr", f"{cls.qualname}.{expr.attr}")]
            return []
        how = _REFS_OF.get(kind)
        return how(self, expr) if how is not None else []

    def _ref(self, kind: RefKind, target: str, positional: int = -1) -> DatasetRef:
        """`DatasetRef(kind, target, positional=positional)`, made once per file (it is frozen:
        one object serves)."""
        found = self._refs.get((kind, target, positional))
        if found is None:
            found = self._refs[kind, target, positional] = DatasetRef(kind, target,
                                                                      positional=positional)
        return found

    def _refs_of_value(self, expr: ast.Subscript | ast.Starred) -> list[DatasetRef]:
        return self.refs_of(expr.value)

    def _refs_of_elements(self, expr: ast.List | ast.Tuple) -> list[DatasetRef]:
        return [r for e in elements(expr) for r in self.refs_of(e)]

    def _refs_of_ifexp(self, expr: ast.IfExp) -> list[DatasetRef]:
        return self.refs_of(expr.body) + self.refs_of(expr.orelse)

    def _refs_of_values(self, expr: ast.BoolOp | ast.Dict) -> list[DatasetRef]:
        return [r for v in expr.values for r in self.refs_of(v)]

    def _refs_of_element(self, expr: ast.ListComp | ast.SetComp | ast.GeneratorExp
                         ) -> list[DatasetRef]:
        return self.refs_of(expr.elt)

    def _refs_of_dictcomp(self, expr: ast.DictComp) -> list[DatasetRef]:
        return self.refs_of(expr.value)

    def _refs_of_call(self, call: ast.Call) -> list[DatasetRef]:
        func = call.func
        if type(func) is syntax.Attribute and func.attr in _SAME_ELEMENTS and not call.args:
            return self.refs_of(func.value)
        if type(func) is syntax.Subscript or (
                type(func) is syntax.Name and self.state.env.refs(func.id) is not None):
            # `DATASETS[name](cfg)`, `cls = DATASETS[name]; cls(cfg)`: each class it may be;
            # `ds_type(p)` of a parameter: each class the callers pass for it ("built")
            args = tuple(self.arg_refs(call))
            looked = self.refs_of(func)
            return [DatasetRef("call" if r.kind == "name" else "built", r.target, arg_refs=args)
                    for r in looked if r.kind in ("name", "param")] + [
                replace(r, handle_args=tuple(self.handle_args(call)), arg_refs=args,
                        result_called=True)  # `cls = registry.get_task("x")`, `cls(cfg)`
                for r in looked if r.kind == "call" and r.texts and not r.result_called]
        if type(func) is syntax.Attribute and (type(func.value) is syntax.Subscript or (
                type(func.value) is syntax.Name and self.state.env.refs(func.value.id))):
            # `DATASETS[name].from_config(cfg)`: that method of each class it may be; `cls =
            # get_dataset_cls(name)` first: that method of each class the call returns
            looked = self.refs_of(func.value)
            return [DatasetRef("call", f"{r.target}.{func.attr}")
                    for r in looked if r.kind == "name"] + [
                replace(r, arg_refs=tuple(self.arg_refs(call)), result_called=True,
                        then=func.attr)
                for r in looked if r.kind == "call" and not r.result_called]
        name = self._own_method(func) or self.state.q(func)
        if name is None:
            if type(func) is syntax.Call:  # `registry.get_task("x")(cfg)`: the class looked up
                return [replace(r, handle_args=tuple(self.handle_args(call)),
                                arg_refs=tuple(self.arg_refs(call)), result_called=True)
                        for r in self._classes_made(func)]
            if type(func) is syntax.Attribute and type(func.value) is syntax.Call:
                # `get_dataset_cls(name).from_config(cfg)`: that method of each class returned
                return [replace(r, arg_refs=tuple(self.arg_refs(call)), result_called=True,
                                then=func.attr)
                        for r in self._classes_made(func.value)]
            return []
        callee = self._callees.get(name)
        if callee is None:
            callee = self._callees[name] = _callee_of(name, self._types)
        code, short, class_like, lookup = callee
        if code is _WRAPPER:
            how, position, keyword = WRAPPERS[name]
            if how == "all":
                return [r for arg in self.args(call) for r in self.refs_of(arg.value)]
            arg = argument(call, position, keyword)
            return self.refs_of(arg) if arg is not None else []
        if code is _NO_REFS:
            return []
        if code is _PARTIAL:  # `make = partial(Dataset, scale=2)`: called later, that class
            bound = first_arg(call)
            return [r for r in self.refs_of(bound) if r.kind in ("name", "param")] \
                if bound is not None else []
        # What else a constructor is given (a holder object passed in): class-like names only
        registry = self.state.q(call.args[1]) if short == "build_from_cfg" \
            and len(call.args) > 1 else None
        if registry:  # mmcv's `build_from_cfg(cfg, DATASETS)`: `DATASETS.build(cfg)`
            return [DatasetRef("call", f"{registry}.build", texts=_texts(call, self.args(call)),
                               key_params=tuple(k for k in self._key_params(call) if k[0] == 0))]
        if not call.args and not call.keywords:  # `f()`: what the lines below make of it
            return [self._ref("call", name, 0)]
        passed = tuple(self.arg_refs(call)) if class_like else ()
        # `_handle_args`, whether `*args` or `**kwargs` is given, and `_texts` (of a call not
        # class-like), in one pass over the arguments
        handles: list[HandleArg] = []
        texts: list[tuple[int, str, str]] = []
        unknown = False
        for index, given in enumerate(self.args(call)):
            if given.star:
                unknown = True
                continue
            value = given.value
            keyword = given.keyword or ""
            if isinstance(value, syntax.Constant):  # (no handle)
                if type(value.value) is str and not class_like:
                    texts.append((-1 if keyword else index, keyword, value.value))
                continue
            handle = self.handle_of(value)
            if handle is not None and not handle.closed:
                handles.append(HandleArg(-1 if keyword else index, keyword, self.site(handle)))
        if not class_like and call.args and type(call.args[0]) in (syntax.Dict, syntax.Call):
            _dict_texts(call.args[0], texts)
        attr_args = tuple(self._attr_args(call)) if class_like else ()
        return [DatasetRef("call", name, tuple(handles), passed,
                           -1 if unknown else len(call.args),
                           tuple([k.arg for k in call.keywords if k.arg]),
                           attr_args=attr_args, texts=tuple(texts),
                           key_params=self._key_params(call) if lookup else ())]

    def _classes_made(self, call: ast.Call) -> list[DatasetRef]:
        """The calls whose value `call` may be when that value is a class, then called or its
        class method called: a function's or a lookup's (`get_dataset_cls(name)`), a method of
        an object made there (`DatasetFactory().create(name)`: "<DatasetFactory>.create")."""
        func = call.func
        if type(func) is syntax.Attribute and type(func.value) is syntax.Call:
            owner = self.state.q(func.value.func)
            return [DatasetRef("call", f"{owner}.{func.attr}")] if owner else []
        return [r for r in self._refs_of_call(call) if r.kind == "call" and not r.result_called]

    def _key_params(self, call: ast.Call) -> tuple[tuple[int, str, str], ...]:
        """The parameters a call passes on as they are: (position or -1, keyword, the
        parameter "<function>#<index>#<name>")."""
        found = []
        for index, arg in enumerate(self.args(call)):
            refs = self.state.env.refs(arg.value.id) \
                if not arg.star and type(arg.value) is syntax.Name else None
            if refs and len(refs) == 1 and refs[0].kind == "param":
                found.append((-1 if arg.keyword else index, arg.keyword or "", refs[0].target))
        return tuple(found)

    def _own_method(self, func: ast.expr) -> Optional[str]:
        """`cls(...)`, `type(self)(...)`, `self.__class__(...)` → OWN_CLASS (the class the
        method is looked up on, decided when linking); `self._build(...)` in a method of `C`
        → "C._build" (what that method returns, when linking)."""
        kind = type(func)
        if kind is syntax.Name:
            return OWN_CLASS if func.id == "cls" else None  # type: ignore[attr-defined]
        if kind is syntax.Attribute:
            assert isinstance(func, syntax.Attribute)
            if not is_self(func.value):
                return None
            if func.attr == "__class__":
                return OWN_CLASS
            cls = self.state.cls
            return f"{cls.qualname}.{func.attr}" if cls is not None else None
        if isinstance(func, syntax.Call) and is_name(func.func, "type") and len(func.args) == 1 \
                and is_self(func.args[0]):
            return OWN_CLASS
        return None

    def arg_refs(self, call: ast.Call, every: bool = False, with_refs: bool = False
                 ) -> list[ArgRef]:
        """The arguments that may be datasets (or holder objects), or are constant ints or
        None; `every`: all of them, a starred one as keyword "*" / "**"; `with_refs`: none
        (an empty list) unless one of them may be a dataset."""
        found: list[ArgRef] = []
        args = self.args(call)
        each = self._steady_refs if call is self._steady else None
        if each is None:
            each = [[] if arg.star or type(arg.value) is syntax.Constant  # (`refs_of`: none)
                    else self.refs_of(arg.value) for arg in args]
            if call is self._steady:
                self._steady_refs = each
        if with_refs and not any(each):
            return found
        env = self.state.env
        for index, arg in enumerate(args):
            if arg.star:
                if every:
                    found.append(ArgRef(-1, arg.star))
                continue
            value = arg.value
            refs = each[index]
            kind = type(value)  # (int_value, is_none and the truth of a constant, inline)
            if kind is syntax.Constant:
                constant = value.value  # type: ignore[attr-defined]
                number = constant if type(constant) is int else None
                none = constant is None
                truth: Optional[bool] = bool(constant)
            else:
                number = env.int_value(value.id)[1] \
                    if isinstance(value, syntax.Name) else None
                none = False
                truth = None
            if refs or number is not None or truth is not None or every:
                keyword = arg.keyword or ""
                found.append(ArgRef(-1 if keyword else index, keyword, tuple(refs), number,
                                    none, truth))
        return found

    def handle_args(self, call: ast.Call) -> list[HandleArg]:
        """The arguments of `call` that are open handles (by position or keyword)."""
        found = []
        for index, arg in enumerate(self.args(call)):
            if arg.star:
                continue
            handle = self.handle_of(arg.value)
            if handle is None or handle.closed:
                continue
            keyword = arg.keyword or ""
            found.append(HandleArg(-1 if keyword else index, keyword, self.site(handle)))
        return found

    def _attr_args(self, call: ast.Call) -> list[AttrArg]:
        """Arguments read from an attribute of a value that may be a dataset or holder object
        (`EvalSet(train_ds.h5)`, `EvalSet(self.train.h5)`): whether that attribute holds a
        handle is decided when linking."""
        found = []
        for index, arg in enumerate(self.args(call)):
            value = arg.value
            if arg.star or type(value) is not syntax.Attribute or is_self(value.value):
                continue
            assert isinstance(value, syntax.Attribute)
            refs = self.refs_of(value.value)
            if refs and self.handle_of(value) is None:
                keyword = arg.keyword or ""
                found.append(AttrArg(-1 if keyword else index, keyword, value.attr,
                                     tuple(refs), self.positions.span(value),
                                     self.positions.segment(value)))
        return found

    # --- other values -----------------------------------------------------------------------

    def context_of_call(self, expr: ast.expr) -> str:
        """`multiprocessing.get_context("spawn")` → "spawn" ("?" if not a constant)."""
        if type(expr) is syntax.Call and self.state.q(expr.func) in GET_CONTEXT:
            first = first_arg(expr)
            return (string(first) or "?") if first is not None else ""
        return ""

    def value_of(self, expr: ast.expr) -> Value:
        """What `name = expr` binds the name to."""
        kind = type(expr)
        if kind is syntax.Call:  # (most values: `int_value`, `dict_literal` of one, inline)
            assert isinstance(expr, syntax.Call)
            func = expr.func
            kwargs = {k.arg: k.value for k in expr.keywords if k.arg} \
                if type(func) is syntax.Name and func.id == "dict" else None
            return Value(self._refs_of_call(expr), None, kwargs, self.context_of_call(expr),
                         self.identity_possible and self.is_identity(expr))
        if kind is syntax.Constant:  # no refs, no dict, no context, not an identity
            return Value([], int_value(expr))
        return Value(self.refs_of(expr), int_value(expr), dict_literal(expr),
                     self.context_of_call(expr), self.is_identity(expr))

    def is_identity(self, expr: ast.AST) -> bool:
        """Whether the expression reads the current process's or worker's identity:
        `os.getpid()`, `get_worker_info()` (and `.id` of it), a name bound to one, or an
        attribute of self the class sets from one. Spelling does not count: `self.pidfile`
        is not an identity."""
        if not self.identity_possible:
            return False
        kind = type(expr)
        if kind is syntax.Call:
            assert isinstance(expr, syntax.Call)
            if self.state.q(expr.func) in PROCESS_IDENTITY:
                return True
        elif kind is syntax.Name:
            assert isinstance(expr, syntax.Name)
            return self.state.env.identity(expr.id)
        elif kind is syntax.Attribute:
            assert isinstance(expr, syntax.Attribute)
            cls = self.state.cls
            if cls is not None and is_self(expr.value):
                return expr.attr in cls.identity_attrs
        for child in child_nodes(expr):
            if isinstance(child, _IDENTITY_PARTS) and self.is_identity(child):
                return True
        return False


# What `handle_of` and `refs_of` do per node type (besides calls, names and constants).
_HANDLE_OF: dict[type, Callable[[Evaluator, Any], Optional[Handle]]] = {
    ast.Subscript: Evaluator._handle_of_subscript,
    ast.Attribute: Evaluator._handle_of_attribute,
    ast.List: Evaluator._handle_of_sequence, ast.Tuple: Evaluator._handle_of_sequence,
    ast.Set: Evaluator._handle_of_sequence,
    ast.Dict: Evaluator._handle_of_dict,
    ast.ListComp: Evaluator._handle_of_element, ast.SetComp: Evaluator._handle_of_element,
    ast.GeneratorExp: Evaluator._handle_of_element,
    ast.DictComp: Evaluator._handle_of_dictcomp,
    ast.BoolOp: Evaluator._handle_of_boolop,
    ast.IfExp: Evaluator._handle_of_ifexp,
}
_REFS_OF: dict[type, Callable[[Evaluator, Any], list[DatasetRef]]] = {
    ast.Subscript: Evaluator._refs_of_value, ast.Starred: Evaluator._refs_of_value,
    ast.List: Evaluator._refs_of_elements, ast.Tuple: Evaluator._refs_of_elements,
    ast.IfExp: Evaluator._refs_of_ifexp,
    ast.BoolOp: Evaluator._refs_of_values, ast.Dict: Evaluator._refs_of_values,
    ast.ListComp: Evaluator._refs_of_element, ast.SetComp: Evaluator._refs_of_element,
    ast.GeneratorExp: Evaluator._refs_of_element,
    ast.DictComp: Evaluator._refs_of_dictcomp,
}


def is_string_key(node: ast.AST) -> bool:
    return type(node) is syntax.Constant and type(node.value) in (str, bytes)


def is_member_key(node: ast.AST) -> bool:
    """A key naming a member (`f["x"]`, `f[name]`, `f[self.opt["mode"]]`, `f[key.format(i)]`,
    either of two: `f["train" if train else "test"]`), not a selection of data (`[:]`, `[()]`,
    `[0]`, `[..., i]`)."""
    kind = type(node)
    if isinstance(node, syntax.Subscript):
        return type(node.slice) is not syntax.Slice  # `opt["mode"]`, not `keys[1:]`
    if isinstance(node, syntax.IfExp):  # `f["train" if train else "test"]`
        return is_member_key(node.body) and is_member_key(node.orelse)
    return is_string_key(node) or kind in _KEY_EXPRESSIONS


# Expressions that compute a member's name: a variable, an attribute, a call (`str(i)`,
# `"{}".format(i)`), an f-string or a concatenation.
_KEY_EXPRESSIONS = (ast.JoinedStr, ast.Name, ast.Attribute, ast.Call, ast.BinOp)


def _getattr_of_self(node: ast.expr) -> Optional[str]:
    """`getattr(self, "x", None)` → "x"."""
    if isinstance(node, syntax.Call) and isinstance(node.func, syntax.Name) \
            and node.func.id == "getattr" and len(node.args) >= 2 and is_self(node.args[0]):
        return string(node.args[1])
    return None


def or_self(value: ast.expr, attr: str) -> bool:
    """`self.x or <expr>`: the `self.x = self.x or Session()` lazy open."""
    return isinstance(value, syntax.BoolOp) and isinstance(value.op, syntax.Or) \
        and self_attr(value.values[0]) == attr


def unset_tests(test: ast.expr) -> list[str]:
    """The attributes a test checks are unset: `self.x is None`, `not self.x`,
    `not hasattr(self, "x")`, combined with `or`/`and`."""
    if isinstance(test, syntax.BoolOp):
        return [a for value in test.values for a in unset_tests(value)]
    if isinstance(test, syntax.Compare) and len(test.ops) == 1 \
            and isinstance(test.ops[0], (syntax.Is, syntax.Eq)) and is_none(test.comparators[0]):
        attr = self_attr(test.left) or _getattr_of_self(test.left)
        return [attr] if attr else []
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        operand = test.operand
        attr = self_attr(operand)
        if attr:
            return [attr]
        if isinstance(operand, syntax.Call) and isinstance(operand.func, syntax.Name) \
                and operand.func.id == "hasattr" and len(operand.args) == 2 \
                and is_self(operand.args[0]):
            name = string(operand.args[1])
            return [name] if name else []
    return []


def presence(test: ast.expr) -> tuple[Optional[str], bool]:
    """(attr, True) for a test true when `self.attr` is there (`self.x is not None`,
    `self.x`), (attr, False) for one true when it is None (`self.x is None`, `not self.x`)."""
    if isinstance(test, syntax.Compare) and len(test.ops) == 1 and is_none(test.comparators[0]) \
            and isinstance(test.ops[0], (syntax.Is, syntax.IsNot, syntax.Eq, syntax.NotEq)):
        return self_attr(test.left), isinstance(test.ops[0], (syntax.IsNot, syntax.NotEq))
    if isinstance(test, syntax.UnaryOp) and isinstance(test.op, syntax.Not):
        return self_attr(test.operand), False
    return self_attr(test), True
