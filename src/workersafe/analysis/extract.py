"""One walk over a file's `ast` → `FileFacts`: the entry point of the analysis.

walker.py walks (frames, names, statements), values.py evaluates expressions, loader_args.py
reads DataLoader calls, positions.py converts positions; this module assembles the facts."""

from __future__ import annotations

import ast
import dataclasses

from ..facts import (
    ClassFacts, FileFacts, FunctionFacts, HeldHandle, MethodFacts, ModuleHandle,
)
from ..registry import Registry
from .positions import Positions
from .remedies import remedy_facts
from .state import ClassState, FunctionState, Handle
from .values import IDENTITY_WORDS
from .walker import FactWalker


def extract_facts(tree: ast.Module, text: str, path: str, module_name: str, is_package: bool,
                  registry: Registry) -> FileFacts:
    """The facts of one module; `text` is the source `tree` was parsed from (for positions)."""
    walker = FactWalker(path, module_name, is_package, registry, Positions(text))
    walker.ev.identity_possible = any(word in text for word in IDENTITY_WORDS)
    walker.walk(tree)
    facts = _facts(walker)
    remedies = remedy_facts(tree, walker.state, walker.ev, walker.classes)
    return dataclasses.replace(facts, remedies=remedies)


def _facts(walker: FactWalker) -> FileFacts:
    """What the walk found, as facts (reads the walker, changes nothing)."""
    state, ev = walker.state, walker.ev
    handles: dict[str, tuple[Handle, bool]] = dict(state.module_handles)
    for func in walker.functions:  # `@functools.cache def get(): return boto3.client(...)`
        if func.cached and func.returned_handle is not None:
            handles.setdefault(func.name, (func.returned_handle, True))
    return FileFacts(
        path=walker.path, module=walker.module_name,
        imports=tuple(sorted(state.module_scope.names.items())),
        star_imports=tuple(state.module_scope.star_modules),
        classes=tuple(_class_facts(c, walker) for c in walker.classes),
        functions=tuple(_function_facts(f, walker) for f in walker.functions),
        loaders=tuple(walker.loaders),
        calls=tuple(walker.calls),
        module_handles=tuple(ModuleHandle(name, ev.site(h), via_call)
                             for name, (h, via_call) in handles.items())
        + tuple(ModuleHandle(name, ev.site(h), filled_by=filler)
                for name, (h, filler) in state.module_caches.items() if name not in handles),
        module_vars=tuple((n, tuple(r)) for n, r in walker.module_refs().items()),
        globals_read_outside_classes=tuple(sorted(walker.globals_outside)),
        start_method=walker.start_method,
        scoped_start_methods=tuple(sorted(walker.scoped_starts.items())),
        entry_calls=tuple(sorted(walker.entry_calls)),
    )


def _class_facts(cls: ClassState, walker: FactWalker) -> ClassFacts:
    site = walker.ev.site
    held = tuple(
        HeldHandle(attr, site(h), method, h.derived, closed=(method, attr) in cls.closed)
        for (method, attr, _), h in cls.held.items()
    )
    class_held = tuple(HeldHandle(attr, site(h), "", h.derived)
                       for (attr, _), h in cls.class_held.items())
    methods = tuple(
        MethodFacts(m.name, tuple(sorted(m.attrs_read)), tuple(sorted(m.attrs_used)),
                    tuple(sorted(m.self_calls)), tuple(sorted(m.globals_read)),
                    tuple(sorted(m.guarded_attrs)), tuple(sorted(m.guarded_calls)),
                    m.calls_super_init, tuple(m.effects),
                    site(m.returns_handle) if m.returns_handle is not None else None,
                    m.returns_call, tuple(m.returns))
        for m in cls.methods
    )
    return ClassFacts(
        cls.name, cls.qualname, cls.bases, cls.span, methods, held, class_held,
        cls.init_params, tuple(cls.param_attrs),
        tuple((attr, tuple(refs)) for attr, refs in cls.attr_refs.items()),
        tuple(cls.held_calls), tuple(cls.param_types),
    )


def _function_facts(func: FunctionState, walker: FactWalker) -> FunctionFacts:
    returned = func.returned_handle
    # The names a function reads matter only for a process-global handle cache (a function
    # reading it, or calling one that does): looked at only in a file that has one.
    reads: tuple[str, ...] = ()
    if walker.state.module_caches and func.node is not None:
        reads = tuple(sorted({n.id for n in ast.walk(func.node) if isinstance(n, ast.Name)}))
    return FunctionFacts(func.name, func.qualname, tuple(func.returns),
                         tuple(sorted(func.method_calls)), tuple(sorted(func.attr_handle_assigns)),
                         walker.ev.site(returned) if returned and not returned.closed else None,
                         func.returns_call, func.cached, reads, tuple(sorted(func.calls)))
