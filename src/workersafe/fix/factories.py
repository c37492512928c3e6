"""Handles the dataset gets from its project's own code: a method or function that returns one
(`self.env = self._open_env(path)`, `self.client = make_client()`), or a holder object whose
`__init__` keeps one (`self.reader = FeatureReader(path)`). The dataset's statement making the
call is the creating statement: it moves into the opener, so the call runs again in every
worker and on unpickling (the factory's result is re-requested, the holder rebuilt; the
holder's class itself is not rewritten).

That is safe only when the callee does nothing but bind locals and its own attributes and
create, derive or configure handles: its body is checked by the opener's rule (fix/rerun.py),
and so is the project code it calls, a few levels deep; otherwise the fix refuses, naming the
callee's statement."""

from __future__ import annotations

import os
from typing import Callable, Mapping, Optional

import libcst as cst

from ..analysis.walker import CONTAINER_ADDERS
from ..facts import ClassFacts, FileFacts
from ..findings import FixPlan
from ..link import Project
from ..registry import Registry
from .classfix import find_class
from .cstutil import Located, bound_names, dotted, function_params, self_attr, walk
from .handles import HandleNames
from .initplan import find_method
from .plan import Unfixable
from .rerun import RerunCheck

# Calls followed into the project's code, at most (as the analysis follows returns).
MAX_DEPTH = 4
# Decorators that add nothing the opener would run (a dataclass only writes `__init__`).
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "dataclass",
                               "dataclasses.dataclass"})
# What a holder class runs when it is built.
_CONSTRUCTION = ("__new__", "__init__", "__post_init__")


