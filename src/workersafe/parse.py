"""Parse one file with Python's `ast` (once) and extract its facts. Never raises: a file that
cannot be analysed gets facts with `error` set (reported as WS001)."""

from __future__ import annotations

import ast
import re
import sys
import warnings
from contextlib import contextmanager
from types import FrameType
from typing import Iterator, Optional

from .facts import FileFacts
from .registry import Registry

# The fact walk recurses a few times per nesting level, and stops at analysis.walker.MAX_DEPTH
# levels (the file is reported); deep but legal code must not crash the run. Measured (Python
# 3.11, 8 MiB main-thread stack): at this limit a runaway recursion raises a clean
# RecursionError with a 2 MiB stack.
_RECURSION_LIMIT = 10_000


def file_facts(text: str, path: str, module: str, is_package: bool, registry: Registry,
               tree: Optional[ast.Module] = None) -> FileFacts:
    """Facts of one file; a file that cannot be parsed gets facts with `error` set. `tree`:
    Python's `ast` of `text` if the caller has it (flake8 hands one to its plugins)."""
    with _gc_paused():
        return _file_facts(text, path, module, is_package, registry, tree)


def _file_facts(text: str, path: str, module: str, is_package: bool, registry: Registry,
                tree: Optional[ast.Module]) -> FileFacts:
    from .analysis.extract import extract_facts
    from .analysis.walker import TooDeep

    if text.startswith("\ufeff"):  # a BOM the caller left in: not part of the code
        text = text[1:]
    if tree is None:
        from .source import kept_tree  # (a notebook's, parsed when it was read)

        tree = kept_tree(path, text)
    try:
        if tree is None:
            tree = python_tree(text)
        with deep_recursion():
            return extract_facts(tree, text, path, module, is_package, registry)
    except ParseError as exc:
        return FileFacts(path, module, error=str(exc), error_at=(exc.line, exc.col))
    except TooDeep as exc:
        return FileFacts(path, module, error=str(exc))
    except RecursionError:
        return FileFacts(path, module, error="too deeply nested to analyse (recursion limit)")
    except MemoryError:
        return FileFacts(path, module, error="too large to analyse (out of memory)")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        return FileFacts(path, module, error=f"internal error while analysing "
                                             f"({type(exc).__name__}: {exc}); please report it")


