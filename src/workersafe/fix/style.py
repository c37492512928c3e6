"""How long a line the fixer writes may be: the project's own limit, for the run.

`workersafe fix` (and a quick fix in an editor) sets it from the configuration (`line-length`
in `[tool.workersafe]`, else ruff's, black's or flake8's setting; see `config.py`); the
templates, the wiring of loaders and the lazy guards read it while they render."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

DEFAULT_LINE_LENGTH = 99  # when the project sets none
_LINE_LENGTH: ContextVar[int] = ContextVar("workersafe_line_length", default=DEFAULT_LINE_LENGTH)


def max_line() -> int:
    """The longest line the fixer may write in this run."""
    return _LINE_LENGTH.get()


@contextmanager
def line_length(columns: int) -> Iterator[None]:
    """Render with lines of at most `columns` (0: the default)."""
    token = _LINE_LENGTH.set(columns or DEFAULT_LINE_LENGTH)
    try:
        yield
    finally:
        _LINE_LENGTH.reset(token)
