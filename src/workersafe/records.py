"""`@record`: a dataclass that costs less to define, for the ~50 classes every run imports.

`dataclasses.dataclass` compiles each method it adds from generated source: `__init__`,
`__repr__`, `__eq__`, and for a frozen class `__hash__`, `__setattr__` and `__delattr__`, one
`exec` each, at import (about 0.45 ms per frozen class on Python 3.11: a tenth of what the
flake8 plugin costs on a large file went there). A record is the same dataclass with one
generated method, `__init__`; the others are shared functions, closed over the class's field
names, with the same behaviour as dataclasses' own:

- `dataclasses.fields`, `replace`, `asdict`, `is_dataclass`, pickling and copying work as on
  any dataclass (the class is one; `dataclasses.dataclass` still makes its `Field`s, from the
  same body, but only when first asked for: a plain body is read here, ~30 us a class less);
- the module `dataclasses` is not imported until something asks it (`fields`, `asdict`, a
  `dataclasses.field` in a body, a frozen record's error): its import, with `inspect`'s, cost
  ~5 ms of every run (a check of a 300-file tree takes ~120 ms). A record's body spells
  `field(...)` from here, and the code base copies records with `replace` from here (both
  behave as dataclasses' own; `replace` of a dataclass that is no record is dataclasses');
- `==` compares the fields with `compare=True` of two objects of the same class (else
  `NotImplemented`), `hash` is the hash of the same tuple dataclasses hashes (a frozen record
  is hashable, a mutable one is not), `repr` is `Class(a=1, b='x')`;
- a frozen record raises `dataclasses.FrozenInstanceError` on assignment and deletion.

Supported: `frozen`, `eq`, `repr`, fields with `default`, `default_factory`, `init=False`,
`compare=False`, `repr=False`, `hash=`, and `__post_init__`; a record cannot inherit from
another dataclass (none does: each layer is one flat class)."""

from __future__ import annotations

import builtins
import reprlib
import sys
from operator import attrgetter
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, TypeVar

from .record_inits import CODES

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated

T = TypeVar("T")


class _Missing:
    """No default (dataclasses' `MISSING`, without importing dataclasses)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()
BUILT: list[tuple[str, str]] = []  # (module, `__init__` source) of every record made here


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, init: bool = True,
          repr: bool = True, hash: Optional[bool] = None, compare: bool = True) -> Any:
    """`dataclasses.field` for a record's body (the same settings, `kw_only` and `metadata`
    aside: give dataclasses' own for those). Typed
    `Any` (dataclasses' own is typed as its default's type): mypyc, compiling analysis/,
    would check that a `field(default_factory=list)` returns a list, as it does not check
    `dataclasses.field`'s, which it knows by name."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Spec("", default, default_factory, init, repr, compare, hash)


def replace(obj: T, /, **changes: Any) -> T:
    """`dataclasses.replace`: a copy of `obj` with `changes`, made by its `__init__`."""
    specs = _specs_of(type(obj))
    if specs is None:  # a dataclass that is no record (nor a plain subclass of one)
        import dataclasses

        copy: T = dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        return copy
    for spec in specs:
        if spec.init:
            if spec.name not in changes:
                changes[spec.name] = getattr(obj, spec.name)
        elif spec.name in changes:
            raise ValueError(f"field {spec.name} is declared with init=False, it cannot be "
                             "specified with replace()")
    made: T = obj.__class__(**changes)
    return made


def record_fields(cls: type) -> Optional[tuple[str, ...]]:
    """The names of the fields of a record class, in order; None for any other class."""
    specs = _specs_of(cls)
    return None if specs is None else tuple(spec.name for spec in specs)


def _specs_of(cls: type) -> Optional[tuple["_Spec", ...]]:
    """The fields of a record class, or of a plain subclass of one (its fields are the
    record's); None for any other class, a dataclass subclassing a record included (it has
    fields of its own: dataclasses reads them)."""
    for klass in cls.__mro__:
        own = vars(klass)
        if "__record_specs__" in own:
            specs: tuple[_Spec, ...] = own["__record_specs__"]
            return specs
        if "__dataclass_fields__" in own:
            return None
    return None


def _dataclasses_field(value: Any) -> bool:
    """Whether `value` is a `dataclasses.field(...)` (only if the module was imported)."""
    module = sys.modules.get("dataclasses")
    return module is not None and isinstance(value, module.Field)


