"""The walk over what DataLoader workers receive: the dataset (through `Subset`,
`ConcatDataset`, `random_split` and the user's wrappers, attributes in `__dict__` and
`__slots__`, containers, holder objects), the classes' own attributes and the module globals
their methods read. Bounded (a node budget), cycle-safe, and cheap on plain values: an `int`
or a `str` costs one type test. Pure Python: no torch here."""

from __future__ import annotations

import collections
import functools
import io
import os
import pickle
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from .codeinfo import WorkerInit, globals_read, opened_lazily, process_checked, user_classes
from .probes import State, probe
from .table import Match, TypeTable

Where = Literal["instance", "class", "module", "loader"]
Owners = tuple[tuple[Optional[type], str], ...]

# Values that never hold anything: skipped before any other test.
ATOMIC: frozenset[type] = frozenset({
    int, float, str, bytes, bool, type(None), complex, range, slice, bytearray, type(Ellipsis),
})
# Objects never entered: their insides are not the user's (arrays, tensors, frames, images).
_OPAQUE_ROOTS = frozenset({"numpy", "pandas", "pyarrow", "PIL", "scipy", "polars", "builtins"})
_OPAQUE_TYPES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                 types.MethodType, types.CodeType, types.FrameType)
# Under spawn and forkserver, objects that do not pickle whatever library made them.
_UNPICKLABLE: dict[type, str] = {
    type(threading.Lock()): "a thread lock",
    type(threading.RLock()): "a reentrant thread lock",
    types.GeneratorType: "a generator",
    types.CoroutineType: "a coroutine",
    io.TextIOWrapper: "an open file",
    io.BufferedReader: "an open file",
    io.BufferedWriter: "an open file",
    io.BufferedRandom: "an open file",
    io.FileIO: "an open file",
}
_LARGE = 256  # containers longer than this are first tested for plain values in one pass
DEFAULT_BUDGET = 100_000  # objects entered (plain values are not counted)
MAX_ITEMS = 1_000_000  # values looked at one by one (long containers of plain values are not)


@dataclass(frozen=True)
class Hit:
    """One live object workers would share, or one that will not pickle."""

    # WS101 (instance), WS102 (module), WS103 (class), WS303 (an instance attribute opened
    # lazily without a process check, by the parent), WS201 (spawn/forkserver)
    code: str
    path: str  # `loader.dataset.dataset.session`
    where: Where
    type_name: str  # the object's class, `requests.sessions.Session`
    match: Optional[Match]  # its registry row (None: not a handle, it only does not pickle)
    state: State
    holder_type: Optional[type] = field(default=None, compare=False)  # the class holding it
    attr: str = ""  # the holder's attribute (or module global) it hangs from


@dataclass
class WalkResult:
    hits: list[Hit]
    nodes: int  # objects entered
    items: int  # values looked at
    truncated: bool  # the budget ran out: objects beyond it were not looked at


def type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _unpicklable_function(value: Any) -> bool:
    qualname = getattr(value, "__qualname__", "")
    return "<lambda>" in qualname or "<locals>" in qualname


