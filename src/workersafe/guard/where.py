"""What the static analysis of the class's file knows of a reported attribute: where it was
set, and whether `workersafe fix` rewrites it (the fixer planned and verified in memory,
nothing written). The engine runs on that one file, lazily: only for a finding, once per
file."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Optional

from ..findings import Finding, FindingKey, finding_key


@dataclass(frozen=True)
class Static:
    set_at: Optional[str]  # `file.py:12 (WS101 there)`; None: the linter does not see it
    fixable: bool  # `workersafe fix` rewrites it
    note: str = ""  # why not, in the fixer's words (when the linter sees it)


UNSEEN = Static(None, False)


@functools.lru_cache(maxsize=64)
def _analysis(paths: tuple[str, ...]) -> tuple[tuple[Finding, ...], dict[FindingKey, str]]:
    """The files' findings (linked), and for each the fixer's verdict ("" fixed, else why
    not)."""
    from ..config import Config
    from ..engine import Engine

    try:
        engine = Engine(Config(), jobs=1)
        result = engine.check_paths(list(paths))
    except Exception:  # noqa: BLE001 - a courtesy: never fail the guard over it
        return (), {}
    verdicts: dict[FindingKey, str] = {}
    if any(f.plan for f in result.findings):
        try:
            from ..fixes import rewrite

            done = rewrite(engine, result, Config().fix_strategy)
        except Exception:  # noqa: BLE001 - the fixer failed: nothing is said fixable
            return tuple(result.findings), {}
        fixed = {finding_key(f) for f in done.fixed}
        for finding in result.findings:
            key = finding_key(finding)
            verdicts[key] = "" if key in fixed else str(
                done.notes.get(key) or done.notes.get((finding.path,)) or "the fixer left it")
    return tuple(result.findings), verdicts


def shown(path: str) -> str:
    """`path` relative to the working directory when it lies below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def static_info(holder: Optional[type], module: str, attr: str, loader_file: str = ""
                ) -> Static:
    """The statement the engine reports for `attr` of `holder` (or for the module global
    `attr` of `module`) and the fixer's verdict on it; `UNSEEN` when the engine reports none.
    The class's file is linked with `loader_file` (where the loader started), if another."""
    if not attr:
        return UNSEEN
    try:
        if holder is not None:
            path = inspect.getsourcefile(holder)
        else:
            path = getattr(sys.modules.get(module), "__file__", None)
    except (TypeError, OSError):
        return UNSEEN
    if not path or not os.path.isfile(path):
        return UNSEEN
    qualname = holder.__qualname__ if holder is not None else ""
    path = os.path.abspath(path)
    paths = [path]
    if loader_file and os.path.isfile(loader_file) and os.path.abspath(loader_file) != path:
        paths.append(os.path.abspath(loader_file))
    findings, verdicts = _analysis(tuple(paths))
    for finding in findings:
        if finding.path != path:
            continue
        plan = finding.plan
        if plan is None or attr not in plan.holding_attrs:
            continue
        # the engine names the class with its module (`train.Items`; at run time `__main__`)
        if holder is None and plan.kind in ("module", "cache") or holder is not None and (
                plan.class_qualname == qualname or plan.class_qualname.endswith(f".{qualname}")):
            note = verdicts.get(finding_key(finding), "the fixer was not run")
            return Static(f"{shown(path)}:{finding.line} ({finding.code} there)", not note,
                          note)
    return UNSEEN


def set_at(holder: Optional[type], module: str, attr: str) -> Optional[str]:
    """`file.py:12` of the statement the engine reports for the attribute, or None."""
    return static_info(holder, module, attr).set_at
