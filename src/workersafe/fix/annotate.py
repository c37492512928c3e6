"""Type annotations on the code the fixer writes, in a project that checks them.

The rule: the methods and functions the fix adds to a file are annotated when both hold:
- the project checks annotations: the mypy configuration for the file (the nearest
  `mypy.ini`, `.mypy.ini`, `pyproject.toml` with `[tool.mypy]` or `setup.cfg` with `[mypy]`
  at or above its folder, mypy's own order in each folder) sets `strict` or
  `disallow_untyped_defs`;
- the code it edits is annotated: every function the class defines (for what is added to a
  class: its opener, lazy properties, `__getstate__`), or every function the module defines
  (for the worker init of a script, the accessor of a module-level handle), has a return
  annotation, and there is one at least.
Anything else gets what the fixer always wrote, unannotated.

The spellings follow the file's own: `__getstate__` returns `dict[str, object]` (no import
needed: the object values are what `self.__dict__` holds), or `Dict[str, object]` where the
file imports `Dict` from typing; the worker init's `previous` is `Optional[Callable[[int],
None]]`, or `Callable[[int], None] | None` under `from __future__ import annotations`, with
the names the file lacks imported from typing. A lazy property returns what the handle's
assignment was annotated with, else the registry's class of the live object
(`requests.Session`) as the module can spell it, else `Any`; a module-level accessor likewise
(a cached factory keeps its own return annotation), its globals `Optional` of that."""

from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from ..paths import ancestors
from .cstutil import dotted, walk
from .handles import import_map

_FLAGS = ("strict", "disallow_untyped_defs")
_TRUE = ("1", "true", "yes", "on")


def checks_annotations(path: str) -> bool:
    """The mypy configuration for the file at `path` requires annotated functions. (Read
    each time: an editor's server outlives edits of the configuration.)"""
    for folder in ancestors(os.path.dirname(os.path.abspath(path))):
        for name in ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg"):
            candidate = os.path.join(folder, name)
            if not os.path.isfile(candidate):
                continue
            found = _flags(candidate)
            if found is not None:
                return found
        if any(os.path.exists(os.path.join(folder, m)) for m in (".git", ".hg")):
            return False  # the repository's root: no mypy configuration above it counts
    return False


def _flags(path: str) -> Optional[bool]:
    """Whether the mypy configuration in `path` requires annotations; None when the file
    holds no mypy configuration (or cannot be read)."""
    if path.endswith(".toml"):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - exercised on 3.9/3.10
            import tomli as tomllib
        try:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, ValueError):
            return None
        tool = data.get("tool")
        section = tool.get("mypy") if isinstance(tool, dict) else None
        if not isinstance(section, dict):
            return None
        return any(section.get(flag) is True or section.get(flag.replace("_", "-")) is True
                   for flag in _FLAGS)
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    if not parser.has_section("mypy"):
        return None
    return any(parser.get("mypy", flag, fallback="").strip().lower() in _TRUE
               for flag in (*_FLAGS, *(f.replace("_", "-") for f in _FLAGS)))


def _functions(node: cst.CSTNode) -> list[cst.FunctionDef]:
    return [n for n in walk(node) if isinstance(n, cst.FunctionDef)]


def _annotated(functions: Sequence[cst.FunctionDef]) -> bool:
    return bool(functions) and all(f.returns is not None for f in functions)


def class_annotated(cls: cst.ClassDef) -> bool:
    """Every method the class defines (its own, nested ones too) has a return annotation."""
    return _annotated(_functions(cls))


def module_annotated(module: cst.Module) -> bool:
    """Every function the module defines has a return annotation."""
    return _annotated(_functions(module))


def _typing_names(module: cst.Module) -> dict[str, str]:
    """The names module-level `from typing import ...` binds → the typing name."""
    found: dict[str, str] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and not small.relative \
                    and small.module is not None and dotted(small.module) == "typing" \
                    and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    if isinstance(bound, cst.Name) and isinstance(alias.name, cst.Name):
                        found[bound.value] = alias.name.value
    return found


def _spelling(module: cst.Module, name: str) -> str:
    """How the module spells typing's `name`: its own alias, else `name` (to import)."""
    return next((bound for bound, real in _typing_names(module).items() if real == name), name)


def future_annotations(module: cst.Module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) \
                        and small.module.value == "__future__" \
                        and not isinstance(small.names, cst.ImportStar) \
                        and any(isinstance(a.name, cst.Name) and a.name.value == "annotations"
                                for a in small.names):
                    return True
    return False


def state_type(module: cst.Module) -> str:
    """`__getstate__`'s return annotation in the module's style."""
    if "Dict" in _typing_names(module).values():
        return f"{_spelling(module, 'Dict')}[str, object]"
    return "dict[str, object]"


def previous_type(module: cst.Module) -> tuple[str, list[str]]:
    """The worker init's `previous` annotation, and the typing names it needs imported."""
    imported = set(_typing_names(module).values())
    needed: list[str] = []
    if "Callable" not in imported:
        needed.append("Callable")
    callable_ = f"{_spelling(module, 'Callable')}[[int], None]"
    if future_annotations(module) and "Optional" not in imported:
        return f"{callable_} | None", needed
    if "Optional" not in imported:
        needed.append("Optional")
    return f"{_spelling(module, 'Optional')}[{callable_}]", sorted(needed)


def handle_type(module: cst.Module, classes: Sequence[str]) -> tuple[str, list[str]]:
    """The first of `classes` (qualified names of what a handle is) the module can name
    through its imports, else `Any`; and the typing names that needs imported."""
    modules = import_map(module, top_level=True)  # bound name → the module or object it is
    for qualified in classes:
        for name, full in sorted(modules.items()):
            if qualified == full:
                return name, []
            if qualified.startswith(full + "."):
                return f"{name}{qualified[len(full):]}", []
    any_ = _spelling(module, "Any")
    return any_, [] if "Any" in _typing_names(module).values() else ["Any"]


@dataclass
class Typed:
    """How to annotate what the fix adds to one annotated class or script of `module`; the
    typing names those annotations need collect in `imports`."""

    module: cst.Module
    runtime_types: Callable[[str], Sequence[str]] = lambda handle: ()
    imports: set[str] = field(default_factory=set)

    def state(self) -> str:
        return state_type(self.module)

    def previous(self) -> str:
        spelled, needed = previous_type(self.module)
        self.imports.update(needed)
        return spelled

    def optional(self, inner: str) -> str:
        """`Optional[inner]` (`inner | None` under `from __future__ import annotations`)."""
        if inner == "Any":
            return inner
        names = set(_typing_names(self.module).values())
        if future_annotations(self.module) and "Optional" not in names:
            return f"{inner} | None"
        if "Optional" not in names:
            self.imports.add("Optional")
        return f"{_spelling(self.module, 'Optional')}[{inner}]"

    def handle(self, handle: str, annotation: str = "") -> str:
        """A lazy property's return type: the assignment's `annotation`, else the class of
        what the `handle` constructor makes, else Any."""
        if annotation:
            return annotation
        spelled, needed = handle_type(self.module, self.runtime_types(handle))
        self.imports.update(needed)
        return spelled
