"""Module-level handles (WS102/WS112): `SESSION = requests.Session()` becomes a per-process
accessor `get_session()`, and every read of `SESSION` (in this module, and in modules doing
`from this_module import SESSION`) becomes a call to it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from ..registry import DEFAULT_REGISTRY, Registry
from .annotate import Typed
from .cstutil import (
    ReplaceNames, bound_names, dotted, leading_lines, loaded_names, single, statements,
    realigned, transform, walk, with_leading_lines,
)
from .handles import HandleNames
from .plan import Unfixable
from .wrap import wrapped
from .templates import BLANK, fork_cache_clear, module_accessor, module_drop


@dataclass
class ModulePlan:
    name: str
    handle: str
    statements: list[cst.BaseStatement]
    accessor: str
    private: str
    pid_name: str
    importers: dict[str, tuple[cst.SimpleStatementLine, str]] = field(default_factory=dict)
    factory: bool = False  # a cached factory function: callers already call it
    # module names the accessor takes in as its locals: `client = MongoClient()` before
    # `db = client.capstone` (read by nothing else, here or in other modules)
    absorbed: tuple[str, ...] = ()
    # a cached factory taking arguments (a handle per argument value): it stays as written,
    # and each forked process empties its cache (`os.register_at_fork`, right after it)
    at_fork: bool = False


_CACHES = ("functools.cache", "functools.lru_cache", "cache", "lru_cache")


def plan_module_handle(module: cst.Module, name: str, handle: str,
                       registry: Registry = DEFAULT_REGISTRY) -> ModulePlan:
    """`registry`: the run's (a cached factory taking arguments asks it whether a forked
    child may drop the handles it inherited)."""
    body = statements(module.body)
    index = next((i for i, s in enumerate(body) if _assigns(s, name)), None)
    if index is None:
        factory = next((s for s in body if isinstance(s, cst.FunctionDef)
                        and s.name.value == name), None)
        if factory is not None:
            return _plan_factory(body, factory, handle, HandleNames(module, registry, [handle]))
        raise Unfixable(f"{name} is not created by a plain module-level `{name} = ...` "
                        "(inside a block)")
    created = single(body[index])
    assert isinstance(created, cst.Assign)  # what _assigns found
    value = created.value
    root = _root_name(value.func if isinstance(value, cst.Call) else value)
    assigned = {t.value for s in body for t in _assigned_names(s)}
    moved: list[cst.BaseStatement] = []
    if root is not None and root in assigned and root != name:
        moved = _source_statements(body, index, root, name)
    moved.append(body[index])
    for statement in body[index + 1:]:
        if not _configures_name(statement, name):
            break
        moved.append(statement)
    base = name.lstrip("_").lower() or "handle"
    plan = ModulePlan(name, handle, moved, f"get_{base}", f"_{base}", f"_{base}_pid",
                      absorbed=tuple(t.value for s in moved for t in _assigned_names(s)
                                     if t.value != name))
    taken = bound_names(body)
    for new in (plan.accessor, plan.private, plan.pid_name):
        if new in taken:
            raise Unfixable(f"the module already defines {new!r}")
    for statement in body:
        if statement in moved:
            continue
        for node in walk(statement):
            if isinstance(node, (cst.Global, cst.Nonlocal)) and any(
                    n.name.value == name for n in node.names):
                raise Unfixable(f"{name} is rebound through `global` elsewhere")
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name) \
                    and node.target.value == name:
                raise Unfixable(f"{name} is assigned again elsewhere in the module")
    return plan


def _source_statements(body: list[cst.BaseStatement], index: int, root: str, name: str
                       ) -> list[cst.BaseStatement]:
    """`client = MongoClient()` (and its configuration) right before `db = client.capstone`:
    the accessor of `db` takes them in, when nothing else in the module reads `client`."""
    start = next((i for i in range(index - 1, -1, -1) if _assigns(body[i], root)), None)
    if start is None or not all(_configures_name(s, root) for s in body[start + 1:index]):
        raise Unfixable(f"{name} is derived from {root}, another module-level handle made "
                        "elsewhere than right above it: turn that one into an accessor by hand")
    source = single(body[start])
    assert isinstance(source, cst.Assign)
    if not isinstance(source.value, cst.Call):
        raise Unfixable(f"{name} is derived from {root}, which is not created by a call")
    taken = set(range(start, index + 1))
    for i, statement in enumerate(body):
        if i in taken or _configures_name(statement, name) and i > index:
            continue
        if root in loaded_names(statement) or root in bound_names([statement]):
            raise Unfixable(f"{name} is derived from {root}, which the module also uses "
                            f"elsewhere (in `{_first_line(statement)}`): turn {root} "
                            "into an accessor by hand")
    return body[start:index]


def _first_line(statement: cst.BaseStatement) -> str:
    return cst.Module([]).code_for_node(statement).strip().splitlines()[0][:60]


def _plan_factory(body: list[cst.BaseStatement], factory: cst.FunctionDef, handle: str,
                  names: HandleNames) -> ModulePlan:
    """`@functools.cache def s3(): return boto3.client("s3")`: the cache would hand every
    forked worker the parent's client. The function becomes a per-process accessor of the
    same name (callers do not change). One taking arguments (`open_archive(path)`, a handle
    per value) keeps its cache, which each forked process empties (`_plan_at_fork`)."""
    name = factory.name.value
    decorators = [cst.Module([]).code_for_node(d.decorator) for d in factory.decorators]
    if len(decorators) != 1 or decorators[0].split("(", 1)[0] not in _CACHES:
        raise Unfixable(f"{name}() is not a plain functools.cache/lru_cache factory: fix by hand")
    params = factory.params
    takes_arguments = bool(params.params or params.kwonly_params or params.posonly_params
                           or isinstance(params.star_arg, cst.Param)
                           or params.star_kwarg is not None)
    statements = list(factory.body.body) if isinstance(factory.body, cst.IndentedBlock) else []
    last = single(statements[-1]) if statements else None
    if not isinstance(last, cst.Return) or last.value is None or any(
            isinstance(n, (cst.Return, cst.Global, cst.Nonlocal, cst.Yield))
            for s in statements[:-1] for n in walk(s)):
        raise Unfixable(f"{name}() does more than build and return the handle: fix by hand")
    if takes_arguments:
        return _plan_at_fork(body, factory, handle, names)
    base = name.lstrip("_").lower()
    plan = ModulePlan(name, handle, [factory], name, f"_{base}", f"_{base}_pid", factory=True)
    taken = bound_names(body)
    for new in (plan.private, plan.pid_name):
        if new in taken:
            raise Unfixable(f"the module already defines {new!r}")
    return plan


def _plan_at_fork(body: list[cst.BaseStatement], factory: cst.FunctionDef, handle: str,
                  names: HandleNames) -> ModulePlan:
    """`@functools.lru_cache def open_archive(path): return zipfile.ZipFile(path)`: the
    cache, a handle per argument value, stays; each forked process empties it as it starts
    (`os.register_at_fork(after_in_child=open_archive.cache_clear)`), so a worker opens its
    own on first use, as a spawned one (which re-imports the module) always did. What the
    parent cached is dropped in the child, never closed: refused for the handles whose
    finalizer would speak for the parent (registry `dropped_in_child`), and for a file opened
    for writing (its finalizer writes)."""
    name = factory.name.value
    htype = names.registry.lookup(handle)
    if htype is not None and not htype.dropped_in_child:
        raise Unfixable(f"{name}() caches a {handle} per argument value, whose finalizer "
                        "acts for the parent too if a forked worker drops the parent's (a "
                        "database session ended, a gRPC channel torn down): fix by hand, a "
                        "cache keyed by os.getpid() keeping the parent's")
    for node in walk(factory):
        made = names.creation(node) if isinstance(node, cst.Call) else None
        if made is None or not made.mode_position:
            continue
        assert isinstance(node, cst.Call)
        mode = writing_mode(node, made.mode_position)
        if mode is not None:
            raise Unfixable(f"{name}() opens {made.name} with mode {mode!r}: a forked worker "
                            "dropping the parent's would write to the file as it closes, fix "
                            "by hand")
    if any(s is not factory and name in bound_names([s]) for s in body):
        raise Unfixable(f"the module binds {name} again: the hook would empty the cache of "
                        "another function, fix by hand")
    return ModulePlan(name, handle, [factory], name, "", "", factory=True, at_fork=True)


def writing_mode(node: cst.Call, position: int) -> Optional[str]:
    """The mode a creating call passes as a string constant when it is not for reading only
    (`"w"`, `"a"`, `"x"`, `"r+"`), else None (read only, none given, or not a constant)."""
    mode = constant_mode(node, position) if position else None
    return mode if mode is not None and (not mode.startswith("r") or "+" in mode) else None


def in_memory_target(node: cst.Call, targets: Sequence[str], keyword: str) -> Optional[str]:
    """The string constant a creating call names its store by (first, or by `keyword`) when
    that store lives only in the handle (one of `targets`, or a URI with "mode=memory")."""
    given = next((a.value for a in node.args if a.keyword is not None
                  and a.keyword.value == keyword), None) if keyword else None
    if given is None and node.args and node.args[0].keyword is None and not node.args[0].star:
        given = node.args[0].value
    value = given.evaluated_value if isinstance(given, cst.SimpleString) else None
    if not isinstance(value, str):
        return None
    return value if value in targets or "mode=memory" in value else None


def constant_mode(node: cst.Call, position: int) -> Optional[str]:
    """The mode a creating call passes as a string constant (`mode=` or at `position`)."""
    positional = [a for a in node.args if a.keyword is None and not a.star]
    given = next((a.value for a in node.args
                  if a.keyword is not None and a.keyword.value == "mode"), None)
    if given is None and len(positional) > position:
        given = positional[position].value
    value = given.evaluated_value if isinstance(given, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _factory_body(factory: cst.FunctionDef, private: str) -> list[cst.BaseStatement]:
    """The factory's statements, its `return X` become `<private> = X`."""
    statements = list(factory.body.body) if isinstance(factory.body, cst.IndentedBlock) else []
    if statements and _is_docstring(statements[0]):
        statements = statements[1:]
    last = single(statements[-1])
    assert isinstance(last, cst.Return) and last.value is not None
    store = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(private))],
                                                last.value)])
    return [*statements[:-1], store]


