"""Reading a file a run checks: a Python file decoded (`source.py`), a notebook's code cells
joined into one module (`notebook.py`). Above both, so neither imports the other's caller."""

from __future__ import annotations

from .discovery import NOTEBOOK_SUFFIX
from .source import Source, SourceError, decode


def source_of(path: str, raw: bytes, check: bool = True) -> Source:
    """The text the engine and fixer read for `raw`, the bytes of `path`. Without `check`, a
    notebook's code is not parsed to mark the cells that do not (`notebook_source`)."""
    if path.endswith(NOTEBOOK_SUFFIX):  # a notebook: its code cells joined into one module
        from .notebook import notebook_source  # imported only when a run meets one

        return notebook_source(path, raw, check=check)
    return decode(path, raw)


def read_source(path: str, check: bool = True) -> Source:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    return source_of(path, raw, check)
