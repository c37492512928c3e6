"""The first step of fixing a worker_init_fn remedy (WS301/WS302, latent WS311/WS312): turn it
into the plain shape the instance fix knows (WS101), in memory.

The creation the worker_init_fn makes on `get_worker_info().dataset` (with the statements
that configure it) moves into the dataset's `__init__`, the dataset variable becoming `self`:
in place of `self.<attr> = None`, or last. A worker_init_fn calling an opener
(`dataset.open()`) makes `__init__` call it instead. The worker_init_fn keeps whatever else it
does (seeding: it stays wired, and the instance fix chains it); if creating the handle was all
it did, it leaves the DataLoader calls, and its `def` goes when nothing else names it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional, TypeVar, Union

import libcst as cst

from ..findings import Finding
from .cstutil import (
    BUILTIN_NAMES, Located, ReplaceNodes, as_statement, bound_names, dotted, function_params,
    is_absolute_import, is_none,
    leading_lines, loaded_names, module_bindings, parse_raw, single, statements, walk,
    with_dominant_newline, with_leading_lines,
)
from .handles import import_map
from .plan import Unfixable

WorkerFn = Union[cst.FunctionDef, cst.Lambda]


@dataclass(eq=False)
class RemedyGroup:
    """The remedy findings of one worker_init_fn: the attributes it creates, per class."""

    worker_init: tuple[str, int, int]  # (path, line, col) of its def or lambda
    name: str  # its qualified name, "" for a lambda
    findings: list[Finding] = field(default_factory=list)
    attrs: dict[str, list[str]] = field(default_factory=dict)  # class qualname → attributes
    note: str = ""  # what happened to the worker_init_fn (for the report)


@dataclass
class FileState:
    located: Located
    replacements: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
    removed: set[int] = field(default_factory=set)  # ids of module-level statements deleted
    touched: set[int] = field(default_factory=set)  # original lines edited
    unused: set[str] = field(default_factory=set)  # names the removed code read


def groups_of(findings: list[Finding]) -> list[RemedyGroup]:
    groups: dict[tuple[str, int, int], RemedyGroup] = {}
    for finding in findings:
        plan = finding.plan
        if plan is None or plan.kind != "worker-init-only" or not plan.worker_init:
            continue
        group = groups.setdefault(plan.worker_init, RemedyGroup(plan.worker_init, plan.method))
        group.findings.append(finding)
        attrs = group.attrs.setdefault(plan.class_qualname, [])
        if plan.attr not in attrs:
            attrs.append(plan.attr)
    return list(groups.values())


class Prepass:
    """Collects the edits of every group against the original trees, then renders each file
    once (like the Rewriter)."""

    def __init__(self, raws: dict[str, bytes], texts: dict[str, str],
                 class_homes: dict[str, tuple[str, str]],
                 imports: dict[str, dict[str, str]]) -> None:
        self.raws = raws  # path → original bytes (the files being fixed)
        self.texts = texts  # and their text
        self.imports = imports  # path → module-level import bindings (local → qualified)
        self.opened: dict[str, set[str]] = {}  # class qualname → attributes __init__ now makes
        self.class_homes = class_homes  # class qualname → (path, class name)
        self.files: dict[str, FileState] = {}

    def state(self, path: str) -> FileState:
        if path not in self.files:
            module = with_dominant_newline(parse_raw(self.raws[path]))
            self.files[path] = FileState(Located(module))
        return self.files[path]

    # --- one group ----------------------------------------------------------------------------

    def plan(self, group: RemedyGroup) -> None:
        """Record the edits of `group`, or raise Unfixable (nothing recorded then)."""
        path, line, col = group.worker_init
        if path not in self.texts:
            raise Unfixable(f"the worker_init_fn is in {path}, which is not being fixed")
        if "" in group.attrs or len(group.attrs) != 1:
            raise Unfixable("the worker_init_fn sets handles used by no single dataset class: "
                            "open them in the dataset by hand")
        ((qualname, attrs),) = group.attrs.items()
        home = self.class_homes.get(qualname)
        if home is None or home[0] not in self.texts:
            raise Unfixable("cannot find the dataset class among the files being fixed")
        wstate = self.state(path)
        function = _worker_function(wstate.located, group.name, line, col)
        reading = _WorkerFn(function)
        moved, openers, kept = reading.split(attrs)
        cpath, cname = home
        cstate = self.state(cpath)
        cls = next((s for s in cstate.located.module.body
                    if isinstance(s, cst.ClassDef) and s.name.value == cname), None)
        if cls is None:
            raise Unfixable(f"{cname} is not defined at module level")
        init = next((s for s in _body(cls) if isinstance(s, cst.FunctionDef)
                     and s.name.value == "__init__"), None)
        if init is None or not function_params(init):
            raise Unfixable(f"{cname} has no __init__ of its own to open the handle in")
        this = function_params(init)[0]
        for attr, param in _kept_params(init, this):
            if attr in attrs:
                raise Unfixable(f"{cname}.__init__ sets {this}.{attr} from its parameter "
                                f"{param}, which the callers leave None: open the handle "
                                "there by hand")
        new_lines = [reading.as_dataset(s, this) for s in moved]
        new_lines += [_statement(f"{this}.{name}()") for name in openers]
        new_lines = reading.imports_for(new_lines, module_bindings(cstate.located.module)) \
            + new_lines
        self._check_names(new_lines, cstate.located.module, reading, this,
                          (path, cpath))
        opened = self.opened.setdefault(qualname, set())
        made = set(attrs) | _set_by_openers(cls, openers, this)
        already = made <= opened or (made <= _made_in(init, this) and not openers)
        edits = {} if already else _init_edits(init, attrs, new_lines, this, openers, cls)
        for node in edits:
            if node in cstate.replacements:
                raise Unfixable(f"{cname}.__init__ is edited by another worker_init_fn's fix "
                                "for other attributes: fix it by hand")
        wiring = self._worker_fn_edits(group, wstate, function, kept)
        if any(node in self.state(p).replacements for p, found in wiring.items()
               for node in found):
            raise Unfixable("a DataLoader call is already edited by another worker_init_fn's "
                            "fix: fix it by hand")
        opened |= made
        wstate.unused |= loaded_names(function) - set().union(*(loaded_names(s) for s in kept))
        for node, new in edits.items():
            cstate.replacements[node] = new
        cstate.touched |= _lines(cstate.located, list(edits))
        for where, found in wiring.items():
            state = self.state(where)
            for node, new_node in found.items():
                if new_node is _REMOVED:
                    state.removed.add(id(node))
                    start, end = state.located.lines_of(node)
                    before = len(leading_lines(as_statement(node)))
                    state.touched.update(range(start - before, end + 1))
                else:
                    state.replacements[node] = new_node
                    state.touched |= _lines(state.located, [node])

    def _check_names(self, new_lines: list[cst.BaseStatement], module: cst.Module,
                     reading: "_WorkerFn", this: str, paths: tuple[str, str]) -> None:
        """The names the moved creation reads mean the same in the dataset's module."""
        bound = module_bindings(module) | BUILTIN_NAMES | {this}
        worker, dataset = (self.imports.get(p, {}) for p in paths)
        same_module = paths[0] == paths[1]
        carried = bound_names([s for s in new_lines if is_absolute_import(s)])  # moved along
        # what the worker_init_fn's own imports bind (`import h5py` inside it), kept where the
        # dataset's module binds the same at module level
        own = {local: qualified for statement in reading.imported.values()
               for local, qualified in import_map(statement).items()}
        for statement in new_lines:
            if is_absolute_import(statement):
                continue
            for name in sorted(loaded_names(statement) - carried):
                if name in reading.worker_only:
                    raise Unfixable(f"the handle's creation reads {name}, which only the worker "
                                    "has: open it in the dataset by hand")
                if name in reading.locals:
                    raise Unfixable(f"the handle's creation reads {name}, a local of the "
                                    "worker_init_fn")
                if name not in bound or own.get(name, worker.get(name)) != dataset.get(name):
                    where = "the module" if same_module else "the dataset's module"
                    raise Unfixable(f"the handle's creation needs {name}, which is not bound "
                                    f"(to the same thing) in {where} at module level")

    def _worker_fn_edits(self, group: RemedyGroup, wstate: FileState, function: WorkerFn,
                         kept: list[cst.BaseStatement]
                         ) -> dict[str, dict[cst.CSTNode, cst.CSTNode]]:
        """Path → edits: the worker_init_fn trimmed to what it keeps, or (nothing kept) gone
        from the DataLoader calls, here and in the files importing it, its `def` deleted."""
        path = group.worker_init[0]
        short = _short(group.name)
        if kept:
            assert isinstance(function, cst.FunctionDef)
            body = function.body
            assert isinstance(body, cst.IndentedBlock)
            first = body.body[0]
            if kept[0] is not first:  # it takes over the first statement's leading lines
                kept = [kept[0].with_changes(leading_lines=leading_lines(first)), *kept[1:]]
            group.note = f"{_named(short)} kept (chained)"
            return {path: {function: function.with_changes(body=body.with_changes(body=kept))}}
        if isinstance(function, cst.Lambda):
            edits: dict[cst.CSTNode, cst.CSTNode] = {
                call: _without_arg(call, arg)
                for call, arg in _wired_args(wstate.located, function, "")}
            if not edits:
                raise Unfixable("cannot find the DataLoader call the lambda is passed to")
            group.note = "the lambda worker_init_fn removed"
            return {path: edits}
        out = {path: self._unwired(path, short, function)}
        out[path][function] = _REMOVED
        for other in self.texts:
            if other != path:
                for local in self._imported_as(other, group.name):
                    out.setdefault(other, {}).update(self._unwired(other, local, None))
                    self.state(other).unused.add(local)
        group.note = f"{_named(short)} removed: it only created the handle"
        return out

    def _unwired(self, path: str, name: str, function: Optional[cst.FunctionDef]
                 ) -> dict[cst.CSTNode, cst.CSTNode]:
        """The calls of this file passing `name` as `worker_init_fn=`, without it; Unfixable
        when the file uses `name` otherwise."""
        located = self.state(path).located
        edits: dict[cst.CSTNode, cst.CSTNode] = {}
        skip: set[int] = set()
        for call, arg in _wired_args(located, function, name):
            edits[call] = _without_arg(call, arg)
            skip.add(id(_wired_name(arg.value, name)))
        for assignments, wired in _aliases(located.module, name):  # `init_fn = name`
            for call, arg in wired:
                edits[call] = _without_arg(call, arg)
            for statement in assignments:
                edits[statement] = _REMOVED
                skip.update(id(n) for n in walk(statement))
        for node in walk(located.module):  # keywords, attribute names, imports: not uses
            if isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))
            elif isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            elif isinstance(node, (cst.Import, cst.ImportFrom)):
                skip.update(id(n) for n in walk(node))
        if any(isinstance(n, cst.Name) and n.value == name and id(n) not in skip
               and (function is None or n is not function.name) for n in walk(located.module)):
            raise Unfixable(f"{name} only creates the handle, but {os.path.basename(path)} uses "
                            "it besides a DataLoader's worker_init_fn: remove it by hand")
        return edits

    def _imported_as(self, path: str, qualname: str) -> list[str]:
        """The names the file at `path` imports the function as; Unfixable when it reads it
        through its module (`train.worker_init_fn`)."""
        module, _, short = qualname.rpartition(".")
        found = []
        for local, qualified in self.imports.get(path, {}).items():
            if qualified == qualname:
                found.append(local)
            elif qualified == module and re.search(
                    rf"\b{re.escape(local)}\s*\.\s*{re.escape(short)}\b", self.texts[path]):
                raise Unfixable(f"{os.path.basename(path)} reads {local}.{short}: remove it "
                                "there by hand")
        return found

    # --- rendering ----------------------------------------------------------------------------

    def render(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for path, state in self.files.items():
            if not (state.replacements or state.removed):
                continue
            module = state.located.module
            body = [s for s in module.body if id(s) not in state.removed]
            module = module.with_changes(body=body).visit(
                _Replace(state.replacements, state.removed))
            module = self._drop_unused_imports(state, module, statements(body))
            out[path] = module.bytes
        return out

    def _drop_unused_imports(self, state: FileState, module: cst.Module,
                             originals: list[cst.BaseStatement]) -> cst.Module:
        """Module-level imports only the removed code used (`get_worker_info`) go too."""
        if not state.unused:
            return module
        used: set[str] = set()
        for statement in module.body:
            if not _is_import(statement):
                used |= loaded_names(statement)
        unused = state.unused - used
        body: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []  # the blank lines above a deleted import
        for statement, original in zip(module.body, originals):  # one pass kept their order
            new = _without_aliases(statement, unused) if _is_import(statement) else statement
            if new is not statement:
                state.touched |= _lines(state.located, [original])
            if new is None:
                carried = [*carried, *leading_lines(statement)]
                continue
            if carried:
                new = with_leading_lines(new, [*carried, *leading_lines(new)])
                carried = []
            body.append(new)
        return module.with_changes(body=body)


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))