def _is_docstring(statement: cst.BaseStatement) -> bool:
    small = single(statement)
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)


def _assigned_names(statement: cst.BaseStatement) -> list[cst.Name]:
    small = single(statement)
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets if isinstance(t.target, cst.Name)]
    return []


def _assigns(statement: cst.BaseStatement, name: str) -> bool:
    small = single(statement)
    return (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name)


def _configures_name(statement: cst.BaseStatement, name: str) -> bool:
    small = single(statement)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return isinstance(small.value.func, cst.Attribute) and _root_name(small.value.func) == name
    if isinstance(small, (cst.Assign, cst.AugAssign)):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
            else [small.target]
        return all(not isinstance(t, cst.Name) and _root_name(t) == name for t in targets)
    return False


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def rewrite_module(module: cst.Module, plan: ModulePlan, typed: Optional[Typed] = None,
                   drop_first: bool = False) -> cst.Module:
    """Replace the creation with the accessor, and reads of the name with calls to it.
    `typed`: the module is annotated (`fix/annotate.py`): so are the accessor and its
    globals. `drop_first`: the library opens a file once per process (registry
    `drop_before_reopen`): the accessor drops the parent's handle before opening its own (a
    forked worker's lmdb.open would raise "already open", its h5py.File return the parent's)."""
    # (a cached factory kept as it is, its cache emptied at fork, drops nothing itself)
    dropped = [module_drop(plan.private)] if drop_first and not plan.at_fork else []
    call = cst.Call(cst.Name(plan.accessor))
    moved_ids = {id(s) for s in plan.statements}
    new_body: list[cst.BaseStatement] = []
    for statement in module.body:
        if id(statement) not in moved_ids:
            read = statement if plan.factory \
                else transform(statement, _ReadsToCall(plan.name, call))
            if read is not statement and isinstance(read, cst.SimpleStatementLine):
                read = wrapped(read, 0)  # `get_tar()` for `TAR` may pass the line length
            new_body.append(read)
            continue
        if statement is not plan.statements[0]:
            continue
        if plan.at_fork:  # the function stays; its cache is emptied in each forked child
            new_body.extend([statement, with_leading_lines(fork_cache_clear(plan.name),
                                                           [BLANK, BLANK])])
            new_body.append(_SPACER)
            continue
        if plan.factory:
            assert isinstance(statement, cst.FunctionDef)
            members = module_accessor(plan.accessor, plan.private, plan.pid_name, plan.handle,
                                      [*dropped, *_factory_body(statement, plan.private)],
                                      *_accessor_types(plan, statement, typed))
            members[0] = with_leading_lines(members[0], leading_lines(statement))
            new_body.extend(members)
            new_body.append(_SPACER)
            continue
        private = cst.Name(plan.private)
        renamed = [realigned(s, transform(s, ReplaceNames({plan.name: private})))
                   for s in plan.statements]
        renamed[0] = with_leading_lines(renamed[0], [])
        members = module_accessor(plan.accessor, plan.private, plan.pid_name, plan.handle,
                                  [*dropped, *renamed], *_accessor_types(plan, statement, typed))
        members[0] = with_leading_lines(members[0], leading_lines(statement))
        new_body.extend(members)
        new_body.append(_SPACER)
    module = module.with_changes(body=_space_after_functions(new_body))
    return _drop_unused_functools(module) if plan.factory and not plan.at_fork else module