@dataclass_transform(field_specifiers=(field,))
def record(*, frozen: bool = False, eq: bool = True, repr: bool = True
           ) -> Callable[[type[T]], type[T]]:
    """Use as `@record(frozen=True)` where one would write `@dataclass(frozen=True)`."""

    def wrap(cls: type[T]) -> type[T]:
        _build(cls, frozen, eq, repr)
        return cls

    return wrap


def _build(cls: Any, frozen: bool, eq: bool, with_repr: bool) -> None:
    """Makes `cls` a dataclass in place (`dataclasses.dataclass` returns the class it is
    given, without `slots`)."""
    if any("__dataclass_fields__" in vars(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot inherit from a dataclass")
    own = dict(cls.__dict__)
    if not own.get("__doc__"):  # dataclasses would build one with inspect.signature
        cls.__doc__ = cls.__name__
    fields = _plain_specs(cls, own)
    if fields is None:  # a body only dataclasses reads right (ClassVar, InitVar, ...)
        import dataclasses

        for name, value in own.items():
            if isinstance(value, _Spec):
                setattr(cls, name, value.as_field())
        # the fields only (and `frozen`, which a dataclass subclassing it must match)
        dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen)
        fields = tuple(_Spec.of(f) for f in dataclasses.fields(cls))
    else:
        _as_dataclass_lazily(cls, own, fields, frozen)
        cls.__record_specs__ = fields
    names = tuple(f.name for f in fields)
    if "__init__" not in own:
        cls.__init__ = _init_of(cls, fields, frozen)
    if with_repr and "__repr__" not in own:
        cls.__record_shown__ = tuple(f.name for f in fields if f.repr)
        cls.__repr__ = _record_repr
    if eq and "__eq__" not in own:
        compared = tuple(f.name for f in fields if f.compare)
        cls.__eq__ = _eq_of(_key_of(compared))
        if "__hash__" not in own or own["__hash__"] is None:
            if frozen:
                hashed = tuple(f.name for f in fields
                               if (f.compare if f.hash is None else f.hash))
                cls.__hash__ = _hash_of(_key_of(hashed))
            else:
                cls.__hash__ = None
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
        cls.__record_frozen__ = (cls, frozenset(names))
        cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr


class _Spec:
    """What `@record` reads of a field (a `dataclasses.Field`'s attributes of the same names):
    made from the class body directly, without the `Field` objects dataclasses would make at
    import (~30 us a record, every run of the flake8 plugin: ~50 records)."""

    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare", "hash")

    def __init__(self, name: str, default: Any = _MISSING, default_factory: Any = _MISSING,
                 init: bool = True, repr: bool = True, compare: bool = True,
                 hash: Any = None) -> None:
        self.name, self.default, self.default_factory = name, default, default_factory
        self.init, self.repr, self.compare, self.hash = init, repr, compare, hash

    @classmethod
    def of(cls, f: Any) -> "_Spec":
        """The settings of a `dataclasses.Field`, its `MISSING` read as this module's."""
        return cls(f.name, _ours(f.default), _ours(f.default_factory), f.init, f.repr,
                   f.compare, f.hash)

    def as_field(self) -> Any:
        """The same settings as a `dataclasses.Field` (for dataclasses to read)."""
        import dataclasses

        theirs: Any = dataclasses.MISSING
        return dataclasses.field(
            default=theirs if self.default is _MISSING else self.default,
            default_factory=theirs if self.default_factory is _MISSING
            else self.default_factory,
            init=self.init, repr=self.repr, hash=self.hash, compare=self.compare)


def _ours(value: Any) -> Any:
    """dataclasses' `MISSING` as `_MISSING`, anything else as it is (read from a `Field`:
    the module is imported)."""
    return _MISSING if value is sys.modules["dataclasses"].MISSING else value


# dataclasses sets `__match_args__` from Python 3.10
_MATCH_ARGS = sys.version_info >= (3, 10)
# annotations dataclasses reads as something other than a field: such a body is handed to it
_NOT_PLAIN = ("ClassVar", "InitVar", "KW_ONLY")


def _plain_annotation(kind: Any) -> bool:
    """An annotation dataclasses reads as a field's: a string naming no ClassVar, InitVar or
    KW_ONLY (as `from __future__ import annotations` leaves them), or a class other than
    dataclasses' (mypyc, compiling analysis/, gives the classes: `set`, `ast.Call`)."""
    if isinstance(kind, str):
        return not any(word in kind for word in _NOT_PLAIN)
    return isinstance(kind, type) and kind.__module__ != "dataclasses"


def _plain_specs(cls: Any, own: dict[str, Any]) -> Optional[tuple[_Spec, ...]]:
    """The fields of a body whose annotations are all plain (`_plain_annotation`), as dataclasses
    would find them (a default: the class attribute, inherited ones included; a `field()`
    there: its settings); None for any other body. Refuses what dataclasses refuses."""
    annotations = own.get("__annotations__", {})
    specs = []
    for name, kind in annotations.items():
        if not _plain_annotation(kind):
            return None
        value = getattr(cls, name, _MISSING)
        if isinstance(value, _Spec):
            spec = _Spec(name, value.default, value.default_factory, value.init, value.repr,
                         value.compare, value.hash)
        elif _dataclasses_field(value):
            if getattr(value, "kw_only", False) is True:
                return None
            spec = _Spec.of(value)
            spec.name = name
        else:
            spec = _Spec(name, value)
        if spec.default is not _MISSING and spec.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not "
                             "allowed: use default_factory")
        specs.append(spec)
    for name, value in own.items():
        if (isinstance(value, _Spec) or _dataclasses_field(value)) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    seen_default = False
    for spec in specs:
        if not spec.init:
            continue
        if spec.default is not _MISSING or spec.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
    return tuple(specs)