def _without_aliases(statement: cst.BaseStatement, names: set[str]
                     ) -> Optional[cst.BaseStatement]:
    """The import statement without the aliases binding `names` (None: nothing left)."""
    assert isinstance(statement, cst.SimpleStatementLine)
    small = statement.body[0]
    assert isinstance(small, (cst.Import, cst.ImportFrom))
    if isinstance(small.names, cst.ImportStar):
        return statement
    aliases = list(small.names)
    kept = [a for a in aliases if _alias_binding(a) not in names]
    if len(kept) == len(aliases):
        return statement
    if not kept:
        return None
    if kept[-1] is not aliases[-1]:
        kept[-1] = kept[-1].with_changes(comma=aliases[-1].comma)
    return statement.with_changes(body=[small.with_changes(names=kept)])


def _alias_binding(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted(alias.name).split(".")[0]


_REMOVED = cst.Pass()  # a marker: the statement is deleted
_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


class _Replace(ReplaceNodes):
    """The replacements, and the statements in functions deleted (an alias's assignments;
    those at module level are left out of the body before)."""

    def __init__(self, replacements: dict[cst.CSTNode, cst.CSTNode], removed: set[int]) -> None:
        super().__init__(replacements)
        self.removed = removed

    def on_leave(self, original_node: _NodeT, updated_node: _NodeT
                 ) -> Union[_NodeT, cst.RemovalSentinel, cst.FlattenSentinel[_NodeT]]:
        if id(original_node) in self.removed:
            return cst.RemoveFromParent()
        return super().on_leave(original_node, updated_node)


def _aliases(module: cst.Module, name: str
             ) -> list[tuple[list[cst.BaseStatement], list[tuple[cst.Call, cst.Arg]]]]:
    """A function's local that only passes `name` on (`init_fn = name`, `init_fn = None` in
    the other branch, `worker_init_fn=init_fn`): its assignments and the arguments passing it,
    both deleted with the function. Only where every binding and read of the local is one of
    these and no block is left empty (an `if` holding only them, its test calling nothing,
    goes with them)."""
    found = []
    for function in walk(module):
        if not isinstance(function, cst.FunctionDef):
            continue
        nodes = list(walk(function.body))
        assigned: dict[str, list[cst.SimpleStatementLine]] = {}
        for node in nodes:
            target = _alias_target(node)
            if target and target != name and isinstance(node, cst.SimpleStatementLine):
                assigned.setdefault(target, []).append(node)
        for alias, assignments in assigned.items():
            if not any(_wired_name(_value(s), name) for s in assignments):
                continue  # never the function: not an alias of it
            if not all(_wired_name(_value(s), name) or is_none(_value(s))
                       for s in assignments):
                continue
            wired = [(call, arg) for call in nodes if isinstance(call, cst.Call)
                     for arg in call.args
                     if arg.keyword is not None and arg.keyword.value == "worker_init_fn"
                     and isinstance(arg.value, cst.Name) and arg.value.value == alias]
            known = {id(_target(s)) for s in assignments}
            known |= {id(arg.value) for _, arg in wired}
            known |= {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword}
            if not wired or any(isinstance(n, cst.Name) and n.value == alias
                                and id(n) not in known for n in nodes):
                continue
            dropped = {id(s) for s in assignments}
            removed: list[cst.BaseStatement] = list(assignments)
            gone: set[int] = set()  # the blocks of the `if`s deleted
            for n in nodes:  # `if workers > 0: init_fn = name` goes whole (a test calling nothing)
                if isinstance(n, cst.If) and n.orelse is None and all(
                        id(s) in dropped for s in n.body.body) and not any(
                        isinstance(t, (cst.Call, cst.Await, cst.NamedExpr, cst.Yield))
                        for t in walk(n.test)):
                    inner = {id(s) for s in n.body.body}
                    removed = [s for s in removed if id(s) not in inner] + [n]
                    dropped.add(id(n))
                    gone.add(id(n.body))
            if any(isinstance(n, cst.IndentedBlock) and id(n) not in gone
                   and all(id(s) in dropped for s in n.body) for n in nodes):
                continue  # a block holding only them would be left empty
            found.append((removed, wired))
    return found


def _alias_target(node: cst.CSTNode) -> str:
    """`x` of a statement line `x = <value>` alone on its line, else ""."""
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        small = node.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(
                small.targets[0].target, cst.Name):
            return small.targets[0].target.value
    return ""


def _target(statement: cst.SimpleStatementLine) -> cst.BaseAssignTargetExpression:
    small = statement.body[0]
    assert isinstance(small, cst.Assign)
    return small.targets[0].target


def _value(statement: cst.SimpleStatementLine) -> cst.BaseExpression:
    small = statement.body[0]
    assert isinstance(small, cst.Assign)
    return small.value


class _WorkerFn:
    """What a worker_init_fn's statements do with `get_worker_info()` and its `.dataset`."""

    def __init__(self, function: WorkerFn) -> None:
        self.function = function
        params = function.params
        self.params = {p.name.value for p in [*params.posonly_params, *params.params,
                                              *params.kwonly_params]}
        self.infos: set[str] = set()  # locals bound to get_worker_info()
        self.datasets: set[str] = set()  # locals bound to get_worker_info().dataset
        self.locals: set[str] = set()  # other locals
        # names bound by the function's own (absolute) imports → the import statement
        self.imported: dict[str, cst.BaseStatement] = {}

    @property
    def worker_only(self) -> set[str]:
        """Names whose value only the worker has (worker_id, the worker info)."""
        return self.params | self.infos

    def is_info(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.infos
        return isinstance(node, cst.Call) and not node.args \
            and _last(node.func) == "get_worker_info"

    def is_dataset(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.datasets
        return isinstance(node, cst.Attribute) and node.attr.value == "dataset" \
            and self.is_info(node.value)

    def split(self, attrs: list[str]
              ) -> tuple[list[cst.BaseStatement], list[str], list[cst.BaseStatement]]:
        """(creating and configuring statements, openers called, statements kept)."""
        function = self.function
        if isinstance(function, cst.Lambda):
            call = function.body
            if isinstance(call, cst.Call) and not call.args and isinstance(
                    call.func, cst.Attribute) and self.is_dataset(call.func.value):
                return [], [call.func.attr.value], []
            raise Unfixable("the lambda worker_init_fn does more than call an opener on the "
                            "dataset: fix it by hand")
        moved: list[cst.BaseStatement] = []
        openers: list[str] = []
        kept: list[cst.BaseStatement] = []
        bindings: list[tuple[cst.BaseStatement, str]] = []
        created: set[str] = set()
        body = _body(function)
        for index, statement in enumerate(body):
            small = single(statement)
            target, value = _assignment(small)
            if index == 0 and _is_docstring(small):
                continue
            if isinstance(target, cst.Name) and value is not None and self.is_info(value):
                self.infos.add(target.value)
                bindings.append((statement, target.value))
                continue
            if isinstance(target, cst.Name) and value is not None and self.is_dataset(value):
                self.datasets.add(target.value)
                bindings.append((statement, target.value))
                continue
            if is_absolute_import(statement):  # `import requests` inside the function
                for name in sorted(bound_names([statement])):
                    self.imported[name] = statement
                    bindings.append((statement, name))
                continue
            if self._is_guard(statement):  # `if info is None: return`: true in a worker
                bindings.append((statement, ""))
                continue
            if isinstance(target, cst.Attribute) and self.is_dataset(target.value):
                if target.attr.value not in attrs:
                    raise Unfixable(f"the worker_init_fn also sets {target.attr.value} on the "
                                    "dataset: fix it by hand")
                moved.append(statement)
                created.add(target.attr.value)
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute) \
                    and self.is_dataset(small.value.func.value):
                if small.value.args:
                    raise Unfixable("the worker_init_fn passes arguments to the dataset's "
                                    f"{small.value.func.attr.value}(): fix it by hand")
                openers.append(small.value.func.attr.value)
                continue
            root = _dataset_attr_root(self, small)
            if root is not None and root in created:
                moved.append(statement)  # configures the handle (headers, mounts)
                continue
            looped = self._openers_of_parts(statement)
            if looped:  # `for part in getattr(dataset, "datasets", [dataset]): part.open()`
                openers.extend(looped)
                continue
            if self._mentions_dataset(statement):
                raise Unfixable("the worker_init_fn uses get_worker_info().dataset in a way the "
                                "fix cannot follow: fix it by hand")
            self.locals |= bound_names([statement])
            kept.append(statement)
        if not moved and not openers:
            raise Unfixable("cannot find where the worker_init_fn creates the handle")
        return moved, openers, _with_bindings(body, kept, bindings)

    def imports_for(self, lines: list[cst.BaseStatement], bound: set[str]
                    ) -> list[cst.BaseStatement]:
        """The function's own import statements `lines` read a name of, that the dataset's
        module does not bind already (the creation then runs where that import is)."""
        needed = set().union(*(loaded_names(s) for s in lines)) if lines else set()
        out: list[cst.BaseStatement] = []
        for name in sorted(needed):
            statement = self.imported.get(name)
            if statement is not None and name not in bound and all(
                    statement is not o for o in out):
                out.append(statement.with_changes(leading_lines=[]))
        return out

    def _is_guard(self, statement: cst.BaseStatement) -> bool:
        """`if <worker info or dataset> is None: return` (or `pass`)."""
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return False
        inner = statement.body.body
        plain = [single(s) if isinstance(s, cst.SimpleStatementLine) else s for s in inner] \
            if isinstance(statement.body, cst.IndentedBlock) else list(inner)
        if not all(isinstance(s, cst.Pass) or (isinstance(s, cst.Return) and s.value is None)
                   for s in plain):
            return False
        return loaded_names(statement.test) <= self.infos | self.datasets | {"None"}

    def _openers_of_parts(self, statement: cst.BaseStatement) -> list[str]:
        """The openers a loop over the worker's dataset or the datasets it joins calls on each
        (`for part in getattr(dataset, "datasets", [dataset]):`, `dataset.datasets`,
        `[dataset]`), when calling them, under `if isinstance(part, ...)` or `if
        hasattr(part, ...)` at most, is all it does; else []. The worker init the fix writes
        walks every wrapper and opens each dataset's handles: what the loop did, and more."""
        if not isinstance(statement, cst.For) or statement.asynchronous is not None \
                or statement.orelse is not None or not isinstance(statement.target, cst.Name) \
                or not self._parts_of_dataset(statement.iter):
            return []
        part = statement.target.value
        found: list[str] = []

        def only_openers(block: cst.BaseSuite) -> bool:
            if not isinstance(block, cst.IndentedBlock):
                return False
            for inner in block.body:
                if isinstance(inner, cst.If):
                    if inner.orelse is not None or not _tests_part(inner.test, part) \
                            or not only_openers(inner.body):
                        return False
                    continue
                small = single(inner)
                if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                        and not small.value.args
                        and isinstance(small.value.func, cst.Attribute)
                        and isinstance(small.value.func.value, cst.Name)
                        and small.value.func.value.value == part):
                    return False
                found.append(small.value.func.attr.value)
            return True

        return found if only_openers(statement.body) else []

    def _parts_of_dataset(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute):
            return node.attr.value == "datasets" and self.is_dataset(node.value)
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(isinstance(e, cst.Element) and self.is_dataset(e.value)
                       for e in node.elements)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) \
                and node.func.value == "getattr" and len(node.args) == 3:
            first, name, default = (a.value for a in node.args)
            return isinstance(name, cst.SimpleString) and name.evaluated_value == "datasets" \
                and self.is_dataset(first) \
                and (self.is_dataset(default) or self._parts_of_dataset(default))
        return False

    def _mentions_dataset(self, node: cst.CSTNode) -> bool:
        return any((isinstance(n, cst.Name) and n.value in self.datasets)
                   or (isinstance(n, cst.Attribute) and n.attr.value in ("dataset", "datasets"))
                   for n in walk(node))

    def as_dataset(self, statement: cst.BaseStatement, this: str) -> cst.BaseStatement:
        """The statement with the worker's dataset expression replaced by `this` (self)."""
        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        for node in walk(statement):
            if isinstance(node, (cst.Name, cst.Attribute)) and self.is_dataset(node):
                replacements[node] = cst.Name(this)
        new = statement.visit(ReplaceNodes(replacements))
        assert isinstance(new, cst.SimpleStatementLine)
        return new.with_changes(leading_lines=[])


