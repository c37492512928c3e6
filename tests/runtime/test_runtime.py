"""Runtime proof (issue 5): real DataLoader workers against a real local TLS server.

For each program in ``fixtures/runtime/`` (and the bundled ``examples/remote_images``):
1. unfixed, it really fails (an expected exception or wrong items), retried a bounded number
   of times only because some failures are races;
2. ``workersafe check`` reports the expected finding on the line that creates the handle;
3. ``workersafe fix`` (each strategy) rewrites a copy: it compiles, re-checks clean, and a
   second fix changes nothing;
4. the fixed copy works with num_workers 0, 1, 4 (fork), 4 persistent, and 4 under spawn;
   the file-backed shapes of fix v2 (HDF5, SQLite, LMDB shards, a zip archive, a session
   with a retry adapter) also through a Subset, and with 2 under spawn and forkserver; so do
   the lazy opens without a process check (WS303: a session, an LMDB environment), opened by
   the parent before its workers start; and so do the process-global caches of handles by
   path, the cached openers taking arguments (their cache emptied in each forked child), the own `__getstate__`s the fix keeps or extends, the annotated programs of a mypy
   --strict project (`Program.project`) and a remedy written in another module.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from runtime_harness import (
    PROGRAMS,
    REPO,
    ZIP_FAILURES,
    Config,
    Outcome,
    Target,
    record,
    run_program,
    run_workersafe,
    workersafe_command,
)
from tls_server import ItemServer

pytestmark = pytest.mark.runtime

MAX_TRIES = 5  # for the "before" runs: the failures measured here are 20/20, races aside

REQUESTS_FAILURES = (
    r"requests\.exceptions\.(SSLError|ConnectionError|ChunkedEncodingError)",
    r"DECRYPTION_FAILED_OR_BAD_RECORD_MAC",
    r"JSONDecodeError",
)
HTTPX_FAILURES = (
    r"httpx\.(ReadError|RemoteProtocolError|LocalProtocolError|WriteError)",
    r"DECRYPTION_FAILED_OR_BAD_RECORD_MAC",
    r"JSONDecodeError",
)

FORK_4 = Config(workers=4)
SPAWN_4 = Config(workers=4, context="spawn", epochs=1)  # each spawn epoch costs ~5 s per worker
FIXED_CONFIGS = (
    Config(workers=0, epochs=1),  # no worker processes: one epoch says all there is to say
    Config(workers=1),
    FORK_4,
    Config(workers=4, persistent=True),
)
STRATEGIES = ("worker-init", "lazy")
# The fix v2 shapes run every configuration the issue names, each strategy: fork with 0, 1
# and 4 workers, 4 persistent, 4 through a Subset, spawn and forkserver with 2.
SPAWN_2 = Config(workers=2, context="spawn", epochs=1)
FULL_CONFIGS = (
    *FIXED_CONFIGS,
    Config(workers=4, subset=True),
    SPAWN_2,
    Config(workers=2, context="forkserver", epochs=1),
)
SQLITE_PICKLE = (r"TypeError: cannot pickle 'sqlite3\.(Connection|Cursor)' object",)
H5PY_PICKLE = (r"h5py objects cannot be pickled",)
LMDB_PICKLE = (r"TypeError: cannot pickle 'Environment' object",)
FILE_PICKLE = (r"TypeError: cannot pickle '_io\.BufferedReader' object",)


@dataclass(frozen=True)
class Before:
    """An unfixed run that must fail, with the errors that count as the bug showing."""

    config: Config
    failures: tuple[str, ...]
    wrong_items_only: bool = False  # only wrong items count; other outcomes are retried

    def shows_bug(self, outcome: Outcome) -> bool:
        if outcome.wrong_items > 0:
            return True
        if self.wrong_items_only:
            return False
        return any(re.search(pattern, outcome.error) for pattern in self.failures)


@dataclass(frozen=True)
class Program:
    name: str
    code: str  # the finding `workersafe check` must report
    creates: str  # text of the handle-creating call: the finding's line
    before: tuple[Before, ...]
    spawn_after: tuple[str, ...] = field(default=STRATEGIES)  # strategies also run under spawn
    # the strategies that fix it (a reopen of what an `__init__` kept as written: worker-init)
    strategies: tuple[str, ...] = STRATEGIES
    # the program trains on a Subset without every n-th item; passed as WS_HOLDOUT (the
    # programs that hard-code their split, subset_wrapped.py, ignore it)
    holdout_every: int = 0
    fixed_configs: tuple[Config, ...] = ()  # the configurations run after the fix, if not
    # FIXED_CONFIGS plus SPAWN_4 for the strategies in `spawn_after`
    entry: Path | None = None  # the script to run; default fixtures/runtime/<name>.py
    # sibling modules it imports, checked and fixed with it (the fixtures share a driver)
    modules: tuple[str, ...] = ("runtime_driver.py",)
    # the project's configuration (under fixtures/runtime/), copied beside the program as
    # pyproject.toml: a mypy --strict project, whose fix annotates what it adds
    project: str = ""

    @property
    def path(self) -> Path:
        return self.entry or PROGRAMS / f"{self.name}.py"

    @property
    def files(self) -> list[Path]:
        return [self.path, *(self.path.with_name(module) for module in self.modules)]

    def target(self, target: Target) -> Target:
        """``target`` with this program's own options, passed as ``WS_*`` variables."""
        if not self.holdout_every:
            return target
        return replace(target, extra_env={**target.extra_env,
                                          "WS_HOLDOUT": str(self.holdout_every)})

    def creation_site(self) -> tuple[str, int]:
        """(file name, line) of the handle-creating call."""
        for path in self.files:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if self.creates in line:
                    return path.name, number
        raise AssertionError(f"{self.creates!r} not found in {self.name}")

    def copy_to(self, directory: Path) -> list[Path]:
        """Copy the program's files into ``directory``; the entry script comes first."""
        directory.mkdir(parents=True, exist_ok=True)
        if self.project:
            shutil.copy2(PROGRAMS / self.project, directory / "pyproject.toml")
        return [Path(shutil.copy2(path, directory / path.name)) for path in self.files]


