"""Positions of `ast` nodes as flake8 reports them, and the source text of a node.

Python's `ast` counts columns in UTF-8 bytes; flake8 (and libcst, which the fixer uses) count
characters. Lines are physical lines (split at \\r\\n, \\r and \\n only), as the tokenizer
counts them."""

from __future__ import annotations

import ast
from typing import Optional

from ..facts import Span
from ..source import physical_lines


class Positions:
    """Spans and source segments of the nodes of one text (its lines split only if needed)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self._lines: Optional[list[str]] = None
        self._rows: Optional[list[str]] = None

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = _lines(self.text)
        return self._lines

    @property
    def rows(self) -> list[str]:
        """The lines, their line breaks left out or not (`lines` when the text has a \r);
        one more, empty, when the text ends with a line break: for what a line's text says
        before its end (a column, a word)."""
        if self._rows is None:
            self._rows = self.text.split("\n") if "\r" not in self.text else self.lines
        return self._rows

    def span(self, node: ast.expr | ast.stmt) -> Span:
        line, col = node.lineno, node.col_offset
        end_line = node.end_lineno or line
        end_col = node.end_col_offset
        end_col = col if end_col is None else end_col
        if self.ascii:
            return Span(line, col, end_line, end_col)
        return Span(line, self._char_col(line, col), end_line, self._char_col(end_line, end_col))

    def _char_col(self, line: int, byte_col: int) -> int:
        lines = self.rows
        if not 0 < line <= len(lines):
            return byte_col
        text = lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def segment(self, node: ast.expr) -> str:
        """The source text of `node` (as written: comments and line breaks inside kept)."""
        line, col = node.lineno, node.col_offset
        end_line, end_col = node.end_lineno, node.end_col_offset
        lines = self.lines
        if end_line is None or end_col is None or not 0 < line <= end_line <= len(lines):
            return ast.unparse(node)
        first = lines[line - 1].encode("utf-8")
        if line == end_line:
            return first[col:end_col].decode("utf-8", "replace")
        parts = [first[col:].decode("utf-8", "replace")]
        parts.extend(lines[line:end_line - 1])
        parts.append(lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", "replace"))
        return "".join(parts)


def _lines(text: str) -> list[str]:
    """`source.physical_lines(text)`; without a \r in the text, `str.split` (a regex's
    `findall` costs more than the rest of a file's positions)."""
    if "\r" in text:
        return physical_lines(text)
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines
