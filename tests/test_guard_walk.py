"""The runtime guard's walk and detection on plain objects (no worker, no torch): what it
finds, what per-process discipline keeps quiet, its bounds. The same with real workers under
every start method: tests/runtime/test_guard_runtime.py."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from workersafe.guard.table import TypeTable, resolve
from workersafe.guard.walk import walk
from workersafe.registry import DEFAULT_REGISTRY, HandleType, Registry

ROOT = Path(__file__).resolve().parent.parent


def found(dataset: Any, pickled: bool = False, worker_init_fn: Any = None,
          table: TypeTable | None = None, budget: int = 100_000) -> set[tuple[str, str]]:
    result = walk([(dataset, "loader.dataset")], table or TypeTable(), pickled=pickled,
                  worker_init_fn=worker_init_fn, budget=budget)
    return {(hit.code, hit.path) for hit in result.hits}


class Box:
    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def test_a_live_connection_is_found_through_wrappers_containers_and_holders() -> None:
    conn = sqlite3.connect(":memory:")
    inner = Box(meta={"shards": [Box(db=conn)]}, n=3)
    outer = Box(dataset=inner, transform=None)
    assert found(outer) == {("WS101", "loader.dataset.dataset.meta['shards'][0].db")}
    assert found(outer, pickled=True) == {("WS201", "loader.dataset.dataset.meta['shards'][0].db")}


def test_derived_objects_are_found_and_each_object_once() -> None:
    conn = sqlite3.connect(":memory:")
    dataset = Box(conn=conn, again=conn, cursor=conn.cursor())
    assert found(dataset) == {("WS101", "loader.dataset.conn"), ("WS101", "loader.dataset.cursor")}


def test_closed_handles_are_quiet_under_fork_but_still_do_not_pickle(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.close()
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x", "y")
    closed_zip = zipfile.ZipFile(path)
    closed_zip.close()
    dataset = Box(conn=conn, archive=closed_zip)
    assert found(dataset) == set()
    assert found(dataset, pickled=True) == {("WS201", "loader.dataset.conn"),
                                            ("WS201", "loader.dataset.archive")}


def test_an_unused_http_session_is_quiet_a_used_one_is_not() -> None:
    requests = pytest.importorskip("requests")
    session = requests.Session()
    assert found(Box(session=session)) == set()  # no open connection: nothing shared
    # requests' Session pickles (its pools do not go along): never WS201
    assert found(Box(session=session), pickled=True) == set()


def test_slots_and_cycles() -> None:
    class Slotted:
        __slots__ = ("conn", "parent")

    item = Slotted()
    item.conn = sqlite3.connect(":memory:")
    dataset = Box(children=[item])
    item.parent = dataset  # a cycle
    assert found(dataset) == {("WS101", "loader.dataset.children[0].conn")}


def test_the_budget_bounds_the_walk() -> None:
    chain: Any = Box(conn=sqlite3.connect(":memory:"))
    for _ in range(50):
        chain = Box(next=chain)
    result = walk([(chain, "loader.dataset")], TypeTable(), pickled=False, budget=10)
    assert result.truncated and result.nodes <= 11 and not result.hits
    assert found(chain) != set()


class LazyPerProcess:
    """A pid-checked lazy open (the parent opened it first)."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._pid: Any = None
        self.conn.execute("SELECT 1")

    @property
    def conn(self) -> Any:
        if self._pid != os.getpid():
            self._conn = sqlite3.connect(":memory:")
            self._pid = os.getpid()
        return self._conn


class PerProcessDict:
    def __init__(self) -> None:
        self._conns: dict[int, Any] = {}
        self.conn().execute("SELECT 1")

    def conn(self) -> Any:
        return self._conns.setdefault(os.getpid(), sqlite3.connect(":memory:"))


