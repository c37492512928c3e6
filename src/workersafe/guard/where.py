"""Where a reported attribute was set, when the static analysis of the class's file knows it:
the engine run on that one file, lazily (only for a finding, once per file)."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Optional

from ..findings import Finding


@functools.lru_cache(maxsize=64)
def _findings(path: str) -> tuple[Finding, ...]:
    from ..config import Config
    from ..engine import Engine

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        return tuple(Engine(Config(), link=False, jobs=1).check_text(path, text))
    except Exception:  # noqa: BLE001 - a courtesy: never fail the guard over it
        return ()


def shown(path: str) -> str:
    """`path` relative to the working directory when it lies below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def set_at(holder: Optional[type], module: str, attr: str) -> Optional[str]:
    """`file.py:12` of the statement the engine reports for `attr` of `holder` (or for the
    module global `attr` of `module`), or None."""
    if not attr:
        return None
    try:
        if holder is not None:
            path = inspect.getsourcefile(holder)
        else:
            path = getattr(sys.modules.get(module), "__file__", None)
    except (TypeError, OSError):
        return None
    if not path or not os.path.isfile(path):
        return None
    qualname = holder.__qualname__ if holder is not None else ""
    for finding in _findings(path):
        plan = finding.plan
        if plan is None or attr not in plan.holding_attrs:
            continue
        if holder is None and plan.kind == "module" or plan.class_qualname == qualname:
            return f"{shown(path)}:{finding.line} ({finding.code} there)"
    return None
