"""Per-file facts: what one file says, with no knowledge of other files.

Plain frozen dataclasses, so they can be cached on disk and linked across files later. Names
are qualified through the file's own imports: `torch.utils.data.Dataset`, `pkg.data.Remote`.
A name that could not be qualified is kept bare; the linker tries the file's star imports."""

from __future__ import annotations

import functools
import typing
from typing import Any, Callable, Literal, Mapping, Optional, Tuple

from .records import field, record, record_fields

FACTS_VERSION = 46  # bump whenever a dataclass below changes: old caches are then ignored

# The target of a `cls(...)` a method returns (`DatasetRef("call", OWN_CLASS)`): the class the
# method is called on (`Sub.from_config(cfg)` builds a Sub), decided when linking.
OWN_CLASS = "cls"
# How a lookup by name is spelled: `DATASETS.build(cfg)`, `registry.get_task(name)`,
# `load_dataset(name)` (the registry a decorator fills; `DatasetRef.key_params`)
LOOKUP_VERBS = ("get", "build", "create", "make", "load", "fetch")


def registry_kind(method: str, verb: str) -> str:
    """What kind of thing a registry method registers or looks up: "register_task" and
    "get_task_class" → "task"; "register_module", "build" and "get" → ""."""
    what = method[len(verb):].strip("_")
    for suffix in ("_class", "_cls", "_type", "_from_cfg"):
        what = what.removesuffix(suffix)
    return "" if what in ("module", "from_cfg") else what


def looks_up(function: str, registering: str) -> bool:
    """Whether a module's function (`get_reader`) is a lookup of the registry its decorator
    `registering` (`register_reader`) fills, as the linker reads lookups: named for a lookup
    verb and the same kind of thing; every lookup function reads a plain `register`'s."""
    verb = next((v for v in LOOKUP_VERBS if function.startswith(v)), None)
    if verb is None:
        return False
    kind = registry_kind(registering, "register")
    return not kind or registry_kind(function, verb) == kind


@functools.lru_cache(maxsize=65536)  # each round and each class asks of the same tuples read
def last_parts(names: Tuple[str, ...]) -> frozenset[str]:
    """The names read, a module's attribute (`utils.io.get_zip`) by its own name."""
    return frozenset(name.rpartition(".")[2] for name in names)


@record(frozen=True)
class Span:
    line: int  # 1-based
    col: int  # 0-based, as flake8 reports
    end_line: int
    end_col: int


@record(frozen=True)
class HandleSite:
    """A call that creates a handle."""

    handle: str  # qualified constructor name (a registry key)
    span: Span


@record(frozen=True)
class HeldHandle:
    """A handle kept on an instance (created in a method) or on a class (class body)."""

    attr: str
    site: HandleSite
    method: str  # creating method, or "" for a class attribute
    derived: bool = False  # the attribute holds an object derived from the handle
    closed: bool = False  # closed again in the creating method


@record(frozen=True)
class HeldCall:
    """An attribute set from a call whose result may be a handle (a function or method the
    linker looks up: `self.env = self._connect(p)`, `self.envs.append(open_db(p))`)."""

    attr: str
    method: str
    callee: str  # "self.m" for a method of the class, else the qualified function name
    span: Span
    # the handles the call is given (`retryable(requests.Session())`): a function returning
    # its parameter gives one back
    handle_args: Tuple["HandleArg", ...] = ()


@record(frozen=True)
class MethodFacts:
    name: str
    attrs_read: Tuple[str, ...] = ()  # `self.x` / `Cls.x` read (not only assigned)
    attrs_used: Tuple[str, ...] = ()  # read for I/O, not just configured (`self.x.headers`)
    self_calls: Tuple[str, ...] = ()  # `self.m(...)`
    globals_read: Tuple[str, ...] = ()  # bare names read (candidates for module handles)
    guarded_attrs: Tuple[str, ...] = ()  # attrs re-created under a pid check
    guarded_calls: Tuple[str, ...] = ()  # `self.m()` called under a pid check
    calls_super_init: bool = False
    # in source order: "call:m" (`self.m()`, "call:__init__" for the base's), "open:a",
    # "close:a" (`self.a.close()`), "reset:a" (`self.a = None` / `del self.a`)
    effects: Tuple[str, ...] = ()
    returns_handle: Optional[HandleSite] = None  # `return lmdb.open(p)`
    returns_call: str = ""  # `return self._connect(p)` → "self._connect", `return f()` → "m.f"
    # what a factory method returns: `return cls(root)` (target "cls": the class it is called
    # on), `return Frames(root)`, `return self._build(split)` (target "<Class>._build")
    returns: Tuple[DatasetRef, ...] = ()
    super_calls: Tuple[str, ...] = ()  # `super().m(...)`, but `__init__` (`calls_super_init`)


