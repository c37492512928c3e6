"""The flake8 plugin: a thin front end over the engine, one file at a time.

It never raises: flake8 turns a plugin exception into a crash of the whole run. The cheap
prefilter runs first, before the engine is even imported, so files without a handle cost almost
nothing (no import of the analysis, the facts or the rules); the others are analysed on the
`ast` tree flake8 has already built (no parse of our own)."""

from __future__ import annotations

import ast
import gc
import os
import sys
from typing import Any, ClassVar, Iterator, Optional, Sequence

from .records import replace
from . import __version__
from .config import (
    Config, ConfigError, find_pyproject, flake8_value, load_pyproject_data, with_requires_python,
)
from .paths import CACHE_DIR_NAME, find_index_dir, project_root
from .ruletable import DEFAULT_SELECT, UNREADABLE

_OPTIONS = (
    ("--workersafe-extra-handles", "extra_handles",
     "qualified names of more handle constructors (comma-separated)"),
    ("--workersafe-disable-handles", "disable_handles",
     "qualified names of built-in handle constructors to ignore (comma-separated)"),
    ("--workersafe-dataset-bases", "dataset_bases",
     "qualified names of more dataset base classes (comma-separated)"),
    ("--workersafe-target-version", "target_version",
     "the oldest Python the code runs on, py39..py314 (default: from requires-python in "
     "pyproject.toml, else py39): picks the default DataLoader start method"),
    ("--workersafe-platform", "platform",
     "linux, macos, windows or any (default linux): picks the default start method; any "
     "reports what fails on any of them"),
)


class WorkerSafeChecker:
    name = "workersafe"
    version = __version__
    config: ClassVar[Config] = Config()
    build_index: ClassVar[bool] = False
    disable_noqa: ClassVar[bool] = False
    _engine: ClassVar[Any] = None
    _prefilter: ClassVar[Any] = None
    _indexes: ClassVar[dict[str, Any]] = {}

    def __init__(self, tree: Optional[ast.AST], lines: Sequence[str], filename: str) -> None:
        self.tree = tree if isinstance(tree, ast.Module) else None
        self.lines = lines
        self.filename = filename
        self._stale_index = False  # (`_index`)

    @classmethod
    def add_options(cls, manager: Any) -> None:
        for flag, _, help_text in _OPTIONS:
            manager.add_option(flag, default="", parse_from_config=True, help=help_text)
        manager.add_option(
            "--workersafe-index", action="store_true", default=False, parse_from_config=True,
            help="link against the whole project: build (or refresh) the project index in "
                 f"{CACHE_DIR_NAME}/ when it is missing or stale")

    @classmethod
    def parse_options(cls, options: Any) -> None:
        values: dict[str, Any] = {}
        for flag, attr, _ in _OPTIONS:
            raw = getattr(options, flag[2:].replace("-", "_"), "") or ""
            if not raw:
                continue
            try:
                values[attr] = flake8_value(attr, raw, flag[2:]) if isinstance(raw, str) \
                    else tuple(raw)
            except ConfigError as exc:  # a clean message and exit 2, never a traceback
                print(f"workersafe: configuration error in flake8 option {flag[2:]}: {exc}",
                      file=sys.stderr)
                raise SystemExit(2) from None
        values["select"] = _flake8_select(options)
        cls.config = _with_project_target(Config(**values))
        cls.build_index = bool(getattr(options, "workersafe_index", False))
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        cls._engine = None
        cls._prefilter = None
        cls._indexes = {}

    @classmethod
    def engine(cls) -> Any:
        if cls._engine is None:
            from .engine import Engine

            cls._engine = Engine(cls.config, link=False)
            if cls._prefilter is not None:  # the same test: its tables built once
                cls._engine.filter = cls._prefilter
        return cls._engine

    @classmethod
    def prefilter(cls) -> Any:
        """The engine's prefilter, without importing the engine (the analysis, the facts and
        the rules): most files flake8 checks create no handle and need none of it."""
        if cls._engine is not None:
            return cls._engine.filter
        if cls._prefilter is None:
            from .prefilter import Prefilter

            cls._prefilter = Prefilter(cls.config.registry(), cls.config.dataset_words())
        return cls._prefilter

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        # No cycle collection while a file is analysed (its facts, and on the first candidate
        # the modules of the analysis, the linker and the rules: ~8 collections, ~1.5 ms of
        # the ~25 ms a 3,000-line candidate costs, each scanning what came before for
        # nothing); flake8's own work, between the findings yielded, runs with it as it was.
        enabled = gc.isenabled()
        gc.disable()
        try:
            reported = self._reported()
        finally:
            if self._engine is not None:
                _freeze_once()
            if enabled:
                gc.enable()
        for line, col, message in reported:
            yield line, col, message, type(self)

    def _reported(self) -> list[tuple[int, int, str]]:
        """(line, column, "<code> <message>") of each finding; an internal error as one."""
        text = "".join(self.lines)
        try:
            prefilter = self.prefilter()
            if not prefilter.mentions_handle(text):
                return []
            index = self._index()
            if index is not None:
                findings = self.engine().check_text_in_project(self.filename, text, index,
                                                               self.tree, handle=True)
            else:
                # the engine's own test (`single_file_candidate`), finished here: a file
                # naming a handle but no dataset or loader does not load the engine
                candidate = prefilter.mentions_dataset(text)
                if not candidate and not self.filename.endswith(".ipynb"):
                    return []  # (a notebook's cells that do not parse are still reported)
                findings = self.engine().check_text(
                    self.filename, text, _module(self.filename), noqa=False, tree=self.tree,
                    candidate=candidate)
        except Exception as exc:  # noqa: BLE001 - never crash flake8
            message = f"internal error in workersafe ({type(exc).__name__}: {exc})"
            return [(1, 0, f"{UNREADABLE} {message}")]
        if findings and self._stale_index:  # (say why a latent code and not a linked one)
            findings = [replace(f, message=f"{f.message} {_STALE_HINT}")
                        if f.code.startswith("WS11") else f for f in findings]
        if findings and not self.disable_noqa:
            # flake8 applies `# noqa` itself, by the code alone; the twin rule is ours
            # (`# noqa: WS101` on a line reported here as WS111).
            from .noqa import NoqaFilter

            noqa = NoqaFilter(self.lines)
            findings = [f for f in findings if not noqa.twin_suppressed(f.code, f.line)]
        return [(f.line, f.col, f"{f.code} {f.message}") for f in findings]

    def _index(self) -> Optional[Any]:
        """A fresh project index for this file, or None (then: single-file knowledge; with
        `_stale_index` set when this file's index is there but files changed since)."""
        self._stale_index = False
        if self.filename in ("stdin", "-"):
            return None
        here = os.path.abspath(self.filename)
        cache_dir = find_index_dir(here)
        if cache_dir is not None:
            from .index import load_index

            if cache_dir in self._indexes:
                index = self._indexes[cache_dir]
            else:
                index = load_index(cache_dir)
                self._indexes[cache_dir] = index  # loaded once per process, held or not
            if index is not None and here in index.stats and index.fresh(except_path=here):
                return index
            self._stale_index = index is not None and here in index.stats
        if not self.build_index:
            return None
        # rebuilt where the index was found, unless that is above this file's project (a file
        # in no project: only its own folder is its project, never a home or temporary one);
        # both are folders above the file, so the shorter path is the higher one
        root = project_root(here)
        if cache_dir is None or len(os.path.dirname(cache_dir)) < len(root):
            cache_dir = os.path.join(root, CACHE_DIR_NAME)
        index = _build_index(cache_dir, self.config)
        self._indexes[cache_dir] = index
        return index if index is not None and here in index.stats else None


