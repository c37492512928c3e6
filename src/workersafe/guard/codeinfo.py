"""What a class's or a function's bytecode says about per-process discipline, read once per
code object: the names it uses, the attributes it stores, whether it asks which process it
runs in. Used for: a handle kept behind a process check (lazy, pid-keyed), a handle the
loader's `worker_init_fn` reopens in each worker, the globals a dataset's methods read."""

from __future__ import annotations

import dis
import functools
import sys
import types
from typing import Any, Iterator

# Reading one of these means the code checks which process (or worker) it runs in.
PROCESS_NAMES = frozenset({"getpid", "get_worker_info", "_unpickled_pid"})
# Modules whose functions the guard never follows (not the user's code).
# Members that never run again in a forked worker: a process check there protects nothing
# (`__setstate__` runs only when a spawn worker unpickles the dataset).
_ONCE_MEMBERS = frozenset({"__init__", "__new__", "__setstate__", "__getstate__", "__reduce__",
                           "__reduce_ex__", "__del__", "__init_subclass__"})
_LIBRARY_ROOTS = frozenset({"torch", "builtins", "functools", "typing", "abc", "collections",
                            "numpy", "os", "random", "multiprocessing", "threading"})


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


@functools.lru_cache(maxsize=4096)
def names_of(code: types.CodeType) -> frozenset[str]:
    """Global and attribute names the code (and the functions it defines) reads or writes."""
    return frozenset(name for c in _codes(code) for name in c.co_names)