@record(frozen=True)
class PickledState:
    """What a class's `__getstate__` pickles of the instance (analysis/pickled.py): every
    attribute but `names` ("all-but"), only `names` ("only"), or it cannot be told
    ("unknown", also for `__reduce__`: counts as deciding, nothing taken to be pickled)."""

    mode: str
    names: Tuple[str, ...] = ()


@record(frozen=True)
class BaseInit:
    """What a class's `__init__` passes to its base's (`super().__init__(dataset, *args,
    num_workers=workers, **kwargs)`): each argument as (slot, source). Slot: "#<i>" (the i-th
    positional), a keyword, "*<i>" (a `*x` from position i on), "**". Source: "p:<name>" (an
    `__init__` parameter), "*" / "**" (its own `*args` / `**kwargs`), "=<int>" (a constant),
    "?" (anything else)."""

    positional: int  # how many of `ClassFacts.init_params` take positional arguments
    varargs: bool  # `__init__` takes `*args`
    varkw: bool  # `__init__` takes `**kwargs`
    args: Tuple[Tuple[str, str], ...] = ()


@record(frozen=True)
class ClassFacts:
    name: str
    qualname: str
    bases: Tuple[str, ...]
    span: Span
    methods: Tuple[MethodFacts, ...] = ()
    held: Tuple[HeldHandle, ...] = ()  # instance handles (created in methods)
    class_held: Tuple[HeldHandle, ...] = ()  # class-attribute handles
    init_params: Tuple[str, ...] = ()  # `__init__` parameters after self, in order
    param_attrs: Tuple[Tuple[str, str], ...] = ()  # (param, attr) for `self.attr = param`
    attr_refs: Tuple[Tuple[str, Tuple[DatasetRef, ...]], ...] = ()  # `self.train_ds = DS()`
    held_calls: Tuple[HeldCall, ...] = ()  # `self.env = open_env(p)`: resolved when linking
    # (param, qualified class) from `reader: Reader` or `assert isinstance(reader, Reader)`
    param_types: Tuple[Tuple[str, str], ...] = ()
    # a class-level container (`_envs = {}`) a method fills with handles: attr = the
    # container, method = the filling method (`Frames._envs[p] = lmdb.open(p)` in `_env`)
    class_caches: Tuple[HeldHandle, ...] = ()
    pickled: Optional[PickledState] = None  # when it defines __getstate__ or __reduce__
    # (attr, source attr, method) for `self.txn = self.env.begin()`: what an attribute set
    # from a call (held_calls) derives, known to be a handle only when linking
    derived_attrs: Tuple[Tuple[str, str, str], ...] = ()
    # (param, value) for an `__init__` parameter with a constant int default (`workers=4`)
    init_int_defaults: Tuple[Tuple[str, int], ...] = ()
    # how `__init__` calls its base's `__init__` (None: no `__init__`, or no such call read)
    base_init: Optional[BaseInit] = None
    # bare names `__init__` may keep as a callable attribute (`self.loader = loader`, then
    # `self.loader(p)`): ("p:<param>", name) for a parameter's default, (slot, name) for a name
    # given to the base's `__init__` (slots as in `BaseInit.args`)
    init_callables: Tuple[Tuple[str, str], ...] = ()
    # (line, col, attr, param, taken_when, default) for `self.<attr> = <call>` that `__init__`
    # runs only in one branch of `if param:` (taken_when: the parameter's truth that runs it;
    # default: the truth of its constant default, None without one): a construction's
    # arguments decide (analysis/branches)
    branch_params: Tuple[Tuple[int, int, str, str, bool, Optional[bool]], ...] = ()
    # registered by a class decorator: (the decorator's qualified callee, the name it is given
    # or "" for the class's own name): `@DATASETS.register_module()`, `@register_task("x")`
    registered: Tuple[Tuple[str, str], ...] = ()
    # (param, attr, how) for `self.x = h5[split]` or `self.g = h5.get("g")` in `__init__`: a
    # member of a parameter kept (how: "[]" or the method's name); it keeps the handle alive
    # where the handle's kind says so (`HandleType.derived_subscript`, `derived_methods`)
    param_members: Tuple[Tuple[str, str, str], ...] = ()
    # (method, param, taken_when, default) for `self.<method>()` that `__init__` calls only in
    # one branch of `if param:` (as branch_params), every `self.<method>` it mentions being
    # such a call: a construction taking the other branch does not run it (analysis/branches)
    branch_calls: Tuple[Tuple[str, str, bool, Optional[bool]], ...] = ()

    def method(self, name: str) -> Optional[MethodFacts]:
        """The method of that name (the first, as the class body defines them)."""
        return self._methods_by_name.get(name)

    @functools.cached_property
    def _methods_by_name(self) -> dict[str, MethodFacts]:
        # built once (linking asks each class for its `__init__` and others many times)
        found: dict[str, MethodFacts] = {}
        for method in self.methods:
            found.setdefault(method.name, method)
        return found


