"""Text edits for the code actions, in engine units (0-based lines, code-point columns): the
difference between a file and its rewrite, and the `# noqa: WSxxx` comment."""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from dataclasses import dataclass

from ..source import physical_lines

_NOQA_CODES = re.compile(r"(#\s*noqa:\s?)([A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)", re.IGNORECASE)


@dataclass(frozen=True)
class Edit:
    start_line: int  # 0-based
    start_col: int  # code points
    end_line: int
    end_col: int
    text: str


def line_edits(old: str, new: str) -> list[Edit]:
    """Whole-line replacements turning `old` into `new` (so the editor keeps the cursor and
    folds outside them)."""
    old_lines, new_lines = physical_lines(old), physical_lines(new)
    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        text = "".join(new_lines[j1:j2])
        if i1 == len(old_lines) and old_lines and not old_lines[-1].endswith(("\n", "\r")):
            # appending after a last line without a line end: start at its end
            last = old_lines[-1]
            edits.append(Edit(i1 - 1, len(last), i1 - 1, len(last), _line_end(old) + text))
            continue
        edits.append(Edit(i1, 0, i2, 0, text))
    return edits


def _line_end(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\r" if "\r" in text else "\n"


def noqa_edit(text: str, line: int, code: str) -> Edit:
    """The edit adding `code` to the `# noqa` of the logical line holding 1-based `line`: at
    the end of the statement's last physical line, where a comment is allowed (flake8 reads
    `# noqa` anywhere in the logical line)."""
    lines = physical_lines(text)
    last = _logical_end(text, line)
    body = lines[last - 1].rstrip("\r\n") if 0 < last <= len(lines) else ""
    match = _NOQA_CODES.search(body)
    if match:  # `# noqa: WS101` → `# noqa: WS101,WS102`
        at = match.end(2)
        return Edit(last - 1, at, last - 1, at, f",{code}")
    return Edit(last - 1, len(body), last - 1, len(body), f"  # noqa: {code}")


def _logical_end(text: str, line: int) -> int:
    """The last physical line of the logical line that contains `line` (1-based)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL) and tok.start[0] >= line:
                return tok.start[0]
            if tok.type == tokenize.ENDMARKER:
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    return line