def _accessor_types(plan: ModulePlan, first: cst.BaseStatement, typed: Optional[Typed]
                    ) -> tuple[str, str, str]:
    """The accessor's return type and its two globals' types, in an annotated module (else
    empty): a factory's own return annotation, else the handle's class when the accessor
    returns what its constructor makes, else Any."""
    if typed is None:
        return "", "", ""
    returns = ""
    if isinstance(first, cst.FunctionDef) and first.returns is not None:
        returns = cst.Module([]).code_for_node(first.returns.annotation)
    made = next((single(s) for s in plan.statements if _assigns(s, plan.name)), None)
    last = plan.handle.rsplit(".", 1)[-1]
    constructed = isinstance(made, cst.Assign) and isinstance(made.value, cst.Call) and (
        dotted(made.value.func) in (plan.handle, last)
        or dotted(made.value.func).endswith(f".{last}"))
    returns = typed.handle(plan.handle if constructed or plan.factory else "", returns)
    return returns, typed.optional(returns), typed.optional("int")


def _drop_unused_functools(module: cst.Module) -> cst.Module:
    """After the cache decorator is gone: module-level `import functools` / `from functools
    import cache` that nothing else reads any more are removed (other imports are kept)."""
    imports = [s for s in module.body if is_functools_import(s)]
    if not imports:
        return module
    ids = {id(s) for s in imports}
    read = set().union(*(loaded_names(s) for s in module.body if id(s) not in ids))
    body: list[cst.BaseStatement] = []
    above: Optional[Sequence[cst.EmptyLine]] = None  # the lines above a removed import
    for statement in module.body:
        if id(statement) not in ids:
            if above is not None:  # they stay, with the comments above this statement
                own = [line for line in leading_lines(statement) if line.comment is not None]
                statement = with_leading_lines(statement, [*above, *own])
                above = None
            body.append(statement)
            continue
        assert isinstance(statement, cst.SimpleStatementLine)
        small = statement.body[0]
        names = small.names if isinstance(small, (cst.Import, cst.ImportFrom)) else ()
        assert not isinstance(names, cst.ImportStar)
        kept = [a for a in names if _alias_binding(a) in read]
        if not kept:
            if body or len(module.body) > 1:
                above = leading_lines(statement)
                continue
        elif len(kept) < len(names):
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            statement = statement.with_changes(body=[small.with_changes(names=kept)])
        body.append(statement)
    return module.with_changes(body=body)