# appended to a latent code's message when the project index holds this file but is stale
_STALE_HINT = (f"[the project index in {CACHE_DIR_NAME}/ is stale: run `workersafe check .` "
               "or pass --workersafe-index to link against the whole project]")


def _flake8_select(options: Any) -> tuple[str, ...]:
    """flake8's own `select` and `extend-select`, so that naming a rule the table has off by
    default (`--extend-select WS313`, `select = WS3`) turns it on here as it does in the CLI.
    flake8 filters what we report by the same lists; without an explicit `select`, ours is the
    default `WS` plus any `extend-select`."""
    def codes(value: Any) -> tuple[str, ...]:
        if not value:
            return ()
        items = value.split(",") if isinstance(value, str) else value
        return tuple(c.strip().upper() for c in items if isinstance(c, str) and c.strip())

    explicit = codes(getattr(options, "select", None))
    return (explicit or (DEFAULT_SELECT,)) + codes(getattr(options, "extend_select", None))


def _with_project_target(config: Config) -> Config:
    """No target version given: the `requires-python` of the pyproject.toml flake8 runs under
    (an unreadable one is not the plugin's business: the default stays)."""
    if config.target_version:
        return config
    path = find_pyproject(os.getcwd())
    if path is None:
        return config
    try:
        return with_requires_python(config, load_pyproject_data(path))
    except ConfigError:
        return config


def _build_index(cache_dir: str, config: Config) -> Optional[Any]:
    from .engine import Engine
    from .index import load_index, write_index

    root = os.path.dirname(cache_dir)
    engine = Engine(config, cache_dir=cache_dir, jobs=1)
    result = engine.check_paths([root])
    write_index(cache_dir, [root], result.facts, [f.path for f in result.files])
    return load_index(cache_dir)


_frozen = False


def _freeze_once() -> None:
    """After the first candidate, the objects alive for the rest of the process (the modules
    of the analysis, the linker and the rules, the registry's tables: tens of thousands) leave
    the collector's care (`gc.freeze`), once. Else every later full collection of flake8's
    run scans them again for nothing: on the 3,022-line candidate file that scanning was most
    of the plugin's cost beyond its own work (bench/RESULTS.md, stop 38). What flake8 holds at
    that moment is frozen too: reference counting still frees it (an AST, a file's tokens);
    only a cycle among those objects would outlive its use, once per process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


def _module(filename: str) -> str:
    from .discovery import module_name

    return module_name(filename, os.path.dirname(filename) or ".")