def _tests_part(test: cst.BaseExpression, part: str) -> bool:
    """`isinstance(part, ...)` or `hasattr(part, ...)`."""
    return isinstance(test, cst.Call) and isinstance(test.func, cst.Name) \
        and test.func.value in ("isinstance", "hasattr") and len(test.args) == 2 \
        and isinstance(test.args[0].value, cst.Name) and test.args[0].value.value == part


def _with_bindings(body: list[cst.BaseStatement], kept: list[cst.BaseStatement],
                   bindings: list[tuple[cst.BaseStatement, str]]) -> list[cst.BaseStatement]:
    """The statements the worker_init_fn keeps, in their order: the kept ones (none: it only
    made the handle), the bindings they read (a binding read only by another kept binding
    too), and its docstring."""
    if not kept:
        return []
    keep = {id(s) for s in kept}
    needed: set[str] = set()
    for statement in kept:
        needed |= loaded_names(statement)
    for statement, name in reversed(bindings):
        if name in needed:
            keep.add(id(statement))
            needed |= loaded_names(statement)
    return [s for i, s in enumerate(body) if id(s) in keep or (i == 0 and _is_docstring(
        single(s)))]


def _is_docstring(small: Optional[cst.BaseSmallStatement]) -> bool:
    return isinstance(small, cst.Expr) and isinstance(
        small.value, (cst.SimpleString, cst.ConcatenatedString))