def _as_dataclass_lazily(cls: Any, own: dict[str, Any], specs: tuple[_Spec, ...],
                         frozen: bool) -> None:
    """What `dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen)`
    leaves on `cls`, its `Field` objects made when first asked for (`fields`, `replace`,
    `asdict`, ...: few classes, in few runs). A `field()` in the body gives way to its
    default, as there."""
    body: dict[str, Any] = {}
    for spec in specs:
        value = getattr(cls, spec.name, _MISSING)
        if isinstance(value, _Spec) or _dataclasses_field(value):
            body[spec.name] = value
            if spec.default is _MISSING:
                delattr(cls, spec.name)
            else:
                setattr(cls, spec.name, spec.default)
        elif spec.name in own:
            body[spec.name] = value
    made = _MadeFields(cls, own.get("__annotations__", {}), body, frozen)
    cls.__dataclass_fields__ = _Lazy(made, "__dataclass_fields__")
    cls.__dataclass_params__ = _Lazy(made, "__dataclass_params__")
    if _MATCH_ARGS and "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(s.name for s in specs if s.init))
    if sys.version_info >= (3, 13) and "__replace__" not in own:  # `copy.replace`
        cls.__replace__ = replace


class _MadeFields:
    """dataclasses' own `__dataclass_fields__` and `__dataclass_params__` of a record, made
    when first read by `dataclasses.dataclass` from the same body (on a copy of the class: the
    record's methods are untouched), then set on the class in place of the `_Lazy`s."""

    def __init__(self, cls: Any, annotations: dict[str, Any], body: dict[str, Any],
                 frozen: bool) -> None:
        self.cls, self.annotations, self.body, self.frozen = cls, annotations, body, frozen

    def get(self, name: str) -> Any:
        import dataclasses

        cls = self.cls
        body = {key: value.as_field() if isinstance(value, _Spec) else value
                for key, value in self.body.items()}
        space = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__, "__annotations__": self.annotations, **body}
        copy = dataclasses.dataclass(type(cls)(cls.__name__, cls.__bases__, space),
                                     init=False, repr=False, eq=False, frozen=self.frozen)
        for made in ("__dataclass_fields__", "__dataclass_params__"):
            if isinstance(cls.__dict__.get(made), _Lazy):
                setattr(cls, made, copy.__dict__[made])
        return copy.__dict__[name]


class _Lazy:
    """A class attribute made by `_MadeFields` when first read (on the class or an object)."""

    def __init__(self, made: _MadeFields, name: str) -> None:
        self.made, self.name = made, name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self.made.get(self.name)


