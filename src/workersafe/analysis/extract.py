"""One walk over a file's `ast` → `FileFacts`: the entry point of the analysis.

walker.py walks (frames, names, statements), values.py evaluates expressions, loader_args.py
reads DataLoader calls, positions.py converts positions; this module assembles the facts."""

from __future__ import annotations

import ast
from typing import Optional

from . import syntax
from ..facts import (
    ClassFacts, FileFacts, FunctionFacts, HeldCall, HeldHandle, MethodFacts, ModuleHandle,
)
from ..records import replace
from ..registry import Registry
from .baseinit import Found, base_init, init_callables
from .branches import init_branches
from .caches import ClassCaches, class_caches
from .closes import error_path_closes
from .nodes import REVERSED_FIELDS, reversed_fields
from .names import dotted
from .pickled import pickled_state
from .positions import Positions
from .remedies import PROCESS_WORDS, remedy_facts
from .state import ClassState, FunctionState, Handle
from .values import IDENTITY_WORDS
from .walker import FactWalker


def extract_facts(tree: ast.Module, text: str, path: str, module_name: str, is_package: bool,
                  registry: Registry) -> FileFacts:
    """The facts of one module; `text` is the source `tree` was parsed from (for positions)."""
    walker = FactWalker(path, module_name, is_package, registry, Positions(text))
    spelled = {word for word in _WORDS if word in text}  # (each word searched for once)
    walker.ev.identity_possible = not spelled.isdisjoint(IDENTITY_WORDS)
    walker.walk(tree)
    facts = _facts(walker, {walker.state.qual(n.name): n for n in tree.body
                            if isinstance(n, syntax.ClassDef)})
    remedies = remedy_facts(tree, walker.state, walker.ev, walker.classes, walker.self_uses,
                            not spelled.isdisjoint(PROCESS_WORDS), "get_worker_info" in spelled)
    return replace(facts, remedies=remedies)


# The words whose presence in the text decides what the passes look for.
_WORDS = frozenset((*IDENTITY_WORDS, *PROCESS_WORDS, "get_worker_info"))


def _facts(walker: FactWalker, class_nodes: Optional[dict[str, ast.ClassDef]] = None
           ) -> FileFacts:
    """What the walk found, as facts (reads the walker, changes nothing); `class_nodes`: the
    module-level class definitions by qualified name (for the class-level passes)."""
    class_nodes = class_nodes or {}
    state, ev = walker.state, walker.ev
    handles: dict[str, tuple[Handle, bool]] = dict(state.module_handles)
    for func in walker.functions:  # `@functools.cache def get(): return boto3.client(...)`
        if _cached(func, walker) and func.returned_handle is not None:
            handles.setdefault(func.name, (func.returned_handle, True))
    # per module-level class, what its `__init__` may keep as a callable (read twice below)
    found: Found = {}  # (each `__init__` searched once for its base's `__init__` call)
    callables = {qual: init_callables(node, walker.super_init_defs, found)
                 for qual, node in class_nodes.items()}
    reads: dict[int, tuple[set[str], set[str]]] = {}  # per function node (_reads)
    readers = _cache_readers(walker, callables, reads)
    return FileFacts(
        path=walker.path, module=walker.module_name,
        imports=tuple(sorted(state.module_scope.names.items())),
        star_imports=tuple(state.module_scope.star_modules),
        classes=tuple(_class_facts(c, walker, class_nodes.get(c.qualname),
                                   callables.get(c.qualname, ()), found)
                      for c in walker.classes),
        functions=tuple(_function_facts(f, walker, f.name in readers, reads)
                        for f in walker.functions),
        loaders=tuple(walker.loaders),
        loader_candidates=tuple(walker.loader_candidates),
        calls=tuple(walker.calls),
        module_handles=tuple(ModuleHandle(name, ev.site(h)) for name, (h, _) in handles.items())
        + tuple(ModuleHandle(name, ev.site(h), filled_by=filler)
                for name, (h, filler) in state.module_caches.items() if name not in handles),
        module_vars=tuple((n, tuple(r)) for n, r in walker.module_refs().items()),
        globals_read_outside_classes=tuple(sorted(walker.globals_outside)),
        start_method=walker.start_method,
        scoped_start_methods=tuple(sorted(walker.scoped_starts.items())),
        entry_calls=tuple(sorted(walker.entry_calls)),
    )