def _init_edits(init: cst.FunctionDef, attrs: list[str], new_lines: list[cst.BaseStatement],
                this: str, openers: list[str], cls: cst.ClassDef
                ) -> dict[cst.CSTNode, cst.CSTNode]:
    """`__init__` with the creation in place of `self.<attr> = None` (or last). An annotation
    there (`self.session: Optional[Session] = None`) stays on the creation's assignment."""
    body = init.body
    if not isinstance(body, cst.IndentedBlock):
        raise Unfixable("__init__ is written on one line: fix it by hand")
    items = list(body.body)
    opened = set(attrs) | _set_by_openers(cls, openers, this)
    nones = [i for i, s in enumerate(items) if _sets_none(s, this) in opened]
    new_lines = _annotated_as([items[i] for i in nones], new_lines, this)
    if items and isinstance(single(items[-1]), cst.Return):
        raise Unfixable("__init__ ends in a return statement: fix it by hand")
    reads = _self_reads(new_lines, this) | _opener_reads(cls, openers)
    at = nones[0] if nones else len(items)
    later = {a for s in items[at:] for a in _self_targets(s, this)}
    if nones and (reads & later - opened):
        at = len(items)  # it needs attributes set further down
    new_items: list[cst.BaseStatement] = []
    for index, item in enumerate(items):
        if index == at:
            new_items += [new_lines[0].with_changes(leading_lines=leading_lines(item)),
                          *new_lines[1:]]
        if index not in nones:
            new_items.append(item)
    if at == len(items):
        new_items += new_lines
    return {init: init.with_changes(body=body.with_changes(body=new_items))}