def _init_of(cls: Any, fields: tuple[_Spec, ...], frozen: bool) -> Callable[..., None]:
    """The one method made per record: its signature is the fields'. Its source is looked up
    in `record_inits.CODES`, compiled once into that module's .pyc (`compile` cost ~70 us a
    record, most of what a record still cost at import); a source not found there (a record
    changed since the table was written) is compiled here, as before."""
    space: dict[str, Any] = {"__builtins__": builtins, "_MISSING": _MISSING,
                             "_set": object.__setattr__}
    params: list[str] = ["self"]
    defaults: list[Any] = []
    sets: list[tuple[str, str]] = []  # (field, the expression it is set to)
    for f in fields:
        name = f.name
        if f.default is not _MISSING:
            space[f"_d_{name}"] = f.default
            value = name if f.init else f"_d_{name}"
            default, default_value = f"=_d_{name}", f.default
        elif f.default_factory is not _MISSING:
            space[f"_f_{name}"] = f.default_factory
            value = f"_f_{name}() if {name} is _MISSING else {name}" if f.init \
                else f"_f_{name}()"
            default, default_value = "=_MISSING", _MISSING
        elif f.init:
            value, default = name, ""
        else:
            continue  # `field(init=False)` without a default: set by `__post_init__`
        if f.init:
            params.append(name + default)
            if default:
                defaults.append(default_value)
        sets.append((name, value))
    if not frozen:
        body = [f"self.{name} = {value}" for name, value in sets]
    elif sets and _plain_fields(cls, fields) and "_o" not in dict(sets):
        # straight into the object's dict: what `object.__setattr__` does for a field no
        # descriptor intercepts, at half the cost (~0.5 us of a frozen record's ~1 us, and a
        # file's analysis makes thousands); the dict the object then has costs ~64 bytes
        body = ["_o = self.__dict__"] + [f"_o[{name!r}] = {value}" for name, value in sets]
    else:
        body = [f"_set(self, {name!r}, {value})" for name, value in sets]
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = (f"def __init__({', '.join(params)}):\n    " + ("\n    ".join(body) or "pass")
              + "\n")
    BUILT.append((cls.__module__, source))
    code = CODES.get(source)
    init: Callable[..., None]
    if code is not None:  # the same function as the `exec` below would make
        init = FunctionType(code, space, "__init__", tuple(defaults) or None)
    else:
        exec(source, space)
        init = space["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _plain_fields(cls: Any, fields: tuple[_Spec, ...]) -> bool:
    """No field of `cls` is a data descriptor of its class (a property or slot with a setter
    `object.__setattr__` would call), and its objects have a `__dict__`."""
    for f in fields:
        for base in cls.__mro__:
            found = base.__dict__.get(f.name)
            if found is not None and (hasattr(type(found), "__set__")
                                      or hasattr(type(found), "__delete__")):
                return False
    return all("__slots__" not in base.__dict__ for base in cls.__mro__[:-1])


def inits_module(sources: Iterable[str]) -> str:
    """The text of `record_inits.py` for these `__init__` sources (scripts/gen_record_inits.py):
    each function defined once, its defaults spelled `None` (a function's code does not hold
    its defaults: `_init_of` gives the record's own), its code filed under its source."""
    import re

    out = [_INITS_HEADER]
    for source in sorted(set(sources)):
        head, _, rest = source.partition("\n")
        head = re.sub(r"=(?:_d_\w+|_MISSING)\b", "=None", head)
        out.append(f"\n{head}\n{rest}CODES[{source!r}] = __init__.__code__\n")
    return "".join(out)


_INITS_HEADER = '''# flake8: noqa
# mypy: ignore-errors
"""Generated by scripts/gen_record_inits.py: do not edit. The `__init__` of every record
(records.py), compiled with this module into its .pyc once rather than at each import; a
record whose source is not here compiles its own (then regenerate: the test says so)."""

from types import CodeType

CODES: dict[str, CodeType] = {}
'''


def _key_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of `names` of an object, as dataclasses builds it for `==` and `hash`."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_of(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash_of(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


# `__repr__`, `__setattr__` and `__delattr__` are rarely called (a repr, a mistake): one function
# each for every record, reading what it needs from the class (`__record_shown__`, the fields
# shown; `__record_frozen__`, the record class and its fields), rather than closures made for
# each record at import (~10 objects a record, each traversed by every full collection).


@reprlib.recursive_repr()
def _record_repr(self: Any) -> str:
    shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in self.__record_shown__])
    return f"{self.__class__.__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    cls, names = self.__record_frozen__
    if type(self) is cls or name in names:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    super(cls, self).__setattr__(name, value)


def _frozen_delattr(self: Any, name: str) -> None:
    cls, names = self.__record_frozen__
    if type(self) is cls or name in names:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")
    super(cls, self).__delattr__(name)
