"""`# noqa` handling, applied exactly as flake8 applies it, so both front ends agree."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Sequence

# The same expressions flake8 uses (flake8/defaults.py), so a comment means the same in both.
_NOQA_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
_NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.IGNORECASE)
_SEPARATORS = re.compile(r"[,\s]")


def file_is_ignored(lines: Sequence[str]) -> bool:
    """`# flake8: noqa` alone on a line switches the whole file off."""
    return any(_NOQA_FILE.match(line) for line in lines)


def noqa_line_map(lines: Sequence[str]) -> dict[int, str]:
    """Line number → the text searched for `noqa` (a multi-line token counts on all its lines)."""
    mapping: dict[int, str] = {}
    first, last = len(lines) + 2, -1
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    for tok in tokens:
        if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        first, last = min(first, tok.start[0]), max(last, tok.end[0])
        if tok.type in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[first - 1: last])
            mapping.update(dict.fromkeys(range(first, last + 1), joined))
            first, last = len(lines) + 2, -1
    return mapping


def is_suppressed(code: str, line_text: str | None) -> bool:
    if not line_text:
        return False
    match = _NOQA_INLINE.search(line_text)
    if match is None:
        return False
    codes_text = match.group("codes")
    if codes_text is None:
        return True
    codes = tuple(c.strip() for c in _SEPARATORS.split(codes_text) if c.strip())
    return code in codes or code.startswith(codes)


class NoqaFilter:
    """Decides suppression for one file's findings; tokenizes only when asked."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._map: dict[int, str] | None = None
        # Tokenizing is the costly part: a file without any `noqa` needs none of it.
        self._has_noqa = any("noqa" in line.lower() for line in lines)

    def suppressed(self, code: str, line: int) -> bool:
        if not self._has_noqa:
            return False
        if self._map is None:
            self._map = noqa_line_map(self._lines)
        text = self._map.get(line)
        if text is None and 1 <= line <= len(self._lines):
            text = self._lines[line - 1]
        return is_suppressed(code, text)
