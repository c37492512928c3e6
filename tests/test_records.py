"""`@record` behaves as `@dataclass` does: each pair below is one class body decorated both
ways, and every operation the code base uses on facts and engine values gives the same answer
(equality, hashes, repr, replace, fields, pickling, frozen errors, defaults)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import pytest

from workersafe import facts, records
from workersafe.records import record


# the same bodies, twice (module level: pickling finds classes by name)
@dataclass(frozen=True)
class DcPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    label: Optional[str] = field(default=None, repr=False)


@record(frozen=True)
class RecPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    label: Optional[str] = field(default=None, repr=False)


@dataclass
class DcBag:
    name: str
    items: list[int] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    total: int = field(init=False, default=0)
    derived: str = field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.name.upper()


@record()
class RecBag:
    name: str
    items: list[int] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    total: int = field(init=False, default=0)
    derived: str = field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.name.upper()


# the same bodies again, spelling `field` from records (as the code base does: dataclasses is
# then not imported)
@record(frozen=True)
class OwnPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    note: str = records.field(default="", compare=False)
    label: Optional[str] = records.field(default=None, repr=False)


@record()
class OwnBag:
    name: str
    items: list[int] = records.field(default_factory=list)
    seen: set[str] = records.field(default_factory=set)
    total: int = records.field(init=False, default=0)
    derived: str = records.field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.name.upper()


DC_FROZEN, REC_FROZEN, DC_MUTABLE, REC_MUTABLE = DcPoint, RecPoint, DcBag, RecBag


@pytest.mark.parametrize("args, other", [
    ((1, 2, ("a",), "n", "l"), (1, 2, ("a",), "other note", "l")),  # note: not compared
    ((1, 2, ("a",), "n", "l"), (1, 2, ("a",), "n", None)),  # label: compared, not shown
    ((1,), (2,)),
    ((1, 0, ()), (1, 0, ())),
])
def test_a_frozen_record_compares_hashes_and_shows_as_a_dataclass(
        args: tuple[Any, ...], other: tuple[Any, ...]) -> None:
    d1, d2 = DC_FROZEN(*args), DC_FROZEN(*other)
    r1, r2 = REC_FROZEN(*args), REC_FROZEN(*other)
    assert (r1 == r2) == (d1 == d2)
    assert (r1 != r2) == (d1 != d2)
    assert hash(r1) == hash(d1) and hash(r2) == hash(d2)  # the same tuple hashed
    assert repr(r1).replace("Rec", "") == repr(d1).replace("Dc", "")
    assert r1.__eq__(d1) is NotImplemented and r1 != (1, 2)  # another class: never equal
    assert [f.name for f in dataclasses.fields(r1)] == [f.name for f in dataclasses.fields(d1)]
    assert dataclasses.asdict(r1) == dataclasses.asdict(d1)
    assert dataclasses.replace(r1, y=5) == REC_FROZEN(*((args[0], 5) + args[2:]))
    assert pickle.loads(pickle.dumps(r1)) == r1 and copy.deepcopy(r1) == r1
    assert {r1, REC_FROZEN(*args)} == {r1}


def test_a_frozen_record_refuses_assignment_and_deletion() -> None:
    for cls in (DC_FROZEN, REC_FROZEN):
        point = cls(1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
            point.x = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'z'"):
            point.z = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
            del point.y
        with pytest.raises(TypeError):
            cls()  # x has no default
        with pytest.raises(TypeError):
            cls(1, 2, (), "", None, "too many")


def test_a_mutable_record_initialises_as_a_dataclass() -> None:
    d, r = DC_MUTABLE("a"), REC_MUTABLE("a")
    assert (r.items, r.seen, r.total, r.derived) == (d.items, d.seen, d.total, d.derived)
    assert REC_MUTABLE("b").items is not r.items  # a fresh default per object
    r.items.append(1)
    r.total = 3
    r2 = REC_MUTABLE("a", [1])
    assert r != r2  # total (3 and 0): compared, though not given to __init__
    r2.total = 3
    assert r == r2 and (d == DC_MUTABLE("a")) and r != REC_MUTABLE("a")
    assert REC_MUTABLE.__hash__ is None and DC_MUTABLE.__hash__ is None  # unhashable, both
    assert repr(REC_MUTABLE("x")).replace("Rec", "") == repr(DC_MUTABLE("x")).replace("Dc", "")
    with pytest.raises(TypeError):
        REC_MUTABLE("a", total=1)  # init=False


def test_every_facts_class_is_a_dataclass_that_round_trips_the_cache_format() -> None:
    span = facts.Span(1, 2, 3, 4)
    site = facts.HandleSite("sqlite3.connect", span)
    ref = facts.DatasetRef("call", "m.DS", handle_args=(facts.HandleArg(0, "", site),))
    cls = facts.ClassFacts("DS", "m.DS", ("torch.utils.data.Dataset",), span,
                           held=(facts.HeldHandle("db", site, "__init__"),))
    loader = facts.LoaderCall(span, (ref,), 2, "2", None, "")
    original = facts.FileFacts("m.py", "m", classes=(cls,), loaders=(loader,))
    again = facts.from_jsonable(facts.FileFacts, facts.to_jsonable(original))
    assert again == original and hash(again.classes[0]) == hash(cls)
    assert again.import_map() == {}  # the cached property still works on a frozen record
    for name in dir(facts):
        value = getattr(facts, name)
        if isinstance(value, type) and value.__module__ == facts.__name__:
            assert dataclasses.is_dataclass(value), name


def _field_view(f: dataclasses.Field[Any]) -> dict[str, Any]:
    return {slot: getattr(f, slot, None) for slot in type(f).__slots__}


@dataclass(frozen=True)
class DcWithClassVar:
    kind: ClassVar[str] = "k"
    x: int = 1


@record(frozen=True)
class RecWithClassVar:  # a ClassVar is not a field: the same answers
    kind: ClassVar[str] = "k"
    x: int = 1


@pytest.mark.parametrize("dc, rec", [(DC_FROZEN, REC_FROZEN), (DC_MUTABLE, REC_MUTABLE),
                                     (DC_FROZEN, OwnPoint), (DC_MUTABLE, OwnBag),
                                     (DcWithClassVar, RecWithClassVar)])
def test_a_record_has_the_fields_and_class_attributes_dataclasses_gives(dc: Any, rec: Any) -> None:
    """A record's fields are dataclasses' own: every `Field` attribute (name, type, default,
    factory, init, repr, hash, compare, metadata, kw_only, the kind), the defaults left on the
    class, `__match_args__` and the parameters are what dataclasses makes of the same body."""
    dc_fields = dc.__dataclass_fields__
    rec_fields = rec.__dataclass_fields__
    assert list(dc_fields) == list(rec_fields)
    for name in dc_fields:
        assert _field_view(rec_fields[name]) == _field_view(dc_fields[name]), name
        assert getattr(rec, name, "absent") == getattr(dc, name, "absent"), name
    assert getattr(rec, "__match_args__", None) == getattr(dc, "__match_args__", None)
    assert hasattr(rec, "__replace__") == hasattr(dc, "__replace__")
    assert isinstance(rec.__dataclass_params__, type(dc.__dataclass_params__))
    # (a dataclass subclassing a record must match it: `frozen` as dataclasses gives it)
    assert rec.__dataclass_params__.frozen == dc.__dataclass_params__.frozen


@pytest.mark.parametrize("dc, rec", [(DC_FROZEN, REC_FROZEN), (DC_FROZEN, OwnPoint),
                                     (DC_MUTABLE, REC_MUTABLE), (DC_MUTABLE, OwnBag)])
def test_records_replace_copies_as_dataclasses_replace_does(dc: Any, rec: Any) -> None:
    """`records.replace`, which the code base calls, makes what `dataclasses.replace` makes,
    and refuses what it refuses (a field `__init__` does not take; a name that is no field)."""
    first = "b" if dc is DC_MUTABLE else 7
    d, r = dc(first), rec(first)
    changes = {"items": [3]} if dc is DC_MUTABLE else {"y": 5, "note": "n"}
    want, got = dataclasses.replace(d, **changes), records.replace(r, **changes)
    assert repr(got).replace("Rec", "").replace("Own", "") == repr(want).replace("Dc", "")
    assert got == records.replace(r, **changes) and got is not r
    refused = "total" if dc is DC_MUTABLE else "nothing"
    for replacing in (dataclasses.replace, records.replace):
        with pytest.raises((ValueError, TypeError)):
            replacing(d if replacing is dataclasses.replace else r, **{refused: 1})
    assert records.replace(d, **changes) == want  # a dataclass that is no record: dataclasses'


@dataclass(frozen=True)
class DcOnRecord(RecPoint):  # a dataclass below a record: fields of its own
    z: int = 3


class PlainOnRecord(OwnPoint):  # a plain subclass: the record's fields
    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


def test_replace_copies_a_subclass_of_a_record_as_dataclasses_does() -> None:
    """A dataclass subclassing a record keeps its own fields in a copy (dataclasses reads
    them), and a plain subclass is copied as its record's fields say, staying of its class."""
    below = DcOnRecord(1, 2, z=9)
    assert records.replace(below, y=5) == dataclasses.replace(below, y=5) == DcOnRecord(1, 5, z=9)
    assert records.record_fields(DcOnRecord) is None
    plain = PlainOnRecord(1, 2)
    copied = records.replace(plain, y=-7)
    assert type(copied) is PlainOnRecord and copied.norm() == 8
    assert repr(copied) == repr(dataclasses.replace(plain, y=-7))
    assert records.record_fields(PlainOnRecord) == ("x", "y", "tags", "note", "label")


