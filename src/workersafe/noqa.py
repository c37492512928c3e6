"""`# noqa` handling, applied as flake8 applies it, so both front ends agree.

One addition to flake8's rule: a `# noqa` naming a code also covers the code's latent twin
(`ruletable.latent_of`: WS101 and WS111, WS301 and WS311, ...), both ways. The same line is
WS101 when the CLI links the dataset to a DataLoader in another file and WS111 when flake8
checks the file alone; one comment must silence it in both. The flake8 plugin applies the twin
half itself (`twin_suppressed`): flake8 only knows the code it is given."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional, Sequence

from .ruletable import RULES, latent_of

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


# confirmed ↔ latent, both ways, from the rule table
_TWINS: dict[str, str] = {}
for _rule in RULES:
    _latent = latent_of(_rule.code)
    if _latent:
        _TWINS[_rule.code] = _latent
        _TWINS[_latent] = _rule.code


def twin_of(code: str) -> Optional[str]:
    """The other code of a confirmed/latent pair (WS101 → WS111, WS111 → WS101), if any."""
    return _TWINS.get(code)


def _named(line_text: str | None) -> tuple[str, ...] | None:
    """The codes a line's `# noqa:` names; () for a bare `# noqa`; None without one."""
    if not line_text:
        return None
    match = _NOQA_INLINE.search(line_text)
    if match is None:
        return None
    codes_text = match.group("codes")
    if codes_text is None:
        return ()
    return tuple(c.strip() for c in _SEPARATORS.split(codes_text) if c.strip())


def _covers(codes: tuple[str, ...], code: str) -> bool:
    return code in codes or code.startswith(codes)


def is_suppressed(code: str, line_text: str | None) -> bool:
    """flake8's rule (a bare `# noqa`, or a named code or prefix), plus the latent twin."""
    codes = _named(line_text)
    if codes is None:
        return False
    if not codes:
        return True
    twin = twin_of(code)
    return _covers(codes, code) or (twin is not None and _covers(codes, twin))


def twin_suppressed(code: str, line_text: str | None) -> bool:
    """Suppressed only through the twin: what flake8, which applies its own `# noqa`, would
    still report (`# noqa: WS101` on a line the plugin reports as WS111)."""
    codes = _named(line_text)
    if not codes:
        return False
    twin = twin_of(code)
    return not _covers(codes, code) and twin is not None and _covers(codes, twin)


class NoqaFilter:
    """Decides suppression for one file's findings; tokenizes only when asked."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._map: dict[int, str] | None = None
        # Tokenizing is the costly part: a file without any `noqa` needs none of it. (One
        # search of the whole text, in C: a line at a time cost ~0.2 ms on 3,000 lines.)
        self._has_noqa = "noqa" in "".join(lines).lower()

    def suppressed(self, code: str, line: int) -> bool:
        return self._has_noqa and is_suppressed(code, self._text(line))

    def twin_suppressed(self, code: str, line: int) -> bool:
        return self._has_noqa and twin_suppressed(code, self._text(line))

    def _text(self, line: int) -> str | None:
        if self._map is None:
            self._map = noqa_line_map(self._lines)
        text = self._map.get(line)
        if text is None and 1 <= line <= len(self._lines):
            text = self._lines[line - 1]
        return text