class ParseError(Exception):
    """Python's parser refused the text; the message is for WS001, `line`/`col` where it is
    reported (1-based line, 0-based column as findings hold it; 0: unknown)."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.line, self.col = line, col


def python_tree(text: str) -> ast.Module:
    """Python's tree of `text`, or ParseError with a clear message and the error's place.

    Runs with at most 1,000 levels of recursion left: CPython's own guards (3.11+) then stop
    runaway nesting with an exception, long before the C stack is at risk. Syntax this Python
    does not know (3.12's `type` under 3.11) is a syntax error here, as flake8's E999 says;
    the message then says which Python the code needs."""
    try:
        with warnings.catch_warnings(), _shallow_recursion():
            warnings.simplefilter("ignore")  # invalid escapes etc.: not ours to report
            return ast.parse(text)
    except (RecursionError, MemoryError):
        raise ParseError("too deeply nested to analyse (Python's parser gives up)") from None
    except SyntaxError as exc:
        raise syntax_error(exc, text) from None
    except (ValueError, OverflowError) as exc:
        raise ParseError(f"cannot parse: {exc}") from None


def syntax_error(exc: SyntaxError, text: str) -> ParseError:
    """The WS001 of a SyntaxError: at its line and column as flake8's E999 prints them (flake8
    prints Python's 1-based `offset` plus one; so does the message), and the newer-Python hint
    only when the line holds syntax a newer Python has."""
    message = str(exc.msg or "invalid syntax")
    line = exc.lineno or 0
    if "too many nested" in message or "too complex" in message:
        return ParseError(f"too deeply nested to analyse ({message}, line {line})", line)
    col = (exc.offset or 0) if line else 0
    line, col = _as_flake8_places(exc, line, col)
    where = f"line {line}" if line else "position unknown"
    if line:
        where += f", column {col + 1}"
    source_line = exc.text if exc.text is not None else _line(text, line)
    return ParseError(f"syntax error: {message} ({where}){grammar_hint(source_line, message)}",
                      line, col)


def _as_flake8_places(exc: SyntaxError, line: int, col: int) -> tuple[int, int]:
    """flake8's adjustment of E999 on Python 3.9 and older, whose SyntaxError carries a 4-item
    position (3.10 added the end): one column back, at most the length of the error's first
    line, and the line moved back over the lines of text the error holds."""
    position = exc.args[1] if len(exc.args) > 1 else None
    if not (col > 0 and isinstance(position, tuple) and len(position) == 4):
        return line, col
    if isinstance(position[3], str):
        lines = position[3].rstrip("\n").split("\n")
        line -= len(lines) - 1
        col = min(col, len(lines[0]))
    return line, col - 1


def _line(text: str, number: int) -> str:
    from .source import physical_lines

    lines = physical_lines(text) if number else []
    return lines[number - 1] if 0 < number <= len(lines) else ""


# Syntax newer Pythons added, as it shows on the line Python blames: (version, what, pattern).
# (Compiled by `re` when a syntax error is explained, not at import: the flake8 plugin imports
# this module for every run, and a file with a syntax error is rare.)
_NEWER_SYNTAX: tuple[tuple[tuple[int, int], str, str], ...] = (
    ((3, 10), "`match`", r"^\s*(match|case)\b[^=]*:\s*(#.*)?$"),
    ((3, 11), "`except*`", r"^\s*except\s*\*"),
    ((3, 12), "a `type` alias", r"^\s*type\s+\w+\s*(\[.*\])?\s*="),
    ((3, 12), "type parameters", r"^\s*(async\s+)?(def|class)\s+\w+\s*\["),
    ((3, 14), "a t-string", r"(?<![\w.])([tT][rR]?|[rR][tT])[\"']"),
    ((3, 14), "`except` without brackets", r"^\s*except\s+[^(:*\s][^:]*,[^:]*:"),
)
# f-strings: 3.12 allows the outer quote inside the braces, backslashes and comments there
_FSTRING_GRAMMAR = (3, 12)
_FSTRING_NEWER = r"""[fF][rRbB]?(?P<q>["'])[^\n]*?\{[^}\n]*((?P=q)|\\|#)"""


def newer_syntax(line: str, message: str,
                 version: tuple[int, ...] = tuple(sys.version_info[:2])
                 ) -> Optional[tuple[tuple[int, int], str]]:
    """(the Python that has it, what it is) when the line Python blamed holds syntax a newer
    Python than `version` knows; None for a plain mistake (a typo, Python 2 code)."""
    for needed, what, pattern in _NEWER_SYNTAX:
        if tuple(version) < needed and re.search(pattern, line):
            return needed, what
    if tuple(version) < _FSTRING_GRAMMAR and message.startswith("f-string") \
            and re.search(_FSTRING_NEWER, line):
        return _FSTRING_GRAMMAR, "an f-string with quotes, backslashes or comments inside"
    return None


def grammar_hint(line: str, message: str,
                 version: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """What to say after a syntax error when the line looks like code for a newer Python than
    the one running (its parser is the one used): "" for any other syntax error."""
    newer = newer_syntax(line, message, version)
    if newer is None:
        return ""
    (major, minor), what = newer
    return (f"; this looks like Python {major}.{minor} syntax ({what}), read with Python "
            f"{version[0]}.{version[1]}'s grammar: run workersafe on Python {major}.{minor} or "
            "newer")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while one file is parsed and analysed. A syntax tree is
    tens of thousands of small objects: each allocation counts towards the next collection,
    and every collection scans them all, for nothing (syntax trees hold no reference cycles;
    reference counting frees them). The trees must be gone when it is enabled again: the next
    allocation starts a collection."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _shallow_recursion(room: int = 1000) -> Iterator[None]:
    """The recursion limit lowered (never raised) to `room` levels above the current depth.
    (In 3.11 `ast.parse` allows three AST levels per level left: at a limit raised to 10,000,
    29,000 levels parse, and overflow a 2 MiB stack.)"""
    old_limit = sys.getrecursionlimit()
    depth = 0
    frame: Optional[FrameType] = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    lowered = depth + room < old_limit
    if lowered:
        sys.setrecursionlimit(depth + room)
    try:
        yield
    finally:
        if lowered:
            sys.setrecursionlimit(old_limit)


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for recursive walks (ours, and libcst's in `fix`) over anything `file_facts`
    accepts (nesting up to MAX_DEPTH): the recursion limit raised, then restored."""
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old_limit)