@record(frozen=True)
class HandleArg:
    """A handle passed to a constructor call: by position or by keyword."""

    position: int  # -1 when passed by keyword
    keyword: str
    site: HandleSite


@record(frozen=True)
class AttrArg:
    """An argument of a constructor call reading an attribute of another value that may be a
    dataset (or holder object): `EvalSet(train_ds.h5)`. The linker decides whether what the
    value may be keeps a handle there (then the call passes an open handle: WS104)."""

    position: int  # -1 when passed by keyword
    keyword: str
    attr: str  # the attribute read: "h5"
    refs: Tuple[DatasetRef, ...]  # what the value it is read from may be (`train_ds`)
    span: Span  # the argument
    text: str  # its source, for messages: "train_ds.h5"


RefKind = Literal["call", "name", "attr", "param", "kept", "built"]
UseKind = Literal["getitem", "iter", "len", "member"]


@record(frozen=True)
class DatasetRef:
    """What a DataLoader's dataset argument (or a factory's return value) refers to."""

    # "call" (Cls(...) or factory(...)), "name" (module variable), "attr" (self.x), "param" (a
    # parameter of a module-level function: target "<function>#<index>#<name>"), "kept" (made by
    # the linker: an attribute of a dataset kept by another, `<outer class>.<attr>`), "built"
    # (an instance of the class the callers pass for that parameter: `ds_type(p)`)
    kind: RefKind
    target: str  # qualified name of the class, function or variable
    handle_args: Tuple[HandleArg, ...] = ()
    arg_refs: Tuple[ArgRef, ...] = ()  # what else the call is given: `DS(Reader(p))`
    # a "call": how many positional arguments it passes (-1: unknown, `*args`/`**kwargs`), and
    # its keywords; tells a parameter left to its default from one given a value
    positional: int = -1
    keywords: Tuple[str, ...] = ()
    # a "call": the arguments it reads from another value's attribute (`train_ds.h5`)
    attr_args: Tuple[AttrArg, ...] = ()
    # a "call": the string constants it is given, (position or -1, keyword, value); a dict
    # given first records its "type"/"name" key (`build(dict(type="X"))`: (0, "type", "X"))
    texts: Tuple[Tuple[int, str, str], ...] = ()
    # a "call" whose result is called in turn (`registry.get_task("x")(cfg)`): the outer
    # call's arguments are the construction's
    result_called: bool = False
    # a lookup-like "call" (named for LOOKUP_VERBS): the parameters of the function holding
    # it that it passes on as they are, (position or -1, keyword, "<function>#<index>#<name>"):
    # `build_from_cfg(cfg, DATASETS)` in `def build_dataset(cfg)`, which a caller's constant
    # then decides (`build_dataset(dict(type="X"))`)
    key_params: Tuple[Tuple[int, str, str], ...] = ()
    # with `result_called`: the method called on each class the call returns, whose value it
    # is (`get_dataset_cls(name).from_config(cfg)`: "from_config"; the outer call's arguments
    # are that method's)
    then: str = ""


@record(frozen=True)
class ArgRef:
    """An argument of a call that may be a dataset (or holder object), or a constant int."""

    position: int  # -1 when passed by keyword
    keyword: str
    refs: Tuple[DatasetRef, ...] = ()
    int_value: Optional[int] = None
    none: bool = False  # the constant None
    truth: Optional[bool] = None  # the truth of a constant (`readonly=False`: False)


@record(frozen=True)
class CallSite:
    """A call of a function with arguments that may be datasets: `val(net, test_dataset)`;
    or of a method (`self.evaluate(ds)`, `trainer.fit(ds)`): then `target` is the method's
    name and `receiver` what the object it is called on may be (`self`: the class)."""

    target: str  # qualified name of the called function; a method's name
    args: Tuple[ArgRef, ...]
    span: Span
    receiver: Tuple[DatasetRef, ...] = ()


