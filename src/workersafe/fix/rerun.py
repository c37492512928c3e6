"""Whether code may run again in every worker and on unpickling: the rule for what the opener
runs. Allowed: binding locals and the object's own attributes, creating, deriving and
configuring handles. Refused, naming the statement: rebinding a global, changing state that is
not the object's own (an argument, a global), writing a file, running a process, consuming an
iterator, calling this project's code or `self.<method>()` (unless `vouch` accepts the call,
given first any call that makes no handle: the callee was checked by the same rule, see
fix/factories.py)."""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from .cstutil import BUILTIN_NAMES, bound_names, dotted, self_attr, walk
from .handles import HandleNames
from .plan import Unfixable

# Methods that change the object they are called on (an argument or a global must not be).
MUTATING = frozenset({
    "append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear", "update",
    "setdefault", "add", "discard", "popitem", "write", "writelines", "write_text",
    "write_bytes", "mkdir", "unlink", "rename", "touch",
})
# Calls that change the file system, or consume what they are given.
_EFFECTS = frozenset({
    "os.remove", "os.unlink", "os.makedirs", "os.mkdir", "os.rename", "os.replace",
    "os.rmdir", "os.system", "os.chdir", "os.putenv", "shutil.rmtree", "shutil.copy",
    "shutil.copyfile", "shutil.copytree", "shutil.move", "subprocess.run", "subprocess.call",
    "subprocess.check_call", "subprocess.check_output", "subprocess.Popen", "next",
    "print", "input",
})

# (the call, where it stands) → True when the callee is known to be safe to re-run
Vouch = Callable[[cst.Call, str], bool]


class RerunCheck:
    """The rule for the statements of one function (`own`: the names of its locals, whose
    objects it may change; everything else but `self` belongs to someone else)."""

    def __init__(self, module: cst.Module, names: HandleNames, own: set[str],
                 vouch: Optional[Vouch] = None) -> None:
        self.names = names
        self.own = own
        self.vouch = vouch
        self.vouched: set[int] = set()  # the calls `vouch` accepted (ids)
        module_body = list(module.body)
        self.user_code = {s.name.value for s in module_body
                          if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
        self.module_names = bound_names(module_body)

    def statement(self, statement: cst.CSTNode, where: str, handle_locals: set[str]) -> None:
        for node in walk(statement):
            if isinstance(node, (cst.Global, cst.Nonlocal)):
                raise Unfixable(f"{where} rebinds a global: the opener runs again in every "
                                "worker, fix by hand")
            if isinstance(node, cst.Call):
                self.call(node, where, handle_locals)
            if isinstance(node, (cst.AssignTarget, cst.AugAssign)) and not isinstance(
                    node.target, cst.Name) and self_attr(node.target) is None:
                root = root_name(node.target)
                if root is not None and not self._own(root):
                    raise Unfixable(f"{where} changes {root}, which is not the dataset's own "
                                    "state: the opener runs again in every worker, fix by hand")

    def _own(self, name: str) -> bool:
        """`self`, or a local of the function (not a parameter: the caller's object)."""
        return name == "self" or name in self.own

    def _project_call(self, call: cst.Call, handle_locals: set[str]) -> bool:
        """A call of this module's own functions or classes (or of what it imports from the
        project), not of a handle or a library."""
        func = call.func
        return dotted(func) in self.user_code or (
            isinstance(func, cst.Name) and func.value in self.module_names
            - self.names.imports.keys() - BUILTIN_NAMES and func.value not in handle_locals)

    def call(self, call: cst.Call, where: str, handle_locals: set[str]) -> None:
        func = call.func
        name = dotted(func)
        qualified = self.names.qualified(func) if name else ""
        if self.names.creation(call) is not None:
            return
        if self.vouch is not None and self.vouch(call, where):
            self.vouched.add(id(call))
            return
        project = self._project_call(call, handle_locals)
        method = isinstance(func, cst.Attribute) and self_attr(func) is not None
        if project:
            raise Unfixable(f"{where} calls {name}(), code of this project: it would run "
                            "again in every worker, fix by hand")
        if method:
            assert isinstance(func, cst.Attribute)
            raise Unfixable(f"{where} calls self.{func.attr.value}(): it would run again in "
                            "every worker, fix by hand")
        if qualified in _EFFECTS or name in _EFFECTS:
            raise Unfixable(f"{where} calls {name}(), which has effects beyond opening the "
                            "handle: the opener runs again in every worker, fix by hand")
        if name == "open" and _writes(call):
            raise Unfixable(f"{where} opens a file for writing: the opener runs again in every "
                            "worker, fix by hand")
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING:
            root = root_name(func.value)
            if root is not None and not self._own(root) and not (
                    root in self.names.imports and root not in self.module_names):
                raise Unfixable(f"{where} changes {root} ({name}()), which is not the dataset's "
                                "own state: the opener runs again in every worker, fix by hand")


def _writes(call: cst.Call) -> bool:
    modes = [a.value for a in call.args[1:2] if a.keyword is None] + [
        a.value for a in call.args if a.keyword is not None and a.keyword.value == "mode"]
    return any(not isinstance(m, cst.SimpleString) or any(c in str(m.evaluated_value)
                                                          for c in "wax+") for m in modes)


def root_name(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None