def _class_facts(cls: ClassState, walker: FactWalker, node: Optional[ast.ClassDef],
                 callables: tuple[tuple[str, str], ...], found: Optional[Found] = None
                 ) -> ClassFacts:
    site = walker.ev.site
    caches = class_caches(node, cls, walker.state, walker.ev) if node is not None \
        else ClassCaches()
    failing = _failing_closes(cls, node, walker.closers)
    held = tuple(
        HeldHandle(attr, site(h), method, h.derived,
                   closed=key in cls.closed_held and attr not in failing.get(method, ()))
        for key, h in cls.held.items()
        for method, attr, _ in (key,) if attr not in caches.containers
    )
    class_calls: dict[str, set[str]] = {}
    for caller, callee in caches.class_calls:  # `Frames._env(p)`: a call of its own method
        class_calls.setdefault(caller, set()).add(callee)
    class_held = tuple(HeldHandle(attr, site(h), "", h.derived)
                       for (attr, _), h in cls.class_held.items())
    methods = tuple(
        MethodFacts(m.name, tuple(sorted(m.attrs_read)), tuple(sorted(m.attrs_used)),
                    tuple(sorted(m.self_calls | class_calls.get(m.name, set()))),
                    tuple(sorted(m.globals_read)),
                    tuple(sorted(m.guarded_attrs)), tuple(sorted(m.guarded_calls)),
                    m.calls_super_init,
                    tuple(e for e in m.effects if e.partition(":")[2] not in failing[m.name]
                          or not e.startswith("close:")) if m.name in failing
                    else tuple(m.effects),
                    site(m.returns_handle) if m.returns_handle is not None else None,
                    m.returns_call, tuple(m.returns), tuple(sorted(m.super_calls)))
        for m in cls.methods
    )
    attr_refs = tuple((attr, tuple(refs)) for attr, refs in cls.attr_refs.items())
    held_calls = tuple(cls.held_calls)
    for method, call in _cached_properties(node, methods):  # kept as `self.<method>`
        if method.name not in cls.attr_refs:
            attr_refs += ((method.name, method.returns),)
            held_calls += tuple(HeldCall(method.name, method.name, ref.target,
                                         walker.ev.positions.span(call))
                                for ref in method.returns[:1] if ref.kind == "call")
    params, calls = init_branches(node, walker.ev.positions) if node is not None else ((), ())
    return ClassFacts(
        cls.name, cls.qualname, cls.bases, cls.span, methods, held, class_held,
        cls.init_params, tuple(cls.param_attrs),
        attr_refs,
        held_calls, tuple(cls.param_types),
        tuple(HeldHandle(attr, site(h), method) for attr, method, h in caches.stores),
        pickled_state(node) if node is not None else None,
        tuple(cls.derived_attrs), tuple(cls.init_int_defaults),
        base_init(node, walker.super_init_defs, found)
        if node is not None and node.bases else None,
        callables,
        params, tuple(cls.registered), tuple(cls.param_members), calls,
    )


def _cached_properties(node: Optional[ast.ClassDef], methods: tuple[MethodFacts, ...]
                       ) -> list[tuple[MethodFacts, ast.Call]]:
    """The methods decorated `@cached_property` returning a call: what one returns is kept on
    the instance as the attribute of its name (`self.db` built on first read, then the same
    object); a holder it builds (`return SQLiteDB(self.path)`) is kept like
    `self.db = SQLiteDB(...)` in that method. Each with its returned call."""
    if node is None:
        return []
    calls: dict[str, ast.Call] = {}
    for stmt in node.body:
        if isinstance(stmt, syntax.FunctionDef) and any(
                (dotted(d) or "").rpartition(".")[2] == "cached_property"
                for d in stmt.decorator_list):
            returned = [r.value for r in ast.walk(stmt)
                        if isinstance(r, syntax.Return) and isinstance(r.value, syntax.Call)]
            if len(returned) == 1:
                calls[stmt.name] = returned[0]
    return [(m, calls[m.name]) for m in methods if m.name in calls and m.returns]


def _cache_readers(walker: FactWalker, callables: dict[str, tuple[tuple[str, str], ...]],
                   reads: dict[int, tuple[set[str], set[str]]]) -> set[str]:
    """The module functions whose names read matter: they matter only for a process-global
    handle cache or a module-level handle (a function reading it, or calling one that does).
    In a file that has one, every function; elsewhere the helpers a class method calls
    (`read_member(p)` calling an imported `get_zip(p)` that fills a cache in another module),
    and the helpers they call."""
    if walker.state.module_caches or walker.state.module_handles:
        return {f.name for f in walker.functions}
    by_name = {f.name: f for f in walker.functions if f.node is not None}
    wanted = {n for c in walker.classes for m in c.methods for n in m.globals_read
              if n in by_name}
    # a function a constructor's parameter defaults to (`loader=default_loader`), or one named
    # outside classes (`Folder(paths, zip_loader)`): it may be kept and called as an attribute
    wanted.update(name for pairs in callables.values() for _, name in pairs if name in by_name)
    wanted.update(name for name in walker.globals_outside if name in by_name)
    frontier = list(wanted)
    while frontier:
        node = by_name[frontier.pop()].node
        assert node is not None
        for read in _reads(node, reads)[0]:
            if read in by_name and read not in wanted:
                wanted.add(read)
                frontier.append(read)
    return wanted


