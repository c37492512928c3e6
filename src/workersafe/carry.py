"""Which dataset files importing from a handle file the selection parses: only those importing
a name that may carry a handle out of it, once the handle file's facts tell (issue 26).

A dataset file that names no handle itself gets one only from what it imports. From a handle
file it imports names (`from tests.common.utils import convert_to_mds`): a function whose
handle never leaves it (opened and closed inside, `def free_port(): s = socket.socket() ...
s.close()`) gives the importer nothing a finding could be about, so the importer is parsed
only if another round wants it (a loader building its class, a caller, a name of interest),
as any dataset file importing no handle file. Everything else counts as carrying: a class,
a module variable, a re-export, a function returning something of the project's or of
unknown origin, a cached or worker_init function; the whole file when it keeps a
module-level handle, star-imports, sets a start method in a function or passes a handle to
a call. Pure functions of the facts (no text)."""

from __future__ import annotations

import builtins
from typing import Optional

from .facts import DatasetRef, FileFacts, FunctionFacts

# a dataset file → (a handle file it imports, the names it imports from it: None for any)
Pending = dict[str, list[tuple[str, Optional[tuple[str, ...]]]]]

_BUILTINS = frozenset(dir(builtins))


def offered(pending: Pending, facts: dict[str, FileFacts], project: set[str]) -> set[str]:
    """The files of `pending` (taken out of it) that now need parsing: once every handle file
    one imports from is parsed, those importing a name that may carry a handle out of one
    (`may_carry`); those parsed meanwhile by another round are dropped. `project`: the top
    packages of the project's modules."""
    found: set[str] = set()
    for path in list(pending):
        if path in facts:
            del pending[path]
            continue
        imports = pending[path]
        if not all(target in facts for target, _ in imports):
            continue
        del pending[path]
        if any(names is None or may_carry(facts[target], names, project)
               for target, names in imports):
            found.add(path)
    return found


def may_carry(facts: FileFacts, names: tuple[str, ...], project: set[str]) -> bool:
    """Whether a handle file's `names` (imported by a dataset file) may carry a handle out of
    it, or the file may reach the importer's classes otherwise (module docstring). A loader a
    function builds needs no importer parsed for it: the callers' round finds those passing
    its dataset, the demands the classes it calls (`selection._demand_loader_classes`)."""
    own = f"{facts.module}."
    imported = {local: qualified for local, qualified in facts.imports
                if qualified != own + local}
    # the top names the file imports from outside the project (`json`, `torch_xla`)
    outside = {qualified.partition(".")[0] for qualified in imported.values()} - project
    if facts.module_handles or facts.star_imports or facts.scoped_start_methods \
            or _passes_handle(facts, outside):
        return True
    functions = {f.name: f for f in facts.functions}
    classes = {c.name for c in facts.classes}
    variables = {name for name, _ in facts.module_vars}
    inits = {init.name for init in facts.remedies.worker_inits}
    # names read that may hold something of the project's: its imports, the file's variables
    shared = {local for local, qualified in imported.items()
              if qualified.partition(".")[0] not in outside} | variables
    carrying: dict[str, bool] = {}

    def function_carries(function: FunctionFacts) -> bool:
        known = carrying.get(function.name)
        if known is not None:
            return known
        carrying[function.name] = False  # (recursion: what it reaches decides)
        found = bool(function.returns_handle or function.cached
                     or function.attr_handle_assigns or function.qualname in inits
                     or any(_foreign(ref, outside) for ref in function.returns)
                     or bool(function.returns_call)
                     and not _outside(function.returns_call, outside)
                     or any(name in shared or (name in functions
                                               and function_carries(functions[name]))
                            for name in function.globals_read))
        carrying[function.name] = found
        return found

    for name in names:
        if name in classes or name in variables or name in imported:
            return True
        function = functions.get(name)
        if function is None or function_carries(function):
            return True
    return False


def _foreign(ref: DatasetRef, outside: set[str]) -> bool:
    """Whether a returned value may be something other than what the caller passed in or a
    library's non-handle value: not a parameter returned (`return ds`), nor a call of a
    library or builtin given nothing of the project's (`json.loads(line)`, `any(...)`: a
    library call returning a handle is `returns_handle`)."""
    if ref.kind == "param":
        return False
    if ref.kind != "call" or ref.arg_refs or ref.handle_args or ref.attr_args:
        return True
    return not _outside(ref.target, outside)


def _outside(target: str, outside: set[str]) -> bool:
    """A qualified name of a library the file imports, or a builtin (`json.loads`, `any`)."""
    top = target.partition(".")[0]
    return top in outside or ("." not in target and target in _BUILTINS)


def _passes_handle(facts: FileFacts, outside: set[str]) -> bool:
    """Whether a call in the file is given a handle (`DS(h5py.File(p))`, `run(lmdb.open(p))`)
    or an attribute of another object (`DS(train_ds.h5)`): the class called may be the
    importer's. Not a library's callable (`Version(mod.__version__)`, `shutil.copyfileobj(f,
    out)`: `outside`, as `_outside`), unless it passes what it is given on (`partial`); nor a
    dunder attribute (`mod.__version__`), never a handle."""
    loaders = facts.loaders + facts.loader_candidates
    refs = [ref for f in facts.functions for ref in f.returns]
    refs += [ref for _, found in facts.module_vars for ref in found]
    refs += [ref for loader in loaders for ref in loader.datasets]
    refs += [ref for c in facts.classes for _, found in c.attr_refs for ref in found]
    refs += [ref for c in facts.classes for m in c.methods for ref in m.returns]
    refs += [ref for call in facts.calls for ref in call.receiver]
    args = [arg for call in facts.calls for arg in call.args]
    args += [arg for loader in loaders for arg in loader.args]
    refs += [ref for arg in args for ref in arg.refs]
    seen: set[int] = set()  # each object once: stages of a pipeline are shared
    while refs:
        ref = refs.pop()
        if id(ref) in seen:
            continue
        seen.add(id(ref))
        if (ref.handle_args or any(not _dunder(a.attr) for a in ref.attr_args)) and not (
                ref.kind == "call" and _outside(ref.target, outside)
                and ref.target.rpartition(".")[2] != "partial"):
            return True
        refs += [inner for arg in ref.arg_refs for inner in arg.refs]
    return False


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")