class PidOnlyInInit:
    """Records the pid in `__init__` and never checks it: not per-process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.conn = sqlite3.connect(":memory:")


def test_per_process_discipline_is_respected() -> None:
    assert found(LazyPerProcess()) == set()
    assert found(PerProcessDict()) == set()
    # pickled, the parent's entry goes along (and does not pickle)
    assert found(PerProcessDict(), pickled=True) == {
        ("WS201", f"loader.dataset._conns[{os.getpid()}]")}
    assert found(PidOnlyInInit()) == {("WS101", "loader.dataset.conn")}
    assert found(Box(conn=None)) == set()  # not open yet


class Reopened:
    def __init__(self) -> None:
        self._open_conn()

    def _open_conn(self) -> None:
        self.conn = sqlite3.connect(":memory:")


def reopen_in_worker(worker_id: int) -> None:
    dataset: Any = None  # torch.utils.data.get_worker_info().dataset in a real one
    if dataset is not None:
        dataset._open_conn()


def seed_only(worker_id: int) -> None:
    import random

    random.seed(worker_id)


def test_a_worker_init_fn_that_reopens_the_attribute_makes_it_quiet() -> None:
    import functools

    assert found(Reopened(), worker_init_fn=reopen_in_worker) == set()
    chained = functools.partial(lambda worker_id, previous: None, previous=reopen_in_worker)
    assert found(Reopened(), worker_init_fn=chained) == set()
    assert found(Reopened(), worker_init_fn=seed_only) == {("WS101", "loader.dataset.conn")}
    assert found(Reopened()) == {("WS101", "loader.dataset.conn")}


class DropsOnPickle:
    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.lock_free = 1

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "conn"}


def test_spawn_sees_what_pickling_sees() -> None:
    assert found(DropsOnPickle(), pickled=True) == set()
    assert found(DropsOnPickle()) == {("WS101", "loader.dataset.conn")}  # fork copies memory
    import threading

    plain = Box(transform=lambda x: x, lock=threading.Lock(), fn=seed_only)
    assert found(plain, pickled=True) == {("WS201", "loader.dataset.transform"),
                                          ("WS201", "loader.dataset.lock")}
    assert found(plain) == set()


class ForkSafeClient:
    pass


def test_registry_rows_decide_fork_safety_and_pickling() -> None:
    name = f"{__name__}.ForkSafeClient"
    registry = Registry({name: HandleType(name, fork_safe=True, picklable=False,
                                          runtime_types=(name,))})
    table = TypeTable(registry)
    assert found(Box(client=ForkSafeClient()), table=table) == set()
    assert found(Box(client=ForkSafeClient()), pickled=True, table=table) == \
        {("WS201", "loader.dataset.client")}
    # `extra-handles` name a class: its objects are handles for the guard too
    extra = TypeTable(DEFAULT_REGISTRY.with_config([name]))
    assert found(Box(client=ForkSafeClient()), table=extra) == {("WS101", "loader.dataset.client")}


def test_classes_are_resolved_without_importing() -> None:
    before = set(sys.modules)
    assert resolve("workersafe_not_imported_pkg.Client") is None
    assert resolve("sqlite3.Connection") is sqlite3.Connection
    assert set(sys.modules) == before
    # rows name live classes as `module.Class`, never the factory function
    for row in DEFAULT_REGISTRY.types.values():
        for name in (*row.runtime_types, *row.runtime_derived_types):
            assert "." in name and not name.endswith((".connect", ".open", ".client")), name


def test_where_the_attribute_was_set_comes_from_the_engine(tmp_path: Path) -> None:
    from workersafe.guard.where import set_at

    module = tmp_path / "guard_where_case.py"
    module.write_text(textwrap.dedent("""\
        import sqlite3
        from torch.utils.data import DataLoader, Dataset

        class Items(Dataset):
            def __init__(self, path):
                self.conn = sqlite3.connect(path)

            def __getitem__(self, i):
                return self.conn.execute("SELECT ?", (i,)).fetchone()

        loader = DataLoader(Items("x.db"), num_workers=2)
        """))
    code = compile("class Items:\n    pass\n", str(module), "exec")
    namespace: dict[str, Any] = {"__name__": "guard_where_case", "__file__": str(module)}
    sys.modules["guard_where_case"] = type(sys)("guard_where_case")
    sys.modules["guard_where_case"].__file__ = str(module)
    try:
        exec(code, namespace)
        cls = namespace["Items"]
        cls.__module__ = "guard_where_case"
        where = set_at(cls, "", "conn")
    finally:
        del sys.modules["guard_where_case"]
    assert where is not None and where.endswith(":6 (WS101 there)"), where


def _run_guard(tmp_path: Path, script: str, *args: str, strict: bool = False
               ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "workersafe", "guard", *(["--strict"] if strict else []), "--",
         str(path), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_the_script_runs_as_python_would_run_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # the guard imports it when installed
    (tmp_path / "helper_mod.py").write_text("VALUE = 7\n")
    done = _run_guard(tmp_path, """\
        import sys
        import helper_mod  # found through sys.path[0], the script's folder
        print(sys.argv, __name__, helper_mod.VALUE, sys.path[0])
        sys.exit(3)
        """, "--epochs", "2")
    assert done.returncode == 3, done.stderr
    assert done.stdout.split() == [f"['{tmp_path / 'script.py'}',", "'--epochs',", "'2']",
                                   "__main__", "7", str(tmp_path)]
    failed = _run_guard(tmp_path, "def f():\n    raise ValueError('boom')\nf()\n")
    assert failed.returncode == 1
    assert failed.stderr.startswith("Traceback (most recent call last):\n  File "
                                     f"\"{tmp_path / 'script.py'}\", line 3")
    assert failed.stderr.rstrip().endswith("ValueError: boom")


def test_argv_and_sys_path_are_as_python_gives_them(tmp_path: Path) -> None:
    """A relative script path through a symbolic link: `sys.argv[0]` as typed (not made
    absolute), `sys.path[0]` the folder of the real file, `__main__`'s attributes."""
    pytest.importorskip("torch")
    real = tmp_path / "real"
    real.mkdir()
    (real / "helper_mod.py").write_text("VALUE = 7\n")
    (real / "script.py").write_text(
        "import sys, helper_mod\n"
        "print(sys.argv, sys.path[0], __file__, __package__, __spec__,\n"
        "      type(__loader__).__name__, helper_mod.VALUE)\n")
    (tmp_path / "link.py").symlink_to(real / "script.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    outputs = [subprocess.run([*prefix, "link.py", "-x", "--", "1"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=True).stdout
               for prefix in ([sys.executable],
                              [sys.executable, "-m", "workersafe", "guard", "--"])]
    assert outputs[0].startswith("['link.py', '-x', '--', '1'] " + str(real)), outputs[0]
    assert outputs[1] == outputs[0]
    (tmp_path / "broken.py").write_text("x = 1\ny = (\n")
    errors = [subprocess.run([*prefix, "broken.py"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120) for prefix in (
        [sys.executable], [sys.executable, "-m", "workersafe", "guard", "--"])]
    assert [e.returncode for e in errors] == [1, 1]
    assert errors[1].stderr == errors[0].stderr  # a syntax error: no frame of ours shown


class HolderOfHolder:
    """A holder object rebuilt by the opener the worker_init_fn calls: everything under the
    attribute is new in each worker."""

    def __init__(self) -> None:
        self._open_reader()

    def _open_reader(self) -> None:
        self.reader = Box(envs=[sqlite3.connect(":memory:")])


def reopen_reader(worker_id: int) -> None:
    dataset: Any = None
    if dataset is not None:
        dataset._open_reader()


def test_reopening_an_attribute_covers_what_hangs_from_it() -> None:
    assert found(HolderOfHolder()) == {("WS101", "loader.dataset.reader.envs[0]")}
    assert found(HolderOfHolder(), worker_init_fn=reopen_reader) == set()


def test_bound_methods_keep_their_object() -> None:
    conn = sqlite3.connect(":memory:")
    dataset = Box(query=conn.execute, close=None)
    assert found(dataset) == {("WS101", "loader.dataset.query.__self__")}


def test_the_rule_docs_say_what_the_guard_checks() -> None:
    from workersafe.docs import rule_docs

    for code in ("WS101", "WS102", "WS103", "WS104", "WS111", "WS112", "WS113", "WS201",
                 "WS303"):
        text = rule_docs()[code].text
        assert "## Runtime check\n" in text and "workersafe guard" in text, code


def test_named_tuples_and_dict_subclasses_are_containers() -> None:
    import collections

    Pair = collections.namedtuple("Pair", "name conn")
    conn = sqlite3.connect(":memory:")
    dataset = Box(pair=Pair("a", conn), table=collections.OrderedDict(db=conn))
    assert found(dataset) == {("WS101", "loader.dataset.pair[1]")}  # each object once
    assert found(Box(table=collections.defaultdict(list, db=[conn]))) == \
        {("WS101", "loader.dataset.table['db'][0]")}


class LogsItsPid:
    """Reads the handle and the pid in the same method, but never reopens it."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:")

    def __getitem__(self, index: int) -> Any:
        print(os.getpid())
        return self.conn.execute("SELECT ?", (index,)).fetchone()


def test_reading_the_pid_near_the_handle_is_not_a_process_check() -> None:
    assert found(LogsItsPid()) == {("WS101", "loader.dataset.conn")}
    assert found(Box(wrapped=LogsItsPid())) == {("WS101", "loader.dataset.wrapped.conn")}


class LazyNoCheck:
    """Opened on first use, no process check; the parent used it first."""

    def __init__(self) -> None:
        self.conn: Any = None
        self[0]

    def __getitem__(self, index: int) -> Any:
        if self.conn is None:
            self.conn = sqlite3.connect(":memory:")
        return self.conn.execute("SELECT ?", (index,)).fetchone()


class OpensThroughHelper:
    def __init__(self) -> None:
        self.conn: Any = None
        self._connect()

    def _connect(self) -> None:
        self.conn = sqlite3.connect(":memory:")


def test_a_lazy_open_without_a_process_check_is_ws303() -> None:
    assert found(LazyNoCheck()) == {("WS303", "loader.dataset.conn")}
    assert found(LazyNoCheck(), pickled=True) == {("WS201", "loader.dataset.conn")}
    assert found(OpensThroughHelper()) == {("WS101", "loader.dataset.conn")}  # `__init__` opens


def test_long_containers_of_plain_values_do_not_exhaust_the_walk() -> None:
    dataset = Box(files=[f"img_{i}.jpg" for i in range(1_200_000)], conn=sqlite3.connect(":memory:"))
    result = walk([(dataset, "loader.dataset")], TypeTable(), pickled=False)
    assert not result.truncated and {h.path for h in result.hits} == {"loader.dataset.conn"}


MODULE_DB = sqlite3.connect(":memory:")  # a connection object is callable: still a handle


def _query(sql: str) -> Any:
    return MODULE_DB.execute(sql).fetchone()


class ReadsAGlobal:
    def __getitem__(self, index: int) -> Any:
        return _query("SELECT 1")  # through a function of the module


def test_module_globals_the_class_reads_are_ws102_under_fork_only() -> None:
    module = ReadsAGlobal.__module__
    assert found(ReadsAGlobal()) == {("WS102", f"{module}.MODULE_DB")}
    assert found(ReadsAGlobal(), pickled=True) == set()  # spawn imports the module again


def test_tar_archives_and_sockets_open_and_closed(tmp_path: Path) -> None:
    import io
    import socket
    import tarfile

    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as archive:
        info = tarfile.TarInfo("x")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"y"))
    tar = tarfile.open(path)
    tar.getmembers()  # the parent read it: the position moved
    left, right = socket.socketpair()
    hits = walk([(Box(tar=tar, sock=left), "loader.dataset")], TypeTable(), pickled=False).hits
    assert {(h.code, h.path) for h in hits} == {("WS101", "loader.dataset.tar"),
                                                 ("WS101", "loader.dataset.sock")}
    assert any("file position" in h.state.detail for h in hits if h.path.endswith("tar"))
    tar.close()
    left.close()
    right.close()
    assert found(Box(tar=tar, sock=left)) == set()


STDIN_PROGRAM = '''\
import workersafe.guard
from torch.utils.data import DataLoader, Dataset

workersafe.guard.install(strict=True, static=False)


class Squares(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return index * index


loader = DataLoader(Squares(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
try:
    next(iter(loader))
except workersafe.guard.GuardError as exc:
    print(exc)
'''


def test_a_class_of_a_main_with_no_file_will_not_reach_spawn_workers() -> None:
    """A notebook's or `python -`'s `__main__` cannot be run again by a spawn worker, so its
    classes do not unpickle there (the worker dies: "exited unexpectedly"): WS201, before."""
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-"], input=STDIN_PROGRAM, env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    stopped = "stopped before any worker started: WS201 loader.dataset"
    assert done.stdout.strip().endswith(stopped), done.stdout + done.stderr
    assert "a class of a `__main__` with no file" in done.stderr