def _annotated_as(removed: list[cst.BaseStatement], new_lines: list[cst.BaseStatement],
                  this: str) -> list[cst.BaseStatement]:
    """`new_lines` with the first plain `this.<attr> = value` of each attribute that a
    `removed` line annotated (`this.<attr>: T = None`) written `this.<attr>: T = value`."""
    annotations: dict[str, cst.Annotation] = {}
    for statement in removed:
        small = single(statement)
        if isinstance(small, cst.AnnAssign):
            annotations.setdefault(_sets_none(statement, this), small.annotation)
    out: list[cst.BaseStatement] = []
    for statement in new_lines:
        small = single(statement)
        target, value = _assignment(small)
        attr = target.attr.value if isinstance(target, cst.Attribute) and isinstance(
            target.value, cst.Name) and target.value.value == this else ""
        if isinstance(small, cst.Assign) and value is not None and attr in annotations \
                and isinstance(statement, cst.SimpleStatementLine):
            statement = statement.with_changes(body=[cst.AnnAssign(
                target=small.targets[0].target, annotation=annotations.pop(attr),
                value=value)])
        out.append(statement)
    return out


def _made_in(init: cst.FunctionDef, this: str) -> set[str]:
    """The attributes `__init__` sets at its own level to something other than None."""
    return {a for s in _body(init) if not _sets_none(s, this) for a in _self_targets(s, this)
            if isinstance(s, cst.SimpleStatementLine)}