@record(frozen=True)
class LoaderCall:
    span: Span
    datasets: Tuple[DatasetRef, ...]
    num_workers: Optional[int]  # None: not a constant (treated as >= 2)
    num_workers_text: str
    persistent: Optional[bool]  # None: not a constant
    context: str  # "fork", "spawn", "forkserver", "" (platform default), "?" unknown
    worker_inits: Tuple[str, ...] = ()  # worker_init_fn and what it chains (partials unwrapped)
    path: str = ""
    num_workers_param: str = ""  # num_workers is this parameter ("<function>#<index>#<name>")
    function: str = ""  # the module-level function (or method) holding the call, qualified
    # num_workers is `self.<attr>` in a method: "<class>.<attr>" (its constructions decide)
    num_workers_attr: str = ""
    # built by a framework function (`fastai.basic_data.DataBunch.create`, a row of
    # frameworks.FRAMEWORK_LOADERS), not by a `DataLoader(...)` call: its qualified name
    framework: str = ""
    # a call of a project class that may subclass torch's DataLoader (the linker decides,
    # `FileFacts.loader_candidates`): the class called, qualified; read above as a DataLoader
    via: str = ""
    args: Tuple[ArgRef, ...] = ()  # for a candidate: every argument ("*"/"**" keyword: starred)
    wires_init: bool = True  # a `worker_init_fn=` given to the call reaches torch's DataLoader
    # a bare name the file gets only from a star import of a project module
    # (`from utils import *`, utils re-exporting torch's DataLoader): a loader only if the
    # linker resolves it to one
    star_name: str = ""


@record(frozen=True)
class FunctionFacts:
    """A module-level function: factory, worker_init_fn, or cached handle getter."""

    name: str
    qualname: str
    returns: Tuple[DatasetRef, ...] = ()
    method_calls: Tuple[str, ...] = ()  # `.m(...)` called anywhere inside
    attr_handle_assigns: Tuple[str, ...] = ()  # `<expr>.attr = <handle>` inside
    returns_handle: Optional[HandleSite] = None  # `def open_env(p): return lmdb.open(p)`
    returns_call: str = ""  # `return other(p)`: the qualified callee
    cached: bool = False
    globals_read: Tuple[str, ...] = ()  # bare names read inside (the functions it calls)
    # project functions it calls or passes on (`main_worker` in `mp.spawn(main_worker)`),
    # qualified: the code an entry runs, for the `set_start_method` it reaches
    calls: Tuple[str, ...] = ()
    # which returns an argument chooses: (index in `returns`, the parameter
    # "<function>#<index>#<name>", the string it equals): `if name == "a": return A(p)`
    chosen: Tuple[Tuple[int, str, str], ...] = ()


@record(frozen=True)
class ModuleHandle:
    """A handle created at module level, or returned by a cached module-level function."""

    name: str
    site: HandleSite
    # a process-global cache (`_CACHE[path] = zipfile.ZipFile(path)`) filled by this function
    filled_by: str = ""


# --- the remedies people write (WS3xx; filled by analysis/remedies.py) ---------------------

@record(frozen=True)
class AttrSite:
    """An attribute assigned (or a method called) at a place."""

    attr: str
    span: Span


@record(frozen=True)
class LazyOpen:
    """`if self.x is None: self.x = <handle>` (or `: self._open()`) in a method."""

    attr: str
    method: str  # the accessor: the method holding the check
    site: Optional[HandleSite]  # the creating call, when made in the accessor itself
    opener: str = ""  # `self.<opener>()` called under the check, when it creates the handle
    process_checked: bool = False  # a process check (os.getpid(), get_worker_info()) guards it


@record(frozen=True)
class RemedyClass:
    qualname: str
    init_none: Tuple[AttrSite, ...] = ()  # `self.x = None` in `__init__`
    init_set: Tuple[str, ...] = ()  # attributes `__init__` itself sets to something else
    lazy: Tuple[LazyOpen, ...] = ()
    wrapped_attrs: Tuple[str, ...] = ()  # `self.x = <__init__ param>` indexed or iterated
    # (method, attr, member) for `self.<attr>.<member>` in a method: what it uses of the
    # objects it keeps (`self.reader.get(k)` in `__getitem__`)
    member_uses: Tuple[Tuple[str, str, str], ...] = ()
    # (param, site) for `self.x = <param>` in `__init__`: None when the caller passes None
    param_kept: Tuple[Tuple[str, AttrSite], ...] = ()
    none_defaults: Tuple[str, ...] = ()  # `__init__` parameters defaulting to None
    # (method, attr): every read of `self.<attr>` in the method handles None (`self.s if
    # self.s is not None else requests`, `self.s or requests`, under `if self.s:`)
    none_safe: Tuple[Tuple[str, str], ...] = ()


