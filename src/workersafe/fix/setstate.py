"""A class's own `__setstate__`, as the fix reads it: one that only restores `__dict__`, or the
common hand-written remedy that restores it and then opens the handles again, which
`__getstate__` left out (`self.conn = sqlite3.connect(self.db_path)`, with the statements
configuring it). That remedy is right under spawn, but a forked worker still shares the parent's
handle; the fix moves the creation into its opener, and the reopening statements give way to
it (worker-init: `self.open_handles()`; lazy: nothing, the property opens on first use)."""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from .cstutil import leading_lines, root_self_attr, single, statements, with_leading_lines


def only_restores(method: cst.FunctionDef) -> bool:
    """`def __setstate__(self, state): self.__dict__.update(state)` (or `= state`)."""
    split = _split(method)
    return split is not None and not split[1]


def reopening(method: cst.FunctionDef, attrs: Sequence[str]
              ) -> Optional[list[cst.BaseStatement]]:
    """The statements after the restore when each sets or configures one of `attrs` (the
    handles the fix moves: `self.conn = ...`, `self.conn.row_factory = ...`,
    `self.session.headers.update(...)`), else None (nothing after it, or other code)."""
    split = _split(method)
    if split is None or not split[1]:
        return None
    for statement in split[1]:
        small = single(statement)
        if isinstance(small, cst.Assign):
            roots = [root_self_attr(t.target) for t in small.targets]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            roots = [root_self_attr(small.value.func)]
        else:
            return None
        if not roots or any(r not in attrs for r in roots):
            return None
    return split[1]


def reopened_by(method: cst.FunctionDef, reopen: Sequence[cst.BaseStatement],
                opener: Optional[str]) -> cst.FunctionDef:
    """`method` with the `reopen` statements replaced by one `self.<opener>()` where the first
    of them stood (None: removed)."""
    gone = {id(s) for s in reopen}
    body: list[cst.BaseStatement] = []
    for statement in statements(method.body.body):
        if id(statement) not in gone:
            body.append(statement)
        elif opener is not None:
            body.append(with_leading_lines(cst.parse_statement(f"self.{opener}()\n"),
                                           leading_lines(statement)))
            opener = None
    return method.with_changes(body=method.body.with_changes(body=body))


def _split(method: cst.FunctionDef
           ) -> Optional[tuple[cst.BaseStatement, list[cst.BaseStatement]]]:
    """(the statement restoring `__dict__`, the statements after it), when it comes first
    (after a docstring)."""
    params = [p.name.value for p in method.params.params]
    if len(params) != 2 or not isinstance(method.body, cst.IndentedBlock):
        return None
    body = [s for s in method.body.body if not _is_docstring(s)]
    if not body:
        return None
    code = cst.Module([]).code_for_node(body[0]).strip().replace(" ", "")
    state = params[1]
    if code not in (f"self.__dict__.update({state})", f"self.__dict__={state}",
                    f"vars(self).update({state})"):
        return None
    return body[0], list(body[1:])


def _is_docstring(statement: cst.BaseStatement) -> bool:
    small = single(statement)
    return isinstance(small, cst.Expr) and isinstance(
        small.value, (cst.SimpleString, cst.ConcatenatedString))