class Factories:
    """Checks the callees of returned/holder plans, in the project being fixed."""

    def __init__(self, project: Project, registry: Registry, modules: Mapping[str, str],
                 located: Callable[[str], Located]) -> None:
        self.project = project
        self.registry = registry
        self.modules = modules  # module name → path, for every checked file
        self.located = located  # path → the parsed file (the rewriter's, shared)
        self.by_path = {f.path: f for f in project.files}
        self._safe: set[tuple[str, str]] = set()  # (path, callee) known safe to re-run
        self._checking: set[tuple[str, str]] = set()

    def spellings(self, plan: FixPlan, located: Located) -> dict[str, str]:
        """How the dataset's code spells the call making the handle (`self._open_env`,
        `make_client`, `FeatureReader`) → the handle's constructor, for `HandleNames`;
        raises Unfixable when the callee is not known to be safe to re-run."""
        if plan.call is None or not plan.via:
            raise Unfixable("cannot find the call that makes the handle")
        call = located.call_at(plan.call.line, plan.call.col)
        spelling = dotted(call.func) if call is not None else ""
        if not spelling:
            raise Unfixable("cannot find the call that makes the handle")
        cls = self.project.classes.get(plan.class_qualname)
        home = self.project.class_file.get(plan.class_qualname)
        if cls is None or home is None:
            raise Unfixable("cannot find the class")
        name = spelling.rsplit(".", 1)[-1]
        if plan.kind == "holder":
            holder = self.project.classes.get(plan.via)
            if holder is None:
                raise Unfixable(f"cannot find the class {name}")
            self._check_class(holder, 0)
        elif plan.via.startswith("self."):
            self._check_method(cls, plan.via[len("self."):], 0)
        else:
            qualname = self.project.resolve(plan.via, home)
            if qualname in self.project.classes:  # a subclass of the handle's constructor
                self._check_class(self.project.classes[qualname], 0)
            else:
                self._check_function(qualname, 0)
        return {spelling: plan.handle}

    # --- the callees ----------------------------------------------------------------------

    def _check_method(self, cls: ClassFacts, name: str, depth: int) -> None:
        for member in self.project.mro(cls):
            if member.method(name) is not None:
                found = self._class_node(member)
                method = find_method(found[1], name) if found else None
                if found is None or method is None:
                    raise Unfixable(f"cannot find {member.name}.{name}, which makes the handle")
                self._check_body(method, f"{member.name}.{name}", found[0], cls, depth)
                return
        raise Unfixable(f"cannot find self.{name}(), which makes the handle")

    def _function(self, qualname: str) -> Optional[tuple[str, cst.FunctionDef]]:
        """The module-level function of a checked file (analysed or not: the engine skips
        files that mention no handle), and its file."""
        module, _, name = qualname.rpartition(".")
        path = self.modules.get(module)
        if path is None:
            return None
        func = next((s for s in self.located(path).module.body
                     if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
        return (path, func) if func is not None else None

    def _check_function(self, qualname: str, depth: int) -> None:
        found = self._function(qualname)
        if found is None:
            raise Unfixable(f"cannot find {qualname.rpartition('.')[2]}(), which makes the "
                            "handle")
        path, func = found
        self._check_body(func, func.name.value, path, None, depth)

    def _check_class(self, cls: ClassFacts, depth: int) -> None:
        """What building the holder runs: the construction methods of its project classes."""
        for member in self.project.mro(cls):
            found = self._class_node(member)
            if found is None:
                raise Unfixable(f"cannot find the class {member.name}")
            path, node = found
            wrapped = [d for d in node.decorators if _decorator_name(d) not in _PLAIN_DECORATORS]
            if wrapped:
                raise Unfixable(f"{member.name} is wrapped by @{_decorator_name(wrapped[0])}, "
                                "whose effects are unknown: fix by hand")
            for name in _CONSTRUCTION:
                method = find_method(node, name)
                if method is not None:
                    self._check_body(method, f"{member.name}.{name}", path, cls, depth)

    def _class_node(self, member: ClassFacts) -> Optional[tuple[str, cst.ClassDef]]:
        """The module-level class statement of a project class, and its file."""
        home = self.project.class_file.get(member.qualname)
        if home is None:
            return None
        node = find_class(self.located(home.path).module, member.name)
        return (home.path, node) if node is not None else None

    def _check_body(self, func: cst.FunctionDef, name: str, path: str,
                    cls: Optional[ClassFacts], depth: int) -> None:
        """Every statement binds, returns, or creates, derives or configures a handle; every
        call is one the opener may make (project code: checked the same way, deeper)."""
        key = (path, name)
        if key in self._safe or key in self._checking:  # checked, or being checked (a cycle)
            return
        if depth >= MAX_DEPTH:
            raise Unfixable(f"{name}() calls code nested too deeply to check that it only "
                            "opens handles: fix by hand")
        wrapped = [d for d in func.decorators if _decorator_name(d) not in _PLAIN_DECORATORS]
        if wrapped:
            raise Unfixable(f"{name}() is wrapped by @{_decorator_name(wrapped[0])}, whose "
                            "effects are unknown: fix by hand")
        self._checking.add(key)
        try:
            self._check_statements(func, name, path, cls, depth)
        finally:
            self._checking.discard(key)
        self._safe.add(key)

    def _check_statements(self, func: cst.FunctionDef, name: str, path: str,
                          cls: Optional[ClassFacts], depth: int) -> None:
        located = self.located(path)
        names = HandleNames(located.module, self.registry)
        # a parameter it returns is the handle it is given: its own to configure (`_tracked`)
        returned = _returned_params(func)
        own = (bound_names(list(func.body.body)) - set(function_params(func)) | returned) \
            if isinstance(func.body, cst.IndentedBlock) else set()
        attrs, handle_locals = _tracked(func, names, returned)
        facts = self.by_path.get(path)

        def vouch(call: cst.Call, where: str) -> bool:
            return self._vouch(call, facts, cls, depth + 1)

        def where(node: cst.CSTNode) -> str:
            line = located.positions[node].start.line if node in located.positions else 0
            return f"{name}() at {os.path.basename(path)}:{line}"

        check = RerunCheck(located.module, names, own, vouch)
        for node in walk(func.body):
            if isinstance(node, (cst.Yield, cst.Await)):
                raise Unfixable(f"{where(node)} makes {name}() a generator or coroutine: fix "
                                "by hand")
            if isinstance(node, cst.BaseSmallStatement):
                check.statement(node, where(node), handle_locals)
                if not _binds_or_opens(node, names, attrs, handle_locals, check):
                    raise Unfixable(f"{where(node)} does other work than opening the handle (the "
                                    "opener runs it again in every worker): fix by hand")
            elif isinstance(node, (cst.If, cst.While, cst.For, cst.With, cst.Try)):
                for part in node.children:
                    if not isinstance(part, (cst.BaseSuite, cst.BaseCompoundStatement)):
                        check.statement(part, where(node), handle_locals)

    def _vouch(self, call: cst.Call, facts: Optional[FileFacts], cls: Optional[ClassFacts],
               depth: int) -> bool:
        """A call of the project's code inside a callee: safe when its body is (raises
        Unfixable from deeper down, naming the statement)."""
        func = call.func
        if isinstance(func, cst.Attribute) and self_attr(func) is not None:
            if cls is None:
                return False
            self._check_method(cls, func.attr.value, depth)
            return True
        name = dotted(func)
        if facts is None or not name:
            return False
        head, _, rest = name.partition(".")
        imported = dict(facts.imports).get(head)  # `from .util import helper`
        if imported:
            name = f"{imported}.{rest}" if rest else imported
        qualname = self.project.resolve(name, facts)
        if self._function(qualname) is not None:
            self._check_function(qualname, depth)
            return True
        if qualname in self.project.classes:
            self._check_class(self.project.classes[qualname], depth)
            return True
        return False


def _decorator_name(decorator: cst.Decorator) -> str:
    """`@name` or `@name(...)` → "name" ("..." when it is an expression)."""
    node = decorator.decorator
    return dotted(node.func if isinstance(node, cst.Call) else node) or "..."


def _tracked(func: cst.FunctionDef, names: HandleNames, returned: set[str]
             ) -> tuple[set[str], set[str]]:
    """The attributes of self and the locals the function keeps handles (or objects derived
    from them) in: configuring those is opening work. `returned`: the parameters it returns,
    the handle it is given back (`def retryable(session): session.mount(...); return
    session`: the function is checked because what it returns is the handle)."""
    attrs: set[str] = set()
    handle_locals = set(returned)
    for _ in range(2):  # twice: loops feed later iterations
        for node in walk(func.body):
            if isinstance(node, cst.Assign) and names.derives(node.value, attrs, handle_locals):
                for target in node.targets:
                    attr = self_attr(target.target)
                    if attr is not None:
                        attrs.add(attr)
                    elif isinstance(target.target, cst.Name):
                        handle_locals.add(target.target.value)
    return attrs, handle_locals


def _returned_params(func: cst.FunctionDef) -> set[str]:
    """The parameters the function returns as they are (`return session`)."""
    params = set(function_params(func))
    return {node.value.value for node in walk(func.body)
            if isinstance(node, cst.Return) and isinstance(node.value, cst.Name)
            and node.value.value in params}


def _binds_or_opens(small: cst.BaseSmallStatement, names: HandleNames, attrs: set[str],
                    handle_locals: set[str], check: RerunCheck) -> bool:
    """A statement the opener may run again: binds (its calls were checked), returns,
    raises, imports, fills its own containers, or calls only to create or configure a
    handle, or project code the check vouched for (`self._configure()`, a base class's
    `__init__` through `super()`)."""
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Raise,
                          cst.Assert, cst.Pass, cst.Import, cst.ImportFrom, cst.Del)):
        return True
    if not isinstance(small, cst.Expr):
        return False
    value = small.value
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return True  # a docstring
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if names.creation(value) is not None or id(value) in check.vouched:
        return True  # project code `check` vouched for
    if isinstance(func, cst.Attribute) and func.attr.value in CONTAINER_ADDERS:
        return True  # `self.envs.append(env)`: the check refused it unless the list is its own
    if isinstance(func, cst.Attribute) and func.attr.value in _CONSTRUCTION \
            and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
        return True  # the base classes' construction: checked with the class
    return names.configures(cst.SimpleStatementLine([small]), attrs, handle_locals)
