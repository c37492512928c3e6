"""The flake8 plugin: a thin front end over the engine, one file at a time.

It never raises: flake8 turns a plugin exception into a crash of the whole run. The cheap
prefilter runs before libcst is imported, so files without a handle and a dataset cost
almost nothing."""

from __future__ import annotations

import ast
import sys
from typing import Any, ClassVar, Iterator, Optional, Sequence

from . import __version__
from .config import Config, ConfigError, split_list

_OPTIONS = (
    ("--workersafe-extra-handles", "extra_handles",
     "qualified names of more handle constructors (comma-separated)"),
    ("--workersafe-disable-handles", "disable_handles",
     "qualified names of built-in handle constructors to ignore (comma-separated)"),
    ("--workersafe-dataset-bases", "dataset_bases",
     "qualified names of more dataset base classes (comma-separated)"),
)


class WorkerSafeChecker:
    name = "workersafe"
    version = __version__
    config: ClassVar[Config] = Config()
    _engine: ClassVar[Any] = None

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, manager: Any) -> None:
        for flag, _, help_text in _OPTIONS:
            manager.add_option(flag, default="", parse_from_config=True, help=help_text)

    @classmethod
    def parse_options(cls, options: Any) -> None:
        values = {}
        try:
            for flag, attr, _ in _OPTIONS:
                raw = getattr(options, flag[2:].replace("-", "_"), "") or ""
                values[attr] = tuple(split_list(raw)) if isinstance(raw, str) else tuple(raw)
        except ConfigError as exc:
            print(f"workersafe: configuration error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        cls.config = Config(**values)
        cls._engine = None

    @classmethod
    def engine(cls) -> Any:
        if cls._engine is None:
            from .engine import Engine

            cls._engine = Engine(cls.config, link=False)
        return cls._engine

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        try:
            engine = self.engine()
            if not engine.filter.single_file_candidate(text):
                return
            findings = engine.check_text(self.filename, text, _module(self.filename), noqa=False)
        except Exception as exc:  # noqa: BLE001 - never crash flake8
            yield 1, 0, f"WS001 internal error in workersafe ({type(exc).__name__}: {exc})", \
                type(self)
            return
        for finding in findings:
            yield finding.line, finding.col, f"{finding.code} {finding.message}", type(self)


def _module(filename: str) -> str:
    from .discovery import module_name

    import os

    return module_name(filename, os.path.dirname(filename) or ".")