def _set_by_openers(cls: cst.ClassDef, openers: list[str], this: str) -> set[str]:
    found: set[str] = set()
    for statement in _body(cls):
        if isinstance(statement, cst.FunctionDef) and statement.name.value in openers:
            params = function_params(statement)
            own = params[0] if params else this
            found |= {a for s in walk(statement) if isinstance(s, cst.SimpleStatementLine)
                      for a in _self_targets(s, own)}
    return found


def _opener_reads(cls: cst.ClassDef, openers: list[str]) -> set[str]:
    found: set[str] = set()
    for statement in _body(cls):
        if isinstance(statement, cst.FunctionDef) and statement.name.value in openers:
            params = function_params(statement)
            if params:
                found |= _self_reads([statement], params[0])
    return found


def _self_reads(nodes: list[cst.BaseStatement], this: str) -> set[str]:
    return {n.attr.value for s in nodes for n in walk(s) if isinstance(n, cst.Attribute)
            and isinstance(n.value, cst.Name) and n.value.value == this}


def _kept_params(init: cst.FunctionDef, this: str) -> list[tuple[str, str]]:
    """(attr, param) for each `self.<attr> = <param>` at `__init__`'s own level."""
    params = set(function_params(init)[1:])
    found = []
    for statement in _body(init):
        small = single(statement)
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) \
                and small.value.value in params:
            found += [(attr, small.value.value) for attr in _self_targets(small, this)]
    return found