def is_functools_import(statement: cst.BaseStatement) -> bool:
    """A line that is only `import functools` or `from functools import ...` (not *)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return all(dotted(a.name) == "functools" for a in small.names)
    return (isinstance(small, cst.ImportFrom) and small.module is not None
            and dotted(small.module) == "functools" and not small.relative
            and not isinstance(small.names, cst.ImportStar))


def _alias_binding(alias: cst.ImportAlias) -> str:
    target = alias.asname.name if alias.asname else alias.name
    return dotted(target)


_SPACER = cst.SimpleStatementLine(body=[cst.Pass()])  # marks "two blank lines follow"


def _space_after_functions(body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Two blank lines after the new accessor (PEP 8), without touching other lines."""
    out: list[cst.BaseStatement] = []
    pending = False
    for statement in body:
        if statement is _SPACER:
            pending = True
            continue
        if pending:
            above = leading_lines(statement)
            blanks = sum(1 for line in above if line.comment is None)
            if blanks < 2:
                extra = [cst.EmptyLine(indent=False)] * (2 - blanks)
                statement = with_leading_lines(statement, [*extra, *above])
            pending = False
        out.append(statement)
    return out


class _ReadsToCall(ReplaceNames):
    """`SESSION` (read) → `get_session()`; skips local rebinding of the same name."""

    def __init__(self, name: str, call: cst.Call) -> None:
        super().__init__({name: call})

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        params = {p.name.value for p in node.params.params}
        return not (set(self.mapping) & params)