@functools.lru_cache(maxsize=4096)
def globals_of(code: types.CodeType) -> frozenset[str]:
    """Global names the code (and the functions it defines) reads: not its attribute names
    (`self.store` is no read of a global `store`)."""
    return frozenset(str(ins.argval) for c in _codes(code) for ins in dis.get_instructions(c)
                     if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"))


@functools.lru_cache(maxsize=4096)
def stores_of(code: types.CodeType) -> frozenset[str]:
    """Attributes the code assigns (`x.attr = ...`) and names it passes to `setattr`."""
    found = set()
    for c in _codes(code):
        for ins in dis.get_instructions(c):
            if ins.opname == "STORE_ATTR":
                found.add(str(ins.argval))
        if "setattr" in c.co_names:
            found.update(k for k in c.co_consts if isinstance(k, str) and k.isidentifier())
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def value_stores_of(code: types.CodeType) -> frozenset[str]:
    """Attributes the code assigns a value other than the constant None (`self.x = None`
    declares an attribute, it opens nothing)."""
    found = set()
    for c in _codes(code):
        instructions = list(dis.get_instructions(c))
        for index, ins in enumerate(instructions):
            if ins.opname != "STORE_ATTR":
                continue
            before = [i for i in instructions[max(0, index - 3):index]
                      if i.opname not in ("COPY", "DUP_TOP")]  # `a.x = a.y = None`
            if not (len(before) >= 2 and before[-2].opname == "LOAD_CONST"
                    and before[-2].argval is None):
                found.add(str(ins.argval))
    return frozenset(found)


def code_of(value: Any) -> list[types.CodeType]:
    """The code objects of a class body's member (function, property, static/class method)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [c for f in (value.fget, value.fset) if f is not None for c in code_of(f)]
    code = getattr(value, "__code__", None)
    return [code] if isinstance(code, types.CodeType) else []


def user_classes(kind: type) -> list[type]:
    return [cls for cls in kind.__mro__
            if cls.__module__.split(".", 1)[0] not in _LIBRARY_ROOTS]


@functools.lru_cache(maxsize=1024)
def methods_of(kind: type) -> dict[str, tuple[types.CodeType, ...]]:
    """The code of each member of the class's own (not library) classes, by name."""
    found: dict[str, tuple[types.CodeType, ...]] = {}
    for cls in reversed(user_classes(kind)):
        for name, value in vars(cls).items():
            codes = code_of(value)
            if codes:
                found[name] = tuple(codes)
    return found


@functools.lru_cache(maxsize=4096)
def storers(kind: type, attr: str) -> frozenset[str]:
    """Members of the class that assign `attr`, directly or by calling one that does."""
    methods = methods_of(kind)
    found = {name for name, codes in methods.items() if any(attr in stores_of(c) for c in codes)}
    changed = True
    while changed:
        changed = False
        for name, codes in methods.items():
            if name not in found and any(names_of(c) & found for c in codes):
                found.add(name)
                changed = True
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def process_checked(kind: type, attr: str) -> bool:
    """The class keeps `attr` per process: a member that checks the process (`os.getpid()`,
    `get_worker_info()`) also sets `attr`, or calls what sets it (a lazy, pid-checked open).
    Reading it is not enough (a `__getitem__` logging its pid). A dict of handles keyed by
    process id needs no such member: the walk skips this process's entry."""
    setters = storers(kind, attr)
    for name, codes in methods_of(kind).items():
        if name in _ONCE_MEMBERS:
            continue
        for code in codes:
            names = names_of(code)
            if names & PROCESS_NAMES and (attr in stores_of(code) or names & setters):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def opened_lazily(kind: type, attr: str) -> bool:
    """`attr` gets its value only in members that run on use (a `__getitem__`, a property, a
    helper they call), never in `__init__` nor in what `__init__` calls: a lazy open."""
    methods = methods_of(kind)
    direct = {name for name, codes in methods.items()
              if any(attr in value_stores_of(c) for c in codes)}
    if not direct or direct & _ONCE_MEMBERS:
        return False
    # what `__init__` calls; not its own name, which `super().__init__(...)` reads (and a
    # `self.attr = None` there makes `__init__` a storer)
    init_names = {n for name in ("__init__", "__new__") for c in methods.get(name, ())
                  for n in names_of(c)} - {"__init__", "__new__"}
    return not (init_names & storers(kind, attr))


def _functions(fn: Any) -> Iterator[types.FunctionType]:
    """The plain functions a worker_init_fn runs: through `functools.partial` (its function
    and function arguments, e.g. `previous=`)."""
    if isinstance(fn, functools.partial):
        yield from _functions(fn.func)
        for arg in (*fn.args, *fn.keywords.values()):
            yield from _functions(arg)
    elif isinstance(fn, types.MethodType):
        yield from _functions(fn.__func__)
    elif isinstance(fn, types.FunctionType):
        yield fn


class WorkerInit:
    """What a loader's `worker_init_fn` runs in each worker: the names it (and the project's
    functions it calls, a few levels deep) uses and the attributes it stores."""

    DEPTH = 3

    def __init__(self, fn: Any) -> None:
        self.names: set[str] = set()
        self.stores: set[str] = set()
        seen: set[int] = set()
        todo = [(f, 0) for f in _functions(fn)]
        while todo:
            func, depth = todo.pop()
            if id(func) in seen or func.__module__.split(".", 1)[0] in _LIBRARY_ROOTS:
                continue
            seen.add(id(func))
            names = names_of(func.__code__)
            self.names |= names
            self.stores |= stores_of(func.__code__)
            if depth < self.DEPTH:
                for name in names:
                    callee = func.__globals__.get(name)
                    if isinstance(callee, types.FunctionType):
                        todo.append((callee, depth + 1))

    def reopens(self, kind: type, attr: str) -> bool:
        """The worker_init_fn sets `attr` itself, or calls a member of `kind` that does."""
        return attr in self.stores or bool(self.names & storers(kind, attr))


def _bound(value: Any) -> bool:
    """A method bound to an object (not a module's function)."""
    if isinstance(value, types.MethodType):
        return True
    return isinstance(value, types.BuiltinMethodType) and value.__self__ is not None and \
        not isinstance(value.__self__, types.ModuleType)


@functools.lru_cache(maxsize=1024)
def globals_read(kind: type) -> tuple[tuple[str, str], ...]:
    """(module name, global name) the class's own members read, also through the project's
    functions they call (two levels) and the other project classes they use (their methods
    followed, the class attributes read named `Class.attr`); a function that checks the
    process is not followed (a per-process accessor, `get_session()`)."""
    found: list[tuple[str, str]] = []
    seen_funcs: set[int] = set()
    todo: list[tuple[types.CodeType, dict[str, Any], str, int]] = []
    own = {id(cls) for cls in kind.__mro__}  # its own class attributes: `class_level`'s
    for cls in user_classes(kind):
        module = __import__("sys").modules.get(cls.__module__)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for value in vars(cls).values():
            for code in code_of(value):
                todo.append((code, namespace, cls.__module__, 0))
    seen_pairs: set[tuple[str, str]] = set()
    while todo:
        code, namespace, module_name, depth = todo.pop()
        if names_of(code) & PROCESS_NAMES:
            continue
        for name in globals_of(code):
            if name not in namespace:
                continue
            value = namespace[name]
            if isinstance(value, types.FunctionType):
                if depth < 2 and id(value) not in seen_funcs and \
                        value.__module__.split(".", 1)[0] not in _LIBRARY_ROOTS:
                    seen_funcs.add(id(value))
                    todo.append((value.__code__, value.__globals__, value.__module__,
                                 depth + 1))
                continue
            if isinstance(value, type) and id(value) not in own and \
                    value.__module__.split(".", 1)[0] not in _LIBRARY_ROOTS:
                # another class of the project (`ZipReader.read(path)`): its static and class
                # methods run in the worker, and the class attributes this code reads
                # (`ZipReader.zip_bank`) are as global as a module's
                read = names_of(code)
                if depth < 2 and id(value) not in seen_funcs:
                    seen_funcs.add(id(value))
                    home = getattr(sys.modules.get(value.__module__), "__dict__", None)
                    for member in vars(value).values():
                        for member_code in code_of(member):
                            todo.append((member_code, home if isinstance(home, dict)
                                         else namespace, value.__module__, depth + 1))
                            if isinstance(member, classmethod) and \
                                    not names_of(member_code) & PROCESS_NAMES:
                                read = read | names_of(member_code)  # `cls._files`
                for attr in sorted(read & set(vars(value))):
                    member = vars(value)[attr]
                    if not attr.startswith("__") and not code_of(member) and \
                            not isinstance(member, (type, types.ModuleType, property)) and \
                            (module_name, f"{name}.{attr}") not in seen_pairs:
                        seen_pairs.add((module_name, f"{name}.{attr}"))
                        found.append((module_name, f"{name}.{attr}"))
                continue
            if isinstance(value, (type, types.ModuleType)) or (
                    isinstance(value, types.BuiltinFunctionType) and not _bound(value)):
                continue  # a bound method is kept: it holds its object (`fetch = s.get`)
            if (module_name, name) not in seen_pairs:
                seen_pairs.add((module_name, name))
                found.append((module_name, name))
    return tuple(found)