def _self_targets(statement: cst.CSTNode, this: str) -> set[str]:
    found: set[str] = set()
    for node in walk(statement):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.AssignTarget):
            targets = [node.target]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
        for target in targets:
            for sub in walk(target):
                if isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name) \
                        and sub.value.value == this:
                    found.add(sub.attr.value)
    return found


def _sets_none(statement: cst.BaseStatement, this: str) -> str:
    target, value = _assignment(single(statement))
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
            and target.value.value == this and is_none(value):
        return target.attr.value
    return ""


def _assignment(small: Optional[cst.BaseSmallStatement]
                ) -> tuple[Optional[cst.BaseExpression], Optional[cst.BaseExpression]]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return small.targets[0].target, small.value
    if isinstance(small, cst.AnnAssign):
        return small.target, small.value
    return None, None


def _dataset_attr_root(reading: _WorkerFn, small: Optional[cst.BaseSmallStatement]
                       ) -> Optional[str]:
    """`dataset.session.headers.update(...)` / `dataset.session.verify = False` → "session"."""
    node: Optional[cst.BaseExpression] = None
    if isinstance(small, cst.Expr):
        node = small.value
    else:
        node, _ = _assignment(small)
        if node is None and isinstance(small, cst.AugAssign):
            node = small.target
    while node is not None:
        if isinstance(node, cst.Attribute) and reading.is_dataset(node.value):
            return node.attr.value
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return None
    return None


