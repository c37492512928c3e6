"""An opener method of the user's that the fix emptied folds away.

The most common hand-written remedy keeps the creation in a method of its own (`def
open_env(self): self.env = lmdb.open(...)`) that a worker_init_fn or `__init__` calls. The fix
moves that creation into `open_handles()` (worker-init) or a property (lazy), which leaves the
method forwarding to `self.open_handles()` or running `pass`, and its callers calling it: code a
careful engineer would not leave. When the method takes only `self`, and the program names it
nowhere but its `def` and the class's own `self.<method>()` statements, it goes: worker-init
puts `open_handles()` in its place and the calls call that; lazy drops the calls (the property
opens on first use). Otherwise the method stays as it was rewritten."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from .cstutil import leading_lines, single, statements, with_leading_lines

# (name, uses): whether the program spells `name` exactly `uses` times (a word, in every file
# the run discovered, as the rewrite's input reads): its `def` and the class's calls, nothing else
NamedOnly = Callable[[str, int], bool]


def self_call_statements(body: Sequence[cst.BaseStatement], name: str,
                         ) -> list[cst.SimpleStatementLine]:
    """The `self.<name>()` statements (a line of their own) in the class body's methods."""
    found: list[cst.SimpleStatementLine] = []

    class _Find(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if _calls(node, name):
                found.append(node)

    for member in body:
        if isinstance(member, cst.FunctionDef) and member.name.value != name:
            member.visit(_Find())
    return found


def fold_emptied(body: list[cst.BaseStatement], name: str, strategy: str, opener: str,
                 named_only: NamedOnly) -> Optional[tuple[list[cst.BaseStatement], int]]:
    """The class body without the method `name` the fix emptied, its calls made to `opener`
    (worker-init) or dropped (lazy), and the index where the method stood; None when it stays
    (see the module's docstring)."""
    if name.startswith("__"):
        return None
    where = [i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)
             and s.name.value == name]
    if len(where) != 1:
        return None
    method = body[where[0]]
    assert isinstance(method, cst.FunctionDef)
    if method.decorators or method.asynchronous is not None or not _only_self(method.params):
        return None
    left = statements(method.body.body) if isinstance(method.body, cst.IndentedBlock) else []
    expected = f"self.{opener}()" if strategy == "worker-init" else "pass"
    if len(left) != 1 or cst.Module([]).code_for_node(left[0]).strip() != expected:
        return None  # (a docstring, a comment, other code: the method says more than that)
    calls = self_call_statements(body, name)
    if not calls or not named_only(name, len(calls) + 1):
        return None
    replacement = None if strategy == "lazy" else f"self.{opener}()"
    rewriter = _Calls(name, replacement)
    out: list[cst.BaseStatement] = []
    for index, member in enumerate(body):
        if index == where[0]:
            continue
        if isinstance(member, cst.FunctionDef):
            visited = member.visit(rewriter)
            assert isinstance(visited, cst.FunctionDef)
            member = visited
        out.append(member)
    if rewriter.stuck:
        return None
    return out, where[0]


class _Calls(cst.CSTTransformer):
    """Each `self.<name>()` statement made `replacement`, or dropped (None) where its block
    keeps another statement and the comments around it can stay (else `stuck`)."""

    def __init__(self, name: str, replacement: Optional[str]) -> None:
        super().__init__()
        self.name = name
        self.replacement = replacement
        self.stuck = False

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        if self.replacement is None or not _calls(updated, self.name):
            return updated
        call = cst.parse_expression(self.replacement)
        return updated.with_changes(body=[cst.Expr(call)])

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock
                            ) -> cst.IndentedBlock:
        if self.replacement is not None:
            return updated
        kept: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for statement in updated.body:
            if isinstance(statement, cst.SimpleStatementLine) and _calls(statement, self.name):
                if statement.trailing_whitespace.comment is not None:
                    self.stuck = True  # its own comment would go with it
                carried += leading_lines(statement)
                continue
            if carried:
                statement = with_leading_lines(statement, [*carried, *leading_lines(statement)])
                carried = []
            kept.append(statement)
        if not kept or any(line.comment is not None for line in carried):
            self.stuck = True  # an empty block, or a comment with nothing below it
            return updated
        return updated.with_changes(body=kept)


def _calls(statement: cst.SimpleStatementLine, name: str) -> bool:
    small = single(statement)
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    call = small.value
    func = call.func
    return not call.args and isinstance(func, cst.Attribute) and func.attr.value == name \
        and isinstance(func.value, cst.Name) and func.value.value == "self"


def _only_self(params: cst.Parameters) -> bool:
    return len(params.params) == 1 and not params.posonly_params and not params.kwonly_params \
        and not isinstance(params.star_arg, cst.Param) and params.star_kwarg is None