@record(frozen=True)
class WorkerInit:
    """What a worker_init_fn (module function or lambda) does to `get_worker_info().dataset`."""

    name: str  # qualified function name; "" for a lambda; `rows.open` for a bound method
    span: Span  # the function (or lambda)
    sets: Tuple[AttrSite, ...] = ()  # `dataset.x = <handle>`
    calls: Tuple[AttrSite, ...] = ()  # `dataset.m(...)`
    walks_wrappers: bool = False  # reads `.dataset`/`.datasets`, isinstance, loops, passes it on
    loader: Optional[Span] = None  # for a lambda: the DataLoader call it is passed to
    # `dataset.data = dataset.h5[key]`: (the set handle read, the attribute set from it)
    derived: Tuple[Tuple[str, AttrSite], ...] = ()


@record(frozen=True)
class LoaderWrap:
    """A DataLoader whose dataset argument is a torch wrapper (`Subset(...)`, a `random_split`
    result, ...), and where the loader is first iterated."""

    loader: Span
    wrapper: str = ""  # qualified wrapper name, "" when not wrapped (by a torch wrapper)
    iterated_line: int = 0  # first `for _ in loader` / `iter(loader)` after it; 0: not seen
    scope: str = ""  # the function holding the call ("" at module level)


@record(frozen=True)
class DatasetUse:
    """A parent-side use of a dataset: `ds[i]`, `iter(ds)`, `for x in ds`, `len(ds)`, a method
    or attribute of it or of an object it keeps (`ds.get_env()`, `ds.reader.open()`)."""

    kind: UseKind  # "member": `ds.get_env()`, `ds.reader.open()`
    refs: Tuple[DatasetRef, ...]
    span: Span
    scope: str = ""
    member: str = ""  # for "member": the method or attribute used (`get_env`, `open`)
    via: str = ""  # for "member": the dataset attribute it is used on (`reader`), or ""


@record(frozen=True)
class RemedyFacts:
    classes: Tuple[RemedyClass, ...] = ()
    worker_inits: Tuple[WorkerInit, ...] = ()
    loaders: Tuple[LoaderWrap, ...] = ()
    uses: Tuple[DatasetUse, ...] = ()


@record(frozen=True)
class FileFacts:
    path: str
    module: str
    imports: Tuple[Tuple[str, str], ...] = ()  # (local name, qualified name), module level
    star_imports: Tuple[str, ...] = ()
    classes: Tuple[ClassFacts, ...] = ()
    functions: Tuple[FunctionFacts, ...] = ()
    loaders: Tuple[LoaderCall, ...] = ()
    # calls of project classes read as DataLoader calls, in case the class subclasses it
    loader_candidates: Tuple[LoaderCall, ...] = ()
    calls: Tuple[CallSite, ...] = ()
    module_handles: Tuple[ModuleHandle, ...] = ()
    module_vars: Tuple[Tuple[str, Tuple[DatasetRef, ...]], ...] = ()
    globals_read_outside_classes: Tuple[str, ...] = ()
    # `set_start_method(...)` at module level (`if __name__ == "__main__":` included)
    start_method: str = ""
    # (function or "<Class>.<method>", start method): set inside it; counts for the loaders
    # there and in what it calls, and for a program whose entry reaches it (`entry_calls`)
    scoped_start_methods: Tuple[Tuple[str, str], ...] = ()
    entry_calls: Tuple[str, ...] = ()  # project functions module-level code calls or passes on
    error: str = ""  # parse failure: the message for WS001
    error_at: Tuple[int, int] = (0, 0)  # where WS001 goes: (1-based line, 0-based col); 0: line 1
    remedies: RemedyFacts = RemedyFacts()

    def import_map(self) -> Mapping[str, str]:
        """Local name → qualified name; built once (the facts are frozen; linking asks it for
        every name it resolves)."""
        return self._import_map

    @functools.cached_property
    def _import_map(self) -> dict[str, str]:
        return dict(self.imports)


# --- serialisation (for the on-disk cache) -------------------------------------------------

