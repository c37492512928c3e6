"""The fixer's contracts that golden files cannot show: the order files are written in, what
a killed run may leave behind, and verification refusing a rewrite that breaks the promise
(a handle or derived object left outside the opener or kept when pickling, a global the fix
reads but that is not bound on every path, a lazy property that code probes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import libcst
import pytest

from expectations import FIXTURES
from workersafe.atomic import TEMP_PREFIX, TEMP_SUFFIX, atomic_replace, remove_stale_temps
from workersafe.config import Config
from workersafe.engine import Engine
from workersafe.fix.apply import fix_result, write_order
from workersafe.fix.promise import PromiseBroken, check_class, check_introduced_names
from workersafe.fixes import rewrite
from workersafe.registry import DEFAULT_REGISTRY

MULTI_FILE = FIXTURES / "fix" / "mf_from_import"


def test_dataset_file_is_written_before_the_file_importing_it(tmp_path: Path) -> None:
    """`zz_data.py` sorts after `train.py`, yet the dataset file still comes first."""
    shutil.copyfile(MULTI_FILE / "data.py", tmp_path / "zz_data.py")
    train = (MULTI_FILE / "train.py").read_text().replace("from data import",
                                                          "from zz_data import")
    assert "from zz_data import" in train
    (tmp_path / "train.py").write_text(train)
    engine = Engine(Config())
    result = engine.check_paths([str(tmp_path)])
    fixed = fix_result(engine, result, "worker-init")
    assert sorted(Path(p).name for p in fixed.new_sources) == ["train.py", "zz_data.py"]
    assert [Path(p).name for p in write_order(fixed)] == ["zz_data.py", "train.py"]


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f"{TEMP_PREFIX}{dead.stdout.strip()}-abc{TEMP_SUFFIX}"
    live = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-def{TEMP_SUFFIX}"
    other = tmp_path / "notes.tmp"
    for path in (stale, live, other):
        path.write_text("x")
    assert remove_stale_temps(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and live.exists() and other.exists()


def test_atomic_replace_leaves_no_temp_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "x.py"
    with pytest.raises(OSError):
        atomic_replace(str(target), b"new")
    atomic_replace(str(tmp_path / "x.py"), b"new", durable=True)
    assert [p.name for p in tmp_path.iterdir()] == ["x.py"]


WRONG_FIX = '''
import sqlite3


class DB:
    def __init__(self, p):
        self._p = p
        self._open_conn()
        self.n = 3
        self.cur = self.conn.cursor()

    def _open_conn(self):
        self.conn = sqlite3.connect(self._p)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("conn", None)
        return state
'''

KEPT_WHEN_PICKLING = '''
import h5py


class H5:
    def __init__(self, p):
        self._p = p
        self._open_data()

    def _open_data(self):
        f = h5py.File(self._p, "r")
        self.data = f["data"]
        self.target = f["target"]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("data", None)
        return state
'''

DERIVED_KINDS = {
    "cursor": ("sqlite3", "sqlite3.connect(p)", "self.h.cursor()"),
    "transaction": ("lmdb", "lmdb.open(p)", "self.h.begin()"),
    "child": ("h5py", 'h5py.File(p, "r")', 'self.h["images"]'),
    "stub": ("grpc", "grpc.insecure_channel(p)", "FeatureStub(self.h)"),
    "bucket": ("boto3", 'boto3.resource("s3")', 'self.h.Bucket("b")'),
}


def _check(code: str, name: str, openers: tuple[str, ...], props: tuple[str, ...] = ()) -> None:
    check_class(libcst.parse_module(code), DEFAULT_REGISTRY, name, openers, ("__init__",), props)


def test_derived_cursor_left_in_init_is_caught() -> None:
    """The wrong fix issue 16 reports: the connection moved, its cursor stayed."""
    with pytest.raises(PromiseBroken, match=r"self\.cur in DB\.__init__"):
        _check(WRONG_FIX, "DB", ("_open_conn",))


@pytest.mark.parametrize("kind", sorted(DERIVED_KINDS))
def test_each_derived_kind_left_in_init_is_caught(kind: str) -> None:
    module, create, derive = DERIVED_KINDS[kind]
    code = (f"import {module}\n\n\nclass D:\n    def __init__(self, p):\n"
            f"        self._p = p\n        self._open_h()\n        self.x = {derive}\n\n"
            f"    def _open_h(self):\n        self.h = {create.replace('(p', '(self._p')}\n\n"
            "    def __getstate__(self):\n        state = self.__dict__.copy()\n"
            '        state.pop("h", None)\n        return state\n')
    with pytest.raises(PromiseBroken, match=r"self\.x in D\.__init__"):
        _check(code, "D", ("_open_h",))
    opened = f"{create.replace('(p', '(self._p')}\n"
    moved = code.replace(f"        self.x = {derive}\n", "")
    moved = moved.replace(opened, f"{opened}        self.x = {derive}\n", 1)
    moved = moved.replace('state.pop("h", None)',
                          'state.pop("h", None)\n        state.pop("x", None)')
    _check(moved, "D", ("_open_h",))  # moved into the opener and dropped: keeps the promise


# a handle made by the project's own code (fix/factories.py): the call as spelled → the handle
FACTORY_CALLS = {
    "method": ("self._connect(self._p)", {"self._connect": "sqlite3.connect"}),
    "function": ("make_client(self._p)", {"make_client": "boto3.client"}),
    "holder": ("FeatureReader(self._p)", {"FeatureReader": "lmdb.open"}),
}


def _factory_class(call: str, dropped: str, after: str = "") -> str:
    return (f"class D:\n    def __init__(self, p):\n        self._p = p\n        self._open_h()\n"
            f"{after}\n    def _open_h(self):\n        self.h = {call}\n\n"
            "    def __getstate__(self):\n        state = self.__dict__.copy()\n"
            f'        state.pop("{dropped}", None)\n        return state\n')


@pytest.mark.parametrize("kind", sorted(FACTORY_CALLS))
def test_factory_or_holder_result_kept_when_pickling_is_caught(kind: str) -> None:
    call, factories = FACTORY_CALLS[kind]
    module = libcst.parse_module(_factory_class(call, dropped="other"))
    handle = next(iter(factories.values()))
    with pytest.raises(PromiseBroken, match=r"self\.h of D holds a handle and is kept"):
        check_class(module, DEFAULT_REGISTRY, "D", ("_open_h",), ("__init__",), (), (handle,),
                    factories)
    fixed = libcst.parse_module(_factory_class(call, dropped="h"))
    check_class(fixed, DEFAULT_REGISTRY, "D", ("_open_h",), ("__init__",), (), (handle,),
                factories)


def test_object_derived_from_a_factory_result_left_in_init_is_caught() -> None:
    call, factories = FACTORY_CALLS["method"]
    code = _factory_class(call, dropped="h", after="        self.cur = self.h.cursor()\n")
    with pytest.raises(PromiseBroken, match=r"self\.cur in D\.__init__"):
        check_class(libcst.parse_module(code), DEFAULT_REGISTRY, "D", ("_open_h",),
                    ("__init__",), (), ("sqlite3.connect",), factories)


def test_derived_object_kept_when_pickling_is_caught() -> None:
    with pytest.raises(PromiseBroken, match=r"self\.target of H5 .* kept when pickling"):
        _check(KEPT_WHEN_PICKLING, "H5", ("_open_data",))


def test_probed_lazy_property_is_caught() -> None:
    code = KEPT_WHEN_PICKLING.replace('state.pop("data", None)',
                                      'state.pop("data", None)\n'
                                      '        state.pop("target", None)') + (
        "\n    def ready(self):\n        return hasattr(self, \"data\")\n")
    _check(code, "H5", ("_open_data",))
    with pytest.raises(PromiseBroken, match=r"probed with hasattr"):
        _check(code, "H5", ("_open_data",), ("data",))


def test_global_bound_only_under_main_is_caught() -> None:
    old = ("class R:\n    pass\n\n\nif __name__ == '__main__':\n    import os\n"
           "    print(os.getpid())\n")
    new = old.replace("    pass\n", "    def pid(self):\n        return os.getpid()\n")
    with pytest.raises(PromiseBroken, match="'os'"):
        check_introduced_names("m.py", old, new, libcst.parse_module(new))
    bound = "import os\n" + new
    check_introduced_names("m.py", old, bound, libcst.parse_module(bound))


TWO_DATASETS = '''import requests
import sqlite3
from torch.utils.data import DataLoader, Dataset


class A(Dataset):
    def __init__(self):
        self.s = requests.Session()

    def __getitem__(self, i):
        return self.s.get(str(i))


class B(Dataset):
    def __init__(self):
        self.db = sqlite3.connect("x.db")

    def __getitem__(self, i):
        return self.db.execute("select 1")


def main():
    return DataLoader(A(), num_workers=2), DataLoader(B(), num_workers=2)
'''


@pytest.mark.parametrize("chosen, other", [("A", "B"), ("B", "A")])
def test_fixing_one_finding_leaves_the_other_and_verifies(tmp_path: Path, chosen: str,
                                                          other: str) -> None:
    """The editor's quick fix of one finding: the fix shifts the lines the other finding's
    message names (its loader's line), yet verification matches it by its typed fields, and
    the second-fix check does not fix it either."""
    (tmp_path / "m.py").write_text(TWO_DATASETS)
    engine = Engine(Config())
    result = engine.check_paths([str(tmp_path)])
    assert sorted(f.plan.class_qualname[-1] for f in result.findings if f.plan) == ["A", "B"]
    done = rewrite(engine, result, "worker-init",
                   only=lambda f: f.plan is not None and f.plan.class_qualname.endswith(chosen))
    assert [f.plan.class_qualname[-1] for f in done.fixed if f.plan] == [chosen]
    assert not any("verification" in note for note in done.notes.values()), done.notes
    (new_text,) = done.new_texts.values()
    left = engine.check_text(str(tmp_path / "m.py"), new_text)
    assert [f.code for f in left] == ["WS101"]
    assert f"created in {other}.__init__" in left[0].message