class _Walk:
    def __init__(self, table: TypeTable, pickled: bool, worker_init: Optional[WorkerInit],
                 budget: int) -> None:
        self.table = table
        self.pickled = pickled  # spawn/forkserver: what pickling sees; fork: the memory
        self.worker_init = worker_init
        self.budget = budget
        self.hits: list[Hit] = []
        self.seen: set[int] = set()
        self.classes_seen: set[type] = set()
        self.nodes = 0
        self.items = 0
        self.truncated = False
        self.pid = os.getpid()
        self.main_file = _main_importable()
        # (object, path, owners, where); owners: the (class, attribute) pairs from the root
        # down to it (`loader.dataset.reader.envs[0]`: (Dataset, "reader"), (Reader, "envs"))
        self.stack: list[tuple[Any, str, Owners, Where]] = []

    def run(self) -> None:
        stack = self.stack
        atomic = ATOMIC
        match_type = self.table.match_type
        while stack:
            obj, path, owners, where = stack.pop()
            kind = type(obj)
            if kind in atomic:
                continue
            ident = id(obj)
            if ident in self.seen:
                continue
            self.seen.add(ident)
            self.nodes += 1
            if self.nodes > self.budget or self.items > MAX_ITEMS:
                self.truncated = True
                return
            found = match_type(kind)
            if found is not None:
                self.handle(obj, found, path, owners, where)
                continue
            if self.pickled:
                what = _UNPICKLABLE.get(kind)
                if what is None and isinstance(obj, types.FunctionType) and \
                        _unpicklable_function(obj):
                    what = "a lambda or local function"
                if what is not None:
                    self.hits.append(_hit("WS201", path, where, type_name(kind), None,
                                          State(True, what), owners))
                    continue
            if kind is list or kind is tuple:
                self.sequence(obj, path, owners, where)
            elif kind is dict:
                self.mapping(obj, path, owners, where)
            elif kind is set or kind is frozenset:
                self.sequence(list(obj), path + "{}", owners, where, indexed=False)
            elif kind is collections.deque:  # a pool of connections handed out in turn
                self.sequence(list(obj), path, owners, where)
            elif kind is types.MethodType or (kind is types.BuiltinMethodType and not
                                              isinstance(obj.__self__, types.ModuleType)):
                # a bound method keeps its object alive (`self.fetch = session.get`)
                self.push(obj.__self__, f"{path}.__self__", owners, where)
            elif kind is functools.partial:
                self.sequence([obj.func, *obj.args, *obj.keywords.values()], path + ".<partial>",
                              owners, where, indexed=False)
            elif isinstance(obj, (list, tuple)):  # named tuples, list subclasses
                self.sequence(obj, path, owners, where)
            elif isinstance(obj, dict):  # OrderedDict, defaultdict
                self.mapping(obj, path, owners, where)
            elif not isinstance(obj, _OPAQUE_TYPES) and not _opaque(kind):
                self.instance(obj, kind, path, owners, where)

    def push(self, value: Any, path: str, owners: Owners, where: Where) -> None:
        self.stack.append((value, path, owners, where))

    def sequence(self, obj: Any, path: str, owners: Owners, where: Where,
                 indexed: bool = True) -> None:
        atomic = ATOMIC
        if len(obj) > _LARGE and set(map(type, obj)) <= atomic:
            return  # a long list of plain values (file names, labels): one pass at C speed
        self.items += len(obj)
        for index in range(len(obj) - 1, -1, -1):
            value = obj[index]
            if type(value) not in atomic:
                self.push(value, f"{path}[{index}]" if indexed else path, owners, where)

    def mapping(self, obj: dict[Any, Any], path: str, owners: Owners, where: Where) -> None:
        atomic = ATOMIC
        if len(obj) > _LARGE and set(map(type, obj.values())) <= atomic:
            return
        self.items += len(obj)
        own = None if self.pickled else self.pid  # pickling takes every entry along
        for key, value in reversed(list(obj.items())):
            if type(value) in atomic or (type(key) is int and key == own):
                continue  # a plain value; or this process's entry in a per-process dict
            self.push(value, f"{path}[{key!r}]", owners, where)

    def instance(self, obj: Any, kind: type, path: str, owners: Owners, where: Where) -> None:
        """An object's attributes (as pickling sees them under spawn), its classes' own
        attributes and the globals their methods read (under fork)."""
        state: Any = None
        if self.pickled:
            reduce = getattr(kind, "__reduce_ex__", None)
            if reduce is not object.__reduce_ex__ or \
                    getattr(kind, "__reduce__", None) is not object.__reduce__:
                self.reduced(obj, kind, path, owners, where)  # pickled its own way
                return
            # pickled by reference (module and name): a worker that cannot find it fails
            lost = "a class defined in a function" if "<locals>" in kind.__qualname__ else \
                "a class of a `__main__` with no file (a notebook, `python -`)" if \
                kind.__module__ == "__main__" and not self.main_file else ""
            if lost:
                self.hits.append(_hit("WS201", path, where, type_name(kind), None,
                                      State(True, f"an object of {lost}"), owners))
                return
            if _own_getstate(kind):
                try:
                    state = obj.__getstate__()
                except Exception:  # noqa: BLE001 - the user's code: pickling will say
                    return
        if state is None:
            state = getattr(obj, "__dict__", None)
            slots = _slots(kind)
            if slots:
                state = dict(state) if isinstance(state, dict) else {}
                for name in slots:
                    value = getattr(obj, name, _MISSING)
                    if value is not _MISSING:
                        state[name] = value
        if not self.pickled and kind not in self.classes_seen:
            # pushed first, so popped last: an object both held and global is named by its
            # attribute path
            self.classes_seen.add(kind)
            self.class_level(kind, path)
        if isinstance(state, dict):
            atomic = ATOMIC
            self.items += len(state)
            for name, value in reversed(list(state.items())):  # popped in attribute order
                if type(value) not in atomic:
                    self.push(value, f"{path}.{name}", (*owners, (kind, str(name))), where)
        elif state is not None:
            self.push(state, path, owners, where)

    def reduced(self, obj: Any, kind: type, path: str, owners: Owners, where: Where) -> None:
        """What the class's own `__reduce_ex__`/`__reduce__` gives pickling (a
        `SimpleNamespace`: its attributes; a class reopening from its path: the path only),
        walked as pickling will; raising there is pickling failing."""
        try:
            reduced = obj.__reduce_ex__(pickle.DEFAULT_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - what pickling will raise
            self.hits.append(_hit("WS201", path, where, type_name(kind), None,
                                  State(True, f"pickling it raises {type(exc).__name__}"),
                                  owners))
            return
        if not isinstance(reduced, tuple):
            return  # a global's name: pickled by reference
        if len(reduced) > 1 and isinstance(reduced[1], tuple):
            self.sequence(reduced[1], path, owners, where, indexed=False)
        state = reduced[2] if len(reduced) > 2 else None
        if isinstance(state, dict):
            self.items += len(state)
            for name, value in reversed(list(state.items())):
                if type(value) not in ATOMIC:
                    self.push(value, f"{path}.{name}", (*owners, (kind, str(name))), where)
        elif state is not None:
            self.push(state, path, owners, where)

    def class_level(self, kind: type, path: str) -> None:
        """Under fork, the class body's handles and the module globals the class's methods
        read are in the workers' memory too (spawn re-imports them: each worker its own)."""
        for cls in user_classes(kind):
            for name, value in vars(cls).items():
                # a handle, or a cache of them (`_archives = {}` a classmethod fills through
                # `cls`: a dict keyed by process id has this process's entry skipped)
                if type(value) not in ATOMIC and not name.startswith("__") and (
                        type(value) in (dict, list)
                        or self.table.match_type(type(value)) is not None):
                    self.push(value, f"{path}.__class__.{name}", ((kind, name),), "class")
        for module_name, name in globals_read(kind):
            found: Any = sys.modules.get(module_name)
            for part in name.split("."):  # a global, or a project class's attribute
                found = getattr(found, part, None)
            if type(found) not in ATOMIC:
                shown = "__main__" if module_name == "__mp_main__" else module_name
                self.push(found, f"{shown}.{name}", ((None, name),), "module")

    def handle(self, obj: Any, found: Match, path: str, owners: Owners, where: Where) -> None:
        row = found.row
        state = probe(row.runtime_probe, obj)
        name = type_name(type(obj))
        if name.startswith("builtins.") and found.name:
            name = found.name  # lmdb's C types: `lmdb.Environment`, not `builtins.Environment`
        if self.pickled:
            if not row.picklable:  # pickling it fails, open or closed
                self.hits.append(_hit("WS201", path, where, name, found, state, owners))
            return
        if row.fork_safe or not state.open:
            return
        for holder, attr in owners:  # kept per process at any level on the way down
            if holder is None:
                continue
            if process_checked(holder, attr):
                return
            if self.worker_init is not None and self.worker_init.reopens(holder, attr):
                return
        code = {"module": "WS102", "class": "WS103"}.get(where, "WS101")
        if code == "WS101" and owners and owners[-1][0] is not None and \
                opened_lazily(owners[-1][0], owners[-1][1]):
            code = "WS303"  # opened on first use, without a process check, by the parent
        self.hits.append(_hit(code, path, where, name, found, state, owners))


def _hit(code: str, path: str, where: Where, name: str, found: Optional[Match], state: State,
         owners: Owners) -> Hit:
    holder, attr = owners[-1] if owners else (None, "")
    return Hit(code, path, where, name, found, state, holder, attr)


_MISSING = object()
_OPAQUE_CACHE: dict[type, bool] = {}
_SLOTS_CACHE: dict[type, tuple[str, ...]] = {}


def _opaque(kind: type) -> bool:
    try:
        return _OPAQUE_CACHE[kind]
    except KeyError:
        pass
    root = kind.__module__.split(".", 1)[0]
    opaque = root in _OPAQUE_ROOTS or (
        root == "torch" and not kind.__module__.startswith("torch.utils.data"))
    _OPAQUE_CACHE[kind] = opaque
    return opaque


def _slots(kind: type) -> tuple[str, ...]:
    try:
        return _SLOTS_CACHE[kind]
    except KeyError:
        pass
    names: list[str] = []
    for cls in kind.__mro__:
        slots = vars(cls).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    _SLOTS_CACHE[kind] = tuple(names)
    return _SLOTS_CACHE[kind]


def _main_importable() -> bool:
    """A spawn worker can run `__main__` again (a script's file, or `python -m` a module): the
    classes defined there unpickle."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None):
        return True
    file = getattr(main, "__file__", None)
    return isinstance(file, str) and os.path.isfile(file)


def _own_getstate(kind: type) -> bool:
    """The class defines `__getstate__` (3.11 gives every object one: that one does not count)."""
    mine = getattr(kind, "__getstate__", None)
    return mine is not None and mine is not getattr(object, "__getstate__", None)


def walk(roots: list[tuple[Any, str]], table: TypeTable, *, pickled: bool,
         worker_init_fn: Any = None, budget: int = DEFAULT_BUDGET) -> WalkResult:
    """Every live handle reachable from `roots` ((object, path) pairs, walked in order)."""
    table.refresh()
    run = _Walk(table, pickled, WorkerInit(worker_init_fn) if worker_init_fn else None, budget)
    for obj, path in reversed(roots):
        run.push(obj, path, (), "loader" if path.count(".") == 1 and
                 not path.endswith(".dataset") else "instance")
    run.run()
    return WalkResult(run.hits, run.nodes, run.items, run.truncated)