def to_jsonable(obj: Any) -> Any:
    """`obj` as JSON data: a dataclass as a dict of its fields (in order), a tuple as a list,
    anything else as it is. Each class's field names are read once (`dataclasses.fields` and
    `is_dataclass` per object and per value made this cost more than the analysis of the file:
    ~39 ms of a 3,000-line file's facts, now a fifth). A `DatasetRef` met again (one object
    shared: `apo = Normalize(ds)`, then `apo` given to ten more wrappers) is written once, then
    as `{"$ref": n}`, n its place among the refs written so far (each counted once its own
    arguments are written): a pipeline of wrappers written out in full doubled with each
    level (Uni-Mol's tasks: 113 MB for one file)."""
    return _to_jsonable(obj, {})


def _to_jsonable(obj: Any, written: dict[int, int]) -> Any:
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    names = _NAMES.get(kind)
    if names is not None:
        if kind is DatasetRef:
            seen = written.get(id(obj))
            if seen is not None:
                return {"$ref": seen}
        out = {}
        for name in names:
            value = getattr(obj, name)
            out[name] = value if type(value) in _PLAIN else _to_jsonable(value, written)
        if kind is DatasetRef:
            written[id(obj)] = len(written)
        return out
    if kind is tuple:
        return [x if type(x) in _PLAIN else _to_jsonable(x, written) for x in obj]
    if not isinstance(obj, type):
        names = _field_names(kind)
        if names is not None:
            _NAMES[kind] = names
            return _to_jsonable(obj, written)
    if isinstance(obj, tuple):
        return [_to_jsonable(x, written) for x in obj]
    return obj


def _field_names(cls: type) -> Optional[tuple[str, ...]]:
    """The field names of a record or dataclass class, in order; None for another class (the
    facts are records: dataclasses is imported only if one is not)."""
    names = record_fields(cls)
    if names is not None or not hasattr(cls, "__dataclass_fields__"):
        return names
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(cls))


_PLAIN = frozenset({str, int, bool, float, type(None)})  # JSON as they are
_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass → its field names


def from_jsonable(cls: Any, data: Any) -> Any:
    """Rebuild a facts dataclass from `to_jsonable` output; raises on a shape mismatch. A
    `{"$ref": n}` is the n-th `DatasetRef` rebuilt so far, the same object again."""
    _READ.append([])
    try:
        return _from_jsonable(cls, data)
    finally:
        _READ.pop()


# the DatasetRefs each `from_jsonable` in progress has rebuilt, in order (`$ref`'s numbering)
_READ: list[list[Any]] = []


def _from_jsonable(cls: Any, data: Any) -> Any:
    if cls is DatasetRef:
        seen = data.get("$ref")
        if seen is not None:
            return _READ[-1][seen]
    plain, converted = _fields_of(cls)
    values = {name: data[name] for name in plain}
    for name, convert in converted:
        values[name] = convert(data[name])
    made = cls(**values)
    if cls is DatasetRef:
        _READ[-1].append(made)
    return made


Convert = Callable[[Any], Any]
# class → (names of the fields JSON gives back as they are, (field name, converter) of the
# others): read from the type hints once per class, not per object (a warm cache rebuilds
# hundreds of thousands of objects)
_FIELDS: dict[Any, tuple[tuple[str, ...], tuple[tuple[str, Convert], ...]]] = {}


def _fields_of(cls: Any) -> tuple[tuple[str, ...], tuple[tuple[str, Convert], ...]]:
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls, globals())
        converters = [(name, _converter(hints[name])) for name in _field_names(cls) or ()]
        found = _FIELDS[cls] = (tuple(n for n, c in converters if c is _same),
                                tuple((n, c) for n, c in converters if c is not _same))
    return found


def _same(value: Any) -> Any:
    return value


def _converter(tp: Any) -> Convert:
    """How a value of type `tp` comes back from JSON (lists → tuples, dicts → dataclasses);
    `_same` when it comes back as it is."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and _field_names(tp) is not None:
        return functools.partial(_from_jsonable, tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            each = _converter(args[0])
            return tuple if each is _same else lambda value: tuple([each(v) for v in value])
        parts = tuple(_converter(a) for a in args)
        return lambda value: tuple([c(v) for c, v in zip(parts, value)])
    if origin is typing.Union:
        inner = _converter(next(a for a in typing.get_args(tp) if a is not type(None)))
        if inner is _same:
            return _same
        return lambda value: None if value is None else inner(value)
    return _same


__all__ = [name for name in dir() if name[0].isupper()] + ["to_jsonable", "from_jsonable", "field"]