def _worker_function(located: Located, name: str, line: int, col: int) -> WorkerFn:
    if name:
        short = _short(name)
        if col != 0:  # a staticmethod (`Frames.worker_init_fn`), a bound method (`rows.open`)
            raise Unfixable(f"the {_named(short)} is not a module-level function")
        for statement in located.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == short:
                if statement.asynchronous is not None or statement.decorators:
                    raise Unfixable(f"{short} is decorated or async: fix it by hand")
                return statement
        raise Unfixable(f"the {_named(short)} is not a module-level function")
    for node, pos in located.positions.items():
        if isinstance(node, cst.Lambda) and (pos.start.line, pos.start.column) == (line, col):
            return node
    raise Unfixable("cannot find the lambda worker_init_fn")


def _wired_args(located: Located, function: Optional[WorkerFn], name: str
                ) -> list[tuple[cst.Call, cst.Arg]]:
    """The `worker_init_fn=<it>` arguments of calls in this file: the lambda itself, or the
    name `name`."""
    found = []
    for node in walk(located.module):
        if not isinstance(node, cst.Call):
            continue
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value != "worker_init_fn":
                continue
            if arg.value is function or (not isinstance(function, cst.Lambda)
                                         and _wired_name(arg.value, name) is not None):
                found.append((node, arg))
    return found


def _wired_name(value: cst.BaseExpression, name: str) -> Optional[cst.Name]:
    """The `name` a `worker_init_fn=` value passes: the name itself, or one branch of a
    conditional whose other branch is None (`name if workers > 0 else None`), which without
    the function is no worker_init_fn either way."""
    if isinstance(value, cst.Name):
        return value if value.value == name else None
    if isinstance(value, cst.IfExp):
        branches = (value.body, value.orelse)
        if any(is_none(b) for b in branches):
            return next((b for b in branches if isinstance(b, cst.Name) and b.value == name),
                        None)
    return None


def _without_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """The call without `arg`. An argument ending a line takes its line break along: the one
    before it gets its comma (`a=1, worker_init_fn=f,` + newline + `b=2` → `a=1,` + newline +
    `b=2`), so the next line is not joined to it."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    if index > 0 and (index == len(args) - 1 or _ends_line(arg) and not _ends_line(
            args[index - 1])):
        args[index - 1] = args[index - 1].with_changes(comma=arg.comma)
    del args[index]
    return call.with_changes(args=args)


def _ends_line(arg: cst.Arg) -> bool:
    comma = arg.comma
    return isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                       cst.ParenthesizedWhitespace)


def _lines(located: Located, nodes: list[cst.CSTNode]) -> set[int]:
    lines: set[int] = set()
    for node in nodes:
        start, end = located.lines_of(node)
        lines.update(range(start, end + 1))
    return lines


def _body(node: Union[cst.ClassDef, cst.FunctionDef]) -> list[cst.BaseStatement]:
    return statements(node.body.body) if isinstance(node.body, cst.IndentedBlock) else []


def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code + "\n")


def _last(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _named(short: str) -> str:
    """"worker_init_fn seed_workers"; a function named worker_init_fn is not named twice."""
    return "worker_init_fn" if short == "worker_init_fn" else f"worker_init_fn {short}"