def test_a_record_made_of_records_fields_needs_no_dataclasses_module() -> None:
    """Records, their copies and the facts' cache format run without importing dataclasses
    (with `inspect`, ~5 ms of every run); `dataclasses.fields` still works when asked."""
    code = ("import sys\nfrom workersafe import facts, records\n"
            "span = facts.Span(1, 2, 3, 4)\n"
            "moved = records.replace(span, line=9)\n"
            "again = facts.from_jsonable(facts.Span, facts.to_jsonable(moved))\n"
            "print(again == moved, again.line, 'dataclasses' in sys.modules)\n"
            "import dataclasses\n"
            "print([f.name for f in dataclasses.fields(facts.Span)])\n")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.splitlines() == ["True 9 False", "['line', 'col', 'end_line', 'end_col']"], \
        proc.stdout + proc.stderr


def test_a_body_dataclasses_refuses_is_refused_as_dataclasses_refuses_it() -> None:
    with pytest.raises(ValueError, match="mutable default"):
        @record()
        class Bad:
            items: list[int] = []  # noqa: RUF012 - the mistake under test
    with pytest.raises(TypeError, match="no type annotation"):
        @record()
        class Unannotated:
            x = field(default=1)


def test_every_record_init_is_precompiled_in_record_inits() -> None:
    """`record_inits.py` holds the `__init__` of every record of the package, and nothing
    else. A failure here means a record's fields changed: run
    `PYTHONPATH=src python scripts/gen_record_inits.py` (the code runs correctly meanwhile,
    only slower to import: a record missing from the table compiles its own)."""
    import importlib
    from pathlib import Path

    import workersafe
    from workersafe import record_inits, records

    root = Path(workersafe.__file__).resolve().parent
    skipped = []
    for path in root.rglob("*.py"):  # (pkgutil skips the namespace packages: analysis/)
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] != "__main__":
            try:
                importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__"
                                                 else parts))
            except ImportError:
                skipped.append(path.name)
    ours = {s for m, s in records.BUILT if m.startswith("workersafe.")}
    missing = ours - set(record_inits.CODES)
    assert not missing, "record_inits.py is stale: run scripts/gen_record_inits.py"
    if not skipped:
        assert set(record_inits.CODES) <= ours, "unused entries: regenerate"


def test_a_precompiled_init_takes_the_records_own_defaults() -> None:
    site = facts.HandleSite("sqlite3.connect", facts.Span(1, 2, 3, 4))
    held = facts.HeldHandle("db", site, "__init__")
    assert facts.HeldHandle.__init__.__code__.co_filename.endswith("record_inits.py")
    assert (held.derived, held.closed) == (False, False)
    assert facts.HeldHandle("db", site, "__init__", True).derived is True
    method = facts.MethodFacts("m")
    assert method.attrs_read == () and method.returns_handle is None
    with pytest.raises(TypeError):
        facts.HeldHandle("db", site)  # method: no default
