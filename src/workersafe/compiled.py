"""Which build of the per-file analysis runs: compiled by mypyc (setup.py), or pure Python.

A compiled build records, in `_compiled-<python>.txt` next to this file (one per Python: the
builds of several Pythons in one checkout coexist, as their extension modules do), a checksum of
each module's source as it was compiled. If a source differs now (an edited checkout installed
with `pip install -e .`), or a compiled module is missing, every recorded module is imported
from its source instead: an edit is never shadowed by an older build, and the compiled modules
(which call each other natively) never run beside a pure copy of one of them. So too when
`WORKERSAFE_PURE=1` is set (to compare the two builds, or to rule the compiled one out). Checked
once, when the package is imported: a stat of each source, read (and its checksum taken) only
when its size or modification time differs from the record's."""

from __future__ import annotations

import os
import sys
import zlib
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from importlib.util import spec_from_file_location
from typing import Optional, Sequence

_HERE = os.path.dirname(os.path.abspath(__file__))
_RECORD = os.path.join(_HERE, f"_compiled-{sys.implementation.cache_tag}.txt")

# What runs, for `workersafe --version`: "compiled", "pure Python", or "pure Python: why".
status = "pure Python"


def _source_path(module: str) -> str:
    return os.path.join(os.path.dirname(_HERE), *module.split(".")) + ".py"


def _compiled_exists(module: str) -> bool:
    base = os.path.join(os.path.dirname(_HERE), *module.split("."))
    return any(os.path.exists(base + suffix) for suffix in EXTENSION_SUFFIXES)


def _read_record() -> Optional[list[tuple[str, str]]]:
    try:
        with open(_RECORD, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
    except OSError:
        return None
    return [(name, value) for name, _, value in (line.partition(" ") for line in lines if line)]


def _stale(modules: list[tuple[str, str]]) -> str:
    """Why the compiled build must not run ("" if it may). A source with the size and
    modification time recorded at compile time is not read (a stat, not a checksum of
    every source, on each start of the flake8 plugin)."""
    for module, recorded in modules:
        checksum, _, when = recorded.partition(" ")
        try:
            if when and _stat_of(_source_path(module)) == when:
                if not _compiled_exists(module):
                    return f"{module} was not compiled"
                continue
            with open(_source_path(module), "rb") as handle:
                source = handle.read()
        except OSError:
            return f"{module}: no source"
        if f"{zlib.crc32(source):08x}" != checksum:
            return (f"{_source_path(module)} changed since it was compiled; reinstall to "
                    "compile it again")
        if not _compiled_exists(module):
            return f"{module} was not compiled"
    return ""


def _stat_of(path: str) -> str:
    """A file's size and modification time, as setup.py records them."""
    stat = os.stat(path)
    return f"{stat.st_size} {stat.st_mtime_ns}"


class _PureFinder:
    """Imports the recorded modules from their `.py` files (a meta path finder)."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules

    def find_spec(self, name: str, path: Optional[Sequence[str]] = None,
                  target: object = None) -> Optional[ModuleSpec]:
        if name not in self.modules:
            return None
        return spec_from_file_location(name, _source_path(name))


def _choose() -> str:
    record = _read_record()
    if record is None:
        return "pure Python"
    modules = [(name, value) for name, value in record if name != "group"]
    why = "WORKERSAFE_PURE is set" if os.environ.get("WORKERSAFE_PURE", "") not in ("", "0") \
        else _stale(modules)
    if not why:
        return "compiled"
    sys.meta_path.insert(0, _PureFinder({name for name, _ in modules}))
    return f"pure Python: {why}"


status = _choose()