def _reads(node: ast.AST, known: dict[int, tuple[set[str], set[str]]]
           ) -> tuple[set[str], set[str]]:
    """(every name a function spells, the names it reads that are not its own: read, and
    neither a parameter nor bound inside it (unless declared `global`), nested scopes counted
    as its own); `known`: what was found so far, by id() of the function's node."""
    found = known.get(id(node))
    if found is None:
        found = known[id(node)] = _names_and_globals(node)
    return found


def _names_and_globals(node: ast.AST) -> tuple[set[str], set[str]]:
    read: set[str] = set()
    stored: set[str] = set()
    local: set[str] = set()
    declared: set[str] = set()
    dotted: list[tuple[str, str]] = []  # `mod.attr` read: (mod, attr)
    binders = _BINDERS
    name_type, load = syntax.Name, syntax.Load
    attribute, constant = syntax.Attribute, syntax.Constant
    fields_of = REVERSED_FIELDS
    # every node under `node` (nodes.subtree's, in its order; the sets do not depend on it),
    # read as the traversal reaches it: no list of the nodes
    stack: list[Optional[ast.AST]] = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        sub = pop()
        if sub is None:
            continue  # (a list's None: `Dict.keys` of `**d`)
        kind = type(sub)
        if kind is name_type:  # (the most frequent: a leaf)
            (read if type(sub.ctx) is load else stored).add(sub.id)  # type: ignore[attr-defined]
            continue
        if kind is attribute:  # (then these two: an attribute's one node is its value)
            value = sub.value  # type: ignore[attr-defined]
            if type(value) is name_type and type(value.ctx) is load:
                dotted.append((value.id, sub.attr))  # type: ignore[attr-defined]
            push(value)
            continue
        if kind is constant:
            continue  # (a constant holds no node)
        if kind in binders:
            if kind is syntax.arg:
                local.add(sub.arg)  # type: ignore[attr-defined]
            elif kind is syntax.Global:
                declared.update(sub.names)  # type: ignore[attr-defined]
            elif kind is syntax.Import or kind is syntax.ImportFrom:
                local.update((a.asname or a.name).partition(".")[0]
                             for a in sub.names)  # type: ignore[attr-defined]
            elif sub is not node:  # a nested function or class
                local.add(sub.name)  # type: ignore[attr-defined]
        fields = fields_of.get(kind)
        if fields is None:
            fields = reversed_fields(kind)
        for field_name in fields:
            value = getattr(sub, field_name, None)
            if type(value) is list:
                if value:
                    extend(value)
            elif value is not None:
                push(value)
    outer = read - ((local | stored) - declared)
    # `zio.get_zip(p)` of a name not its own: "zio.get_zip", qualified by `_function_facts`
    return read | stored, outer | {f"{head}.{attr}" for head, attr in dotted if head in outer}


# The node types other than names that `_names_and_globals` reads.
_BINDERS = frozenset({ast.arg, ast.Global, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                      ast.Import, ast.ImportFrom})


def _failing_closes(cls: ClassState, node: Optional[ast.ClassDef], closers: frozenset[str]
                    ) -> dict[str, set[str]]:
    """Per method, the attributes it closes only when it fails (analysis/closes.py)."""
    closing = {method for method, _ in cls.closed}
    if node is None or not closing:
        return {}
    out = {}
    for stmt in node.body:
        if isinstance(stmt, (syntax.FunctionDef, syntax.AsyncFunctionDef)) and stmt.name in closing:
            found = error_path_closes(stmt, closers)
            if found:
                out[stmt.name] = found
    return out


def _cached(func: FunctionState, walker: FactWalker) -> bool:
    """A cached module-level function whose cache the parent's forked workers share: not when
    the module empties it in each forked child (`register_at_fork(after_in_child=...)`)."""
    return func.cached and func.name not in walker.cleared_at_fork


def _qualified_reads(reads: set[str], walker: FactWalker) -> set[str]:
    """`reads` with each `mod.attr` qualified through the module's imports (`utils.io.get_zip`
    for `zio.get_zip`), or dropped where `mod` is not imported (a module-level variable's
    attribute, or the module's own class)."""
    found = set()
    scope = walker.state.module_scope
    for read in reads:
        head, dot, attr = read.partition(".")
        qualified = walker.imported_attr(scope, head, attr) if dot else read
        if qualified is not None:
            found.add(qualified)
    return found


def _function_facts(func: FunctionState, walker: FactWalker, keep_reads: bool,
                    known: dict[int, tuple[set[str], set[str]]]) -> FunctionFacts:
    returned = func.returned_handle
    reads: tuple[str, ...] = ()
    if keep_reads and func.node is not None:
        reads = tuple(sorted(_qualified_reads(_reads(func.node, known)[1], walker)))
    return FunctionFacts(func.name, func.qualname, tuple(func.returns),
                         tuple(sorted(func.method_calls)), tuple(sorted(func.attr_handle_assigns)),
                         walker.ev.site(returned) if returned and not returned.closed else None,
                         func.returns_call, _cached(func, walker), reads,
                         tuple(sorted(func.calls)),
                         tuple(func.chosen))
