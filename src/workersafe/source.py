"""Reading source files: bytes → text, remembering what the fixer must keep (encoding, BOM,
line endings). A file that cannot be decoded is reported, never guessed."""

from __future__ import annotations

import io
import re
import tokenize

from .records import record


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
    \\u2028 and \\u2029, which shifts every later line number."""
    return re.findall(_PHYSICAL_LINE, text)


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
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    return Source(path, raw, text, "utf-8" if encoding == "utf-8-sig" else encoding, bom)


def _declared_encoding(raw: bytes) -> str:
    """PEP 263: a coding cookie on one of the first two lines, else UTF-8. Almost no file has
    one: the tokenizer is asked only when the word is there."""
    first = raw.find(b"\n")
    second = raw.find(b"\n", first + 1) if first != -1 else -1
    head = raw if second == -1 else raw[:second + 1]
    if b"coding" not in head and not raw.startswith(b"\xef\xbb\xbf"):
        return "utf-8"
    return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