def importer_plan(module: cst.Module, source_module: str, name: str,
                  module_of_import: Callable[[cst.ImportFrom], str]
                  ) -> Optional[tuple[cst.SimpleStatementLine, str]]:
    """In another module: the `from <source_module> import NAME [as X]` statement, if any."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            if module_of_import(small) != source_module:
                continue
            for alias in small.names:
                if isinstance(alias.name, cst.Name) and alias.name.value == name:
                    return statement, _bound(alias, name)
    return None


def _bound(alias: cst.ImportAlias, name: str) -> str:
    """The name an import binds: its `as` name, else `name` (what it binds without one)."""
    asname = alias.asname.name if alias.asname else None
    return asname.value if isinstance(asname, cst.Name) else name


def rewrite_importer(module: cst.Module, statement: cst.SimpleStatementLine, name: str,
                     local: str, accessor: str) -> cst.Module:
    """`from m import SESSION` → `from m import get_session`; reads of SESSION → calls."""
    def rename_alias(alias: cst.ImportAlias) -> cst.ImportAlias:
        if isinstance(alias.name, cst.Name) and alias.name.value == name:
            return alias.with_changes(name=cst.Name(accessor), asname=None)
        return alias

    new_statement = statement.with_changes(body=[
        s.with_changes(names=in_order(s.names, [rename_alias(a) for a in s.names]))
        if isinstance(s, cst.ImportFrom) and not isinstance(s.names, cst.ImportStar) else s
        for s in statement.body
    ])
    call = cst.Call(cst.Name(accessor))
    body = [new_statement if s is statement else transform(s, _ReadsToCall(local, call))
            for s in module.body]
    return module.with_changes(body=body)


def _imported_name(alias: cst.ImportAlias) -> str:
    return alias.name.value if isinstance(alias.name, cst.Name) else dotted(alias.name)


# The orders an import's names are kept in: isort's and ruff's default (constants, classes,
# then the rest), and plain alphabetical, each case-sensitive or not.
_NAME_ORDERS: tuple[Callable[[str], tuple[int, str]], ...] = (
    lambda n: (0 if n.isupper() and len(n) > 1 else 1 if n[:1].isupper() else 2, n),
    lambda n: (0 if n.isupper() and len(n) > 1 else 1 if n[:1].isupper() else 2, n.lower()),
    lambda n: (0, n),
    lambda n: (0, n.lower()),
)


def in_order(before: Sequence[cst.ImportAlias], after: list[cst.ImportAlias]
             ) -> list[cst.ImportAlias]:
    """`after` (the names of an import, one renamed) in the order `before` kept: `from tools
    import ARCHIVE, decode` → `from tools import decode, get_archive`, as isort would. Each
    name moves to another's place, that place's comma and spacing kept; not where a comment
    sits among the names (it would move away from its name), nor when `before` was in no
    order of `_NAME_ORDERS`."""
    names = [_imported_name(a) for a in before]
    key = next((k for k in _NAME_ORDERS if names == sorted(names, key=k)), None)
    if key is None or len(after) < 2 or any(
            isinstance(node, cst.Comment) for alias in before for node in walk(alias)):
        return after
    ordered = sorted(after, key=lambda a: key(_imported_name(a)))
    return [slot.with_changes(name=alias.name, asname=alias.asname)
            for slot, alias in zip(after, ordered)]


def module_readers(module: cst.Module, source_module: str, name: str,
                   module_of_import: Callable[[cst.ImportFrom], str]) -> list[str]:
    """In another module: the dotted names through which it reads `source_module`'s NAME as
    an attribute (`import a.clients`: "a.clients.NAME"; `import a.clients as c`: "c.NAME";
    `from a import clients`: "clients.NAME"), by its module-level imports. Unfixable where it
    assigns, deletes or sets up one (`clients.SESSION = ...`, `clients.SESSION.headers[k] =
    v`): an accessor cannot be assigned, and what the parent sets on its own object would
    not reach the workers' (the handle's module sets it up, its accessor then does)."""
    bases = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted(alias.name) == source_module:
                        bases.append(_bound(alias, source_module))
            elif isinstance(small, cst.ImportFrom) \
                    and not isinstance(small.names, cst.ImportStar):
                base = module_of_import(small)
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and \
                            (f"{base}.{alias.name.value}" if base else alias.name.value) \
                            == source_module:
                        bases.append(_bound(alias, alias.name.value))
    readers = [f"{base}.{name}" for base in bases]
    if readers:
        code = set_up(module, lambda node: isinstance(node, cst.Attribute)
                      and dotted(node) in readers)
        if code:
            raise Unfixable(f"it reads {name} through its module and sets it up there "
                            f"(`{code}`): the workers would not get that, rewrite it by hand")
    return readers


def set_up(module: cst.Module, handle: Callable[[cst.CSTNode], bool]) -> str:
    """The code of the first assignment or `del` target in `module` holding an expression
    `handle` accepts (`SESSION.headers["Authorization"] = token`, `clients.SESSION = s`), or
    "": what an importer sets on the parent's handle would not reach a worker's own."""
    for node in walk(module):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
            if any(handle(inner) for inner in walk(node.target)):
                return cst.Module([]).code_for_node(node.target).strip()
    return ""


def rewrite_module_reads(module: cst.Module, readers: list[str], accessor: str) -> cst.Module:
    """`clients.SESSION` (each of `readers`) → `clients.get_session()`."""
    return module.visit(_AttributeReadsToCall(set(readers), accessor))


def only_reads(module: cst.Module, name: str, readers: list[str]) -> bool:
    """Whether every attribute NAME in `module` is one of `readers` (`clients.SESSION`): an
    other (`self.SESSION`, `cfg.SESSION`) may be the same object reached another way."""
    wanted = set(readers)
    return all(dotted(node) in wanted for node in walk(module)
               if isinstance(node, cst.Attribute) and node.attr.value == name)


class _AttributeReadsToCall(cst.CSTTransformer):
    def __init__(self, readers: set[str], accessor: str) -> None:
        self.readers = readers
        self.accessor = accessor

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute
                        ) -> cst.BaseExpression:
        if dotted(original) not in self.readers:
            return updated
        return cst.Call(updated.with_changes(attr=cst.Name(self.accessor)))


def reads_through(module: cst.Module, stem: str, name: str) -> bool:
    """Whether `module`'s code reads NAME as an attribute of a dotted name ending with `stem`
    (`prep.db`, `scripts.prep.db`), however that module was imported (in a function too):
    not a mention in a string or a comment (`"/tmp/report.db"`, `# scripts/prep.py`)."""
    return any(isinstance(node, cst.Attribute) and node.attr.value == name
               and dotted(node.value).rpartition(".")[2] == stem for node in walk(module))


def mentions(text: str, name: str) -> bool:
    """`name` as a whole word in `text` (looked for as a substring first: the fixer asks it
    of every file checked, and most do not hold it)."""
    return name in text and re.search(rf"\b{re.escape(name)}\b", text) is not None
