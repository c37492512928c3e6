"""Long lines in what the fix writes: a statement moved into an opener or a lazy property sits
deeper than it stood (a property's `if`), or reads `self._path` where it read `path`, and may
pass the line length the project allows (`style.max_line`). Such a line's call continues on
the next line after the last argument that fits, aligned with its first argument, as a person
would write it; a line that cannot be wrapped so (no call with two arguments last on it, an
argument too long alone) stays as it is."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .style import max_line

_SMALL = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return)


class WrapLong(cst.CSTTransformer):
    """Wraps the long one-line statements of the methods it visits; `column`: where the body
    of a method at the visited level starts (the class body's column plus one indent),
    `indent`: the width of one indentation level."""

    def __init__(self, column: int, indent: int) -> None:
        super().__init__()
        self.column = column - indent  # the level of the `def` itself
        self.indent = indent

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.column += self.indent

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock
                            ) -> cst.IndentedBlock:
        self.column -= self.indent
        return updated

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        return wrapped(updated, self.column)


def wrapped(statement: cst.SimpleStatementLine, column: int) -> cst.SimpleStatementLine:
    """`statement`, written at `column`, with its call's arguments continued on aligned lines
    when its one line passes the line length."""
    if len(statement.body) != 1 or not isinstance(statement.body[0], _SMALL):
        return statement
    small = statement.body[0]
    code = _code(small)
    comment = statement.trailing_whitespace.comment
    width = column + len(code) + (2 + len(comment.value) if comment is not None else 0)
    if "\n" in code or width <= max_line():
        return statement
    call = _last_call(small)
    if call is None or len(call.args) < 2 or any(a.star for a in call.args):
        return statement
    call_code = _code(call)
    if not code.endswith(call_code):
        return statement
    first = column + len(code) - len(call_code) + len(_code(call.func)) + 1
    new_call = _packed(call, first)
    if new_call is None:
        return statement
    return statement.with_changes(body=[small.with_changes(value=new_call)])


def _last_call(small: cst.BaseSmallStatement) -> Optional[cst.Call]:
    value = getattr(small, "value", None)
    return value if isinstance(value, cst.Call) else None


def _packed(call: cst.Call, first: int) -> Optional[cst.Call]:
    """The call's arguments filled line by line from column `first`, each line as long as the
    line length allows; None when one argument alone does not fit."""
    limit = max_line()
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in call.args]
    texts = [_code(a) for a in args]
    out: list[cst.Arg] = []
    at = first
    for index, (arg, text) in enumerate(zip(args, texts)):
        last = index == len(args) - 1
        end = at + len(text) + 1  # its comma, or the closing parenthesis
        if at > first and end > limit:
            out[-1] = out[-1].with_changes(comma=cst.Comma(whitespace_after=_newline(first)))
            at = first
            end = at + len(text) + 1
        if end > limit:
            return None
        out.append(arg if last else arg.with_changes(comma=cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))))
        at = end + (0 if last else 1)
    return call.with_changes(args=out, whitespace_before_args=cst.SimpleWhitespace(""))


def _newline(column: int) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[],
                                       indent=False, last_line=cst.SimpleWhitespace(" " * column))


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