PROGRAM_LIST: tuple[Program, ...] = (
    Program(
        "requests_init_warm",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES), Before(Config(workers=1), REQUESTS_FAILURES)),
        spawn_after=(),  # a Session pickles: spawn already worked before the fix
    ),
    Program(
        "module_session",
        "WS102",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        spawn_after=(),  # spawn re-imports the module: each worker had its own session anyway
    ),
    Program(
        "httpx_client",
        "WS101",
        "httpx.Client(",
        (
            Before(FORK_4, HTTPX_FAILURES),
            Before(SPAWN_4, (r"TypeError: cannot pickle '_thread\.RLock' object",)),
        ),
    ),
    Program(
        "subset_wrapped",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        spawn_after=("worker-init",),
        holdout_every=8,
    ),
    Program(
        "seeded_worker_init",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        spawn_after=("worker-init",),
    ),
    Program(
        "zip_archive",
        "WS101",
        "zipfile.ZipFile(",
        (
            Before(FORK_4, ZIP_FAILURES),
            Before(SPAWN_4, FILE_PICKLE),
        ),
    ),
    Program(  # the README's example: the dataset in data.py, the DataLoader in train.py
        "remote_images",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        spawn_after=("worker-init",),
        entry=REPO / "examples" / "remote_images" / "train.py",
        modules=("data.py",),
    ),
)
PROGRAM_LIST += (
    Program(  # members picked by constructor arguments: `self.h5[key]` moves with the file
        "h5py_member_by_argument",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "h5py_local_file",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "sqlite_derived_cursor",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lmdb_shards",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lmdb_wrapped_dataset",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "zip_if_block",
        "WS101",
        "zipfile.ZipFile(",
        (
            Before(FORK_4, ZIP_FAILURES),
            Before(SPAWN_2, FILE_PICKLE),
        ),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a subclass's __getitem__ runs the base's, reading its archive, by super()
        "zip_subclass_through_super",
        "WS101",
        "zipfile.ZipFile(",
        (
            Before(FORK_4, ZIP_FAILURES),
            Before(SPAWN_2, FILE_PICKLE),
        ),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # fix v3: a base class and its subclass both hold handles (one chain)
        "base_subclass_handles",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # fix v3: the block creating the handle binds a local the rest of __init__ reads
        "sqlite_block_local",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # autofix v2: a method opening and returning the connection (re-requested)
        "sqlite_returned_connection",
        "WS101",
        "self._connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # autofix v2: a plain reader object keeping the environments (rebuilt)
        "holder_lmdb_reader",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a temporary table made in __init__: made again by each worker's connection
        "sqlite_temp_table",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a cursor `execute` returned, kept: opened again with the connection
        "sqlite_cursor_from_execute",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the file's datasets listed by values() and kept: listed again per worker
        "h5py_values_listed",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the file's datasets kept by name, dict(f.items()): built again per worker
        "h5py_items_kept",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the file's datasets kept as a list of pairs, sorted(f.items()): listed per worker
        "h5py_items_listed",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # two datasets of a kept file taken by one tuple assignment: both reopened
        "h5py_tuple_unpacked",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # an archive over a file object opened inline: both made again per worker
        "zip_over_inline_open",
        "WS101",
        "zipfile.ZipFile(",
        (
            Before(FORK_4, ZIP_FAILURES),
            Before(SPAWN_2, FILE_PICKLE),
        ),  # (no Subset in the program: the fixed configurations without one)
    ),
    Program(  # a holder the caller passes in (WS104): fixed in its own class, lazily
        "holder_passed_h5py_store",
        "WS104",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "session_retry_adapter",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,  # a Session pickles: spawn worked before, and still does
    ),
    Program(  # the common retry helper, `session or requests.Session()`: re-run per worker
        "session_retry_helper_factory",
        "WS101",
        "requests_retry_session(token)",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the session goes through a helper returning it: its call re-runs per worker
        "session_passed_through_helper",
        "WS101",
        "with_retries(requests.Session(), token)",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    # WS303: a lazy open without a process check, opened by the parent first; the fix (the
    # same whatever the strategy) adds the check to the lazy test
    Program(
        "lazy_session_parent_first",
        "WS303",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # two lazy opens of one attribute; the parent runs the one in __len__
        "lazy_session_len_and_getitem",
        "WS303",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lazy_lmdb_parent_first",
        "WS303",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a base and its subclass each open one lazily: the subclass's __getstate__
        "lazy_h5py_subclass_zip",  # starts from the base's (which leaves out the h5py file)
        "WS303",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the same with the subclass's archive opened in __init__: the instance fix's
        "lazy_h5py_base_zip_in_init",  # __getstate__ starts from the one the base gains
        "WS303",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
)
# The remedies as commonly written (issue 15): they fail in the main process and under a
# Subset; after the fix (the robust form) every configuration passes.
NONE_SESSION = (r"AttributeError: 'NoneType' object has no attribute 'get'",)
PROGRAM_LIST += (
    Program(
        "worker_init_session",
        "WS311",
        "self.session = None",
        (Before(Config(workers=0, epochs=1), NONE_SESSION),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the same program on a train split: get_worker_info().dataset is the Subset
        "worker_init_session_subset",
        "WS311",
        "self.session = None",
        (Before(Config(workers=2), NONE_SESSION),),
        holdout_every=8,
        fixed_configs=FULL_CONFIGS,
        entry=PROGRAMS / "worker_init_session.py",
    ),
)
# Fix v4 shapes: a module handle derived from a module-level client (one accessor makes both),
# a handle read only through the transaction derived from it, and handles a dataset's own
# opener makes in a comprehension or stores by key.
PROGRAM_LIST += (
    Program(
        "module_session_derived",
        "WS102",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        spawn_after=(),  # spawn re-imports the module: each worker had its own session anyway
    ),
    Program(
        "lmdb_txn_from_opener",
        "WS101",
        "self._open_env(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lmdb_if_else_txn",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lmdb_shards_comprehension",
        "WS101",
        "self.open_db(p)",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # stylegan2-ada: a lazy accessor __init__ runs; its own __getstate__ (kept)
        "zip_lazy_own_getstate",  # pickles the handle as None: spawn worked before
        "WS101",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "lmdb_shards_keyed",
        "WS101",
        "self.open_db(path)",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
)
# A process-global handle cache (WS102): the Swin-Transformer's ZipReader, its class-level
# bank filled while the dataset is built; the fix keys the bank by the process. Spawned
# workers re-import the class (an empty bank): only fork shares it before the fix.
PROGRAM_LIST += (
    Program(
        "zip_bank_reader",
        "WS102",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    # genforce's LmdbLoader shape (environments by path): a read-only environment shared by
    # forked workers happens to read right here, so nothing fails before the fix; after it,
    # each process opens its own, which lmdb allows only once the inherited one is dropped
    # (without the drop every forked worker fails: "already open in this process")
    Program(
        "lmdb_loader_cache",
        "WS102",
        "lmdb.open(",
        (),
        fixed_configs=FULL_CONFIGS,
    ),
)
# Process-global caches of handles keyed by path, filled in the parent while the dataset is
# built (fork shares them before the fix: the archive's offset), and own __getstate__s that
# already leave the handle out but nothing reopens it (spawn: no handle in the worker). The
# lazy strategy makes the handle a property: a kept `del state["h5"]` would raise KeyError.
H5_MISSING = (r"AttributeError: 'H5Items' object has no attribute 'h5'",)
H5_NONE = (r"TypeError: 'NoneType' object is not subscriptable",)
PROGRAM_LIST += (
    Program(  # module-level dict (setdefault) and list caches: archives, labels environment
        "zip_module_cache",
        "WS102",
        "zipfile.ZipFile(path)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # cached openers taking the path (lru_cache(maxsize=None), cache): an archive,
        "zip_lru_cache_opener",  # an LMDB environment; each forked process empties the caches
        "WS102",
        "zipfile.ZipFile(path)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the same with an HDF5 file (lru_cache()) and a SQLite database (lru_cache(4)):
        "h5py_sqlite_cached_openers",  # nothing fails before; after, each process opens its own
        "WS102",
        'h5py.File(path, "r")',
        (),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # opened in __init__, pickled as None, reopened when None: the reopen gains
        "zip_init_lazy_reopen",  # the process check
        "WS101",
        "zipfile.ZipFile(archive_path)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # left out by __getstate__, reopened by __setstate__ (right under spawn only):
        "zip_setstate_reopen",  # the reopening calls the opener
        "WS101",
        "zipfile.ZipFile(archive_path)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # an HDF5 member chosen by a conditional key: reopened with the file
        "h5py_member_ifexp",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a holder built by a dataset's __init__ its subclass inherits, both used
        "session_holder_subclass",
        "WS101",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a dataset class built through functools.partial: followed to the class
        "h5py_partial_dataset",
        "WS101",
        'h5py.File(path, "r")',
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a wrapper keeping the dataset in a list: its loader is wired too
        "holder_list_pair",
        "WS101",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
        strategies=("worker-init",),
    ),
    Program(  # module-level archive and LMDB environment, both read by the parent first:
        "module_zip_lmdb_env",  # each worker's accessor drops the parent's environment first
        "WS102",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # a class-level cache a classmethod fills through a local, under a lock
        "zip_class_cache_lock",
        "WS102",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the dataset's own class-level cache, a classmethod's `cls` and setdefault
        "zip_classmethod_setdefault",
        "WS103",
        "zipfile.ZipFile(",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "h5py_getstate_kept_del",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5_MISSING),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "h5py_getstate_kept_none",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5_NONE),),
        fixed_configs=FULL_CONFIGS,
    ),
)
# Annotated programs of a mypy --strict project: the fix annotates what it adds, and those
# annotations run (a class body's, a signature's) when the program does.
PROGRAM_LIST += (
    Program(  # the keyed cache's ClassVar annotation rewritten
        "typed_zip_class_cache",
        "WS102",
        "zipfile.ZipFile(path)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
        project="typed/pyproject.toml",
    ),
    Program(  # a typed opener, __getstate__, property, and worker init chained to a seed
        "typed_sqlite_seeded",
        "WS101",
        "sqlite3.connect(",
        (Before(SPAWN_2, SQLITE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
        project="typed/pyproject.toml",
    ),
)
PROGRAM_LIST += (
    Program(  # a remedy in the training script importing h5py itself; the dataset elsewhere
        "remedy_import_inside_worker_init",
        "WS311",
        "self.h5 = None",
        (Before(Config(workers=0, epochs=1), H5_NONE),
         Before(Config(subset=True), (r"AttributeError: 'Subset' object has no attribute",))),
        fixed_configs=FULL_CONFIGS,
        modules=("remedy_h5_shards.py", "runtime_driver.py"),
    ),
    Program(  # a remedy calling the opener on each part of a ConcatDataset (isinstance)
        "remedy_worker_init_loops_over_parts",
        "WS311",
        "self.h5 = None",
        (Before(Config(workers=0, epochs=1), H5_NONE), Before(Config(subset=True), H5_NONE)),
        fixed_configs=FULL_CONFIGS,
    ),
)
PROGRAM_LIST += (
    Program(  # the archive opened in an if/else binding what __init__ reads later: reopened
        "typed_reopen_zip",  # with the parent's arguments, by an annotated opener
        "WS101",
        "zipfile.ZipFile(root)",
        (Before(FORK_4, ZIP_FAILURES),),
        fixed_configs=FULL_CONFIGS,
        project="typed/pyproject.toml",
        strategies=("worker-init",),  # lazy refuses: `members` is read later in __init__
    ),
)
# Stop 38's fixes: the LMDB shape setting the environment to None before its opener runs, a
# worker_init_fn named beside `**options` (chained), a class-body-configured session.
PROGRAM_LIST += (
    Program(
        "lmdb_env_none_opener",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
        strategies=("worker-init",),  # lazy refuses: a property has no setter for the Nones
    ),
    Program(  # a FASTA reader: fork-safe (positioned reads), but it does not pickle
        "pyfaidx_fasta",
        "WS201",
        "pyfaidx.Fasta(",
        (Before(SPAWN_2, FILE_PICKLE),),
        fixed_configs=FULL_CONFIGS,
        project="macos/pyproject.toml",
    ),
    Program(  # the opener's environment bound to a local, then kept in a list
        "lmdb_local_from_opener",
        "WS101",
        "self.connect_db(path)",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # the opener closes the environment it had before: not the one it opens
        "lmdb_reopening_opener",
        "WS101",
        "lmdb.open(",
        (Before(SPAWN_2, LMDB_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(  # `__getitem__` in a worker fails unless the user's seed_worker ran there
        "worker_init_beside_kwargs",
        "WS101",
        "h5py.File(",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
        strategies=("worker-init",),  # the shape is the wiring; lazy leaves the loader alone
    ),
    Program(
        "session_class_body_configured",
        "WS103",
        "requests.Session()",
        (Before(FORK_4, REQUESTS_FAILURES),),
        fixed_configs=FULL_CONFIGS,
        strategies=("worker-init",),  # a class attribute: both strategies write the property
    ),
    # stop 39's fixes: a comprehension's variable named again later in `__init__`, and the
    # lazy strategy on an argument named like the handle's attribute
    Program(
        "h5py_keyed_comprehension_reused",
        "WS101",
        "h5py.File(p",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
    ),
    Program(
        "h5py_lazy_argument_named_like_handle",
        "WS101",
        "h5py.File(h5",
        (Before(SPAWN_2, H5PY_PICKLE),),
        fixed_configs=FULL_CONFIGS,
        strategies=("lazy",),  # the shape is lazy's (worker-init names the argument anyway)
    ),
)
PROGRAMS_BY_NAME = {program.name: program for program in PROGRAM_LIST}


# --- 1. unfixed: the bug shows ---------------------------------------------------------


@pytest.mark.parametrize(
    ("program", "before"),
    [
        pytest.param(program, before, id=f"{program.name}-{before.config.label}")
        for program in PROGRAM_LIST
        for before in program.before
    ],
)
def test_unfixed_program_fails(program: Program, before: Before, runtime_target: Target) -> None:
    observe_bug(program, runtime_target, before, stage="unfixed")


def test_unfixed_plain_http_returns_wrong_items(
    http_server: ItemServer, runtime_target: Target
) -> None:
    """Without TLS nothing detects the mix-up: items silently come back with other data.

    The server answers in one write, after 20 ms (`http_server`), so the workers' requests
    overlap on the shared connection: wrong items in 20 runs of 20, idle and beside two busy
    cores (without the wait, 17 and 20 of 20 here, and a CI run needed 5 tries); the tries
    stay for a machine slower still."""
    target = replace(runtime_target, base_url=http_server.base_url)
    before = Before(FORK_4, failures=(), wrong_items_only=True)
    program = PROGRAMS_BY_NAME["requests_init_warm"]
    observe_bug(program, target, before, stage="unfixed-http", tries=2 * MAX_TRIES)


def observe_bug(
    program: Program, target: Target, before: Before, stage: str, tries: int = MAX_TRIES
) -> None:
    """Run until the bug shows (at most ``tries`` times); fail on any unexpected outcome."""
    outcomes: list[Outcome] = []
    for _ in range(tries):
        outcome = run_program(program.path, program.target(target), before.config)
        outcomes.append(outcome)
        if before.shows_bug(outcome):
            record(program.name, stage, before.config, outcome, tries=len(outcomes))
            return
        if not (outcome.ok or before.wrong_items_only):
            message = f"failed, but not with an expected error: {outcome.describe()}"
            pytest.fail(message, pytrace=False)
    record(program.name, stage, before.config, outcomes[-1], tries=len(outcomes))
    runs = "\n".join(outcome.describe() for outcome in outcomes)
    pytest.fail(f"the bug never showed in {tries} runs:\n{runs}")


# --- 2. check: the finding -------------------------------------------------------------


@pytest.fixture(scope="session")
def workersafe() -> list[str]:
    command = workersafe_command()
    if command is None:
        pytest.skip("workersafe is not importable")
    return command


def finding_keys(report: str) -> set[tuple[str, int, str]]:
    """(file name, line, code) of every finding in a ``--format json`` report."""
    keys: set[tuple[str, int, str]] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            code, line, path = node.get("code"), node.get("line"), node.get("path")
            if isinstance(code, str) and isinstance(line, int) and isinstance(path, str):
                keys.add((Path(path).name, line, code))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(report))
    return keys


def names(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


@pytest.mark.parametrize("program", PROGRAM_LIST, ids=lambda program: program.name)
def test_check_reports_finding(program: Program, workersafe: list[str], tmp_path: Path) -> None:
    copies = program.copy_to(tmp_path)
    result = run_workersafe(workersafe, ["check", *names(copies), "--format", "json"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    expected = (*program.creation_site(), program.code)
    assert expected in finding_keys(result.stdout), result.stdout


# --- 3. fix: each strategy -------------------------------------------------------------


@dataclass(frozen=True)
class FixResult:
    files: list[Path]  # the fixed copies, entry script first
    output: str
    error: str | None  # why the fix is unusable, None when it is fine


class FixedPrograms:
    """Fixes each (program, strategy) once per session, in its own directory."""

    def __init__(self, command: list[str], root: Path) -> None:
        self.command = command
        self.root = root
        self.results: dict[tuple[str, str], FixResult] = {}

    def get(self, program: Program, strategy: str) -> FixResult:
        key = (program.name, strategy)
        if key not in self.results:
            self.results[key] = self._fix(program, strategy)
        return self.results[key]

    def _fix(self, program: Program, strategy: str) -> FixResult:
        copies = program.copy_to(self.root / f"{program.name}-{strategy}")
        args = ["fix", *names(copies), "--strategy", strategy]
        result = run_workersafe(self.command, args, copies[0].parent)
        output = result.stdout + result.stderr
        return FixResult(copies, output, self._problem(program, copies, result.returncode))

    @staticmethod
    def _problem(program: Program, copies: list[Path], returncode: int) -> str | None:
        if returncode not in (0, 1):
            return f"exit {returncode}"
        if all(copy.read_bytes() == path.read_bytes() for copy, path in zip(copies, program.files)):
            return "nothing was changed"
        for copy in copies:
            try:
                compile(copy.read_text(), str(copy), "exec")
            except SyntaxError as exc:
                return f"the fixed program does not compile: {exc}"
        return None


@pytest.fixture(scope="session")
def fixed_programs(
    workersafe: list[str], tmp_path_factory: pytest.TempPathFactory
) -> FixedPrograms:
    return FixedPrograms(workersafe, tmp_path_factory.mktemp("fixed"))


def fixed_files(fixed_programs: FixedPrograms, program: Program, strategy: str) -> list[Path]:
    result = fixed_programs.get(program, strategy)
    if result.error is not None:
        pytest.fail(f"workersafe fix --strategy {strategy}: {result.error}\n{result.output}")
    return result.files


@pytest.mark.parametrize(
    ("program", "strategy"),
    [pytest.param(program, strategy, id=f"{program.name}-{strategy}")
     for program in PROGRAM_LIST for strategy in program.strategies],
)
def test_fix_is_clean_and_idempotent(
    program: Program,
    strategy: str,
    fixed_programs: FixedPrograms,
    workersafe: list[str],
    tmp_path: Path,
) -> None:
    fixed = fixed_files(fixed_programs, program, strategy)
    check = ["check", *names(fixed), "--format", "json"]
    recheck = run_workersafe(workersafe, check, fixed[0].parent)
    assert recheck.returncode == 0, f"not clean after the fix:\n{recheck.stdout}{recheck.stderr}"
    again = [Path(shutil.copy2(path, tmp_path / path.name)) for path in fixed]
    run_workersafe(workersafe, ["fix", *names(again), "--strategy", strategy], tmp_path)
    for first, second in zip(fixed, again):
        assert second.read_bytes() == first.read_bytes(), f"a second fix changed {first.name}"


# --- 4. fixed: it works ----------------------------------------------------------------


def fixed_cases() -> Iterator[object]:
    for program in PROGRAM_LIST:
        for strategy in program.strategies:
            configs = program.fixed_configs or (
                FIXED_CONFIGS + ((SPAWN_4,) if strategy in program.spawn_after else ()))
            for config in configs:
                label = f"{program.name}-{strategy}-{config.label}"
                yield pytest.param(program, strategy, config, id=label)


@pytest.mark.parametrize(("program", "strategy", "config"), list(fixed_cases()))
def test_fixed_program_works(
    program: Program,
    strategy: str,
    config: Config,
    fixed_programs: FixedPrograms,
    runtime_target: Target,
) -> None:
    fixed = fixed_files(fixed_programs, program, strategy)[0]
    outcome = run_program(fixed, program.target(runtime_target), config)
    record(program.name, strategy, config, outcome)
    if not outcome.ok or outcome.summary is None:
        pytest.fail(f"the fixed program failed: {outcome.describe()}", pytrace=False)
    expected = expected_items(program, config)
    assert outcome.summary["items"] == expected, f"{expected} items expected: {outcome.describe()}"


def expected_items(program: Program, config: Config) -> int:
    """Every item of every epoch came back (the Subset program holds out every 8th item)."""
    held_out = -(-config.items // program.holdout_every) if program.holdout_every else 0
    kept = config.items - held_out
    if config.subset:  # every other item (runtime_driver.Settings.in_subset)
        kept = -(-kept // 2)
    return kept * config.epochs


# --- 5. fixed: one open per process ------------------------------------------------------

OPENS_PROGRAMS = ("sqlite_derived_cursor", "base_subclass_handles")
OPENS_CONFIGS = (Config(workers=0, epochs=1), Config(workers=2, epochs=1), SPAWN_2,
                 Config(workers=2, context="forkserver", epochs=1))


@pytest.mark.parametrize("config", OPENS_CONFIGS, ids=lambda config: config.label)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", OPENS_PROGRAMS)
def test_fixed_program_opens_once_per_process(
    name: str,
    strategy: str,
    config: Config,
    fixed_programs: FixedPrograms,
    runtime_target: Target,
    tmp_path: Path,
) -> None:
    """Each process (the parent, every worker) opens the connection once: under spawn and
    forkserver the unpickling opens it and the worker init must not open it again. Counted by
    an audit hook in the program (runtime_driver.py), on the real `sqlite3.connect` calls."""
    program = PROGRAMS_BY_NAME[name]
    fixed = fixed_files(fixed_programs, program, strategy)[0]
    opens = tmp_path / "opens.txt"
    target = program.target(runtime_target)
    target = replace(target, extra_env={**target.extra_env, "WS_OPENS": str(opens)})
    outcome = run_program(fixed, target, config)
    if not outcome.ok:
        pytest.fail(f"the fixed program failed: {outcome.describe()}", pytrace=False)
    pids = opens.read_text().split() if opens.exists() else []
    per_process = {pid: pids.count(pid) for pid in pids}
    assert per_process and max(per_process.values()) == 1, per_process
    assert len(per_process) >= config.workers, f"a worker opened nothing: {per_process}"
