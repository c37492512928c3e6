"""Reading source files: bytes → text, remembering what the fixer must keep (encoding, BOM,
line endings). A file that cannot be decoded is reported, never guessed."""

from __future__ import annotations

import io
import re
import tokenize
from typing import TYPE_CHECKING, Optional

from .records import record

if TYPE_CHECKING:
    import ast


@record(frozen=True)
class Source:
    path: str
    raw: bytes
    text: str
    encoding: str
    bom: bool

    @property
    def lines(self) -> list[str]:
        return physical_lines(self.text)


_PHYSICAL_LINE = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+"  # (compiled once, by `re`, when used)


def physical_lines(text: str) -> list[str]:
    """Lines (with their ends) as Python's tokenizer, libcst and flake8 count them: split at
    \\r\\n, \\r and \\n only. `str.splitlines` also splits at \\f, \\v, \\x1c-\\x1e, \\x85,
    \\u2028 and \\u2029, which shifts every later line number. A text holding none of those
    is split by `str.splitlines`, several times faster (a notebook's cells, each read so)."""
    if any(other in text for other in _OTHER_BREAKS[0 if text.isascii() else 1]):
        return re.findall(_PHYSICAL_LINE, text)
    return text.splitlines(keepends=True)


# what `str.splitlines` splits at besides \r and \n: in an ASCII text; in any text
_OTHER_BREAKS = ("\v\f\x1c\x1d\x1e", "\v\f\x1c\x1d\x1e\x85\u2028\u2029")


# Trees parsed while reading, by path, with the text each is of (a notebook's joined code is
# parsed to find the cells that do not parse): the parse of that text takes its tree rather
# than parsing it again (`parse.file_facts`); the engine lets the rest go after each analysis
# (`forget_trees`). A few, and none of a large text.
KEPT_TREES: dict[str, tuple[str, ast.Module]] = {}
_TREES_KEPT = 32
_TREE_TEXT_MAX = 1_000_000


def keep_tree(path: str, text: str, tree: ast.Module) -> None:
    """`tree`, Python's tree of `text` (read from `path`), for the facts of that text."""
    if len(text) > _TREE_TEXT_MAX:
        return
    if len(KEPT_TREES) >= _TREES_KEPT:
        KEPT_TREES.clear()
    KEPT_TREES[path] = (text, tree)


def kept_tree(path: str, text: str) -> Optional[ast.Module]:
    """The tree kept for `text` read from `path` (`keep_tree`), taken: None if none."""
    kept = KEPT_TREES.pop(path, None) if KEPT_TREES else None
    return kept[1] if kept is not None and kept[0] == text else None


def forget_trees() -> None:
    KEPT_TREES.clear()


class SourceError(Exception):
    """The file could not be read or decoded; the message is for the user."""


def decode(path: str, raw: bytes) -> Source:
    if b"\x00" in raw:
        raise SourceError("file contains NUL bytes (binary file?)")
    try:
        encoding = _declared_encoding(raw)
    except SyntaxError as exc:
        raise SourceError(f"cannot determine encoding: {exc}") from None
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig" if bom else encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(_undecodable(raw, exc, encoding, bom)) from None
    except LookupError as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    return Source(path, raw, text, "utf-8" if encoding == "utf-8-sig" else encoding, bom)


def _undecodable(raw: bytes, exc: UnicodeDecodeError, encoding: str, bom: bool) -> str:
    """Where the bytes that do not decode are, as Python's own message says it ("line 7"),
    rather than the codec's offset into the file; and how to make the file readable."""
    start = exc.start + (3 if bom else 0)  # utf-8-sig counts from after the BOM
    line = raw.count(b"\n", 0, start) + 1
    what = f"byte 0x{raw[start]:02x} on line {line}" if start < len(raw) else f"line {line}"
    if bom:  # no coding line can say otherwise
        encoding, hint = "utf-8", "the file starts with a UTF-8 byte order mark"
    elif encoding == "utf-8":
        hint = ("no coding line: save the file as UTF-8 or declare its encoding on line 1 "
                "or 2, e.g. `# -*- coding: latin-1 -*-`")
    else:
        hint = "the encoding its coding line declares"
    return f"cannot decode as {encoding}: {what} ({exc.reason}; {hint})"


def _declared_encoding(raw: bytes) -> str:
    """PEP 263: a coding cookie on one of the first two lines, else UTF-8. Almost no file has
    one: the tokenizer is asked only when the word is there."""
    first = raw.find(b"\n")
    second = raw.find(b"\n", first + 1) if first != -1 else -1
    head = raw if second == -1 else raw[:second + 1]
    if b"coding" not in head and not raw.startswith(b"\xef\xbb\xbf"):
        return "utf-8"
    return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
