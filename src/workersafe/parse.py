"""Parse one file with Python's `ast` (once) and extract its facts. Never raises: a file that
cannot be analysed gets facts with `error` set (reported as WS001)."""

from __future__ import annotations

import ast
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
    try:
        if tree is None:
            tree = python_tree(text)
        with deep_recursion():
            return extract_facts(tree, text, path, module, is_package, registry)
    except (ParseError, TooDeep) as exc:
        return FileFacts(path, module, error=str(exc))
    except RecursionError:
        return FileFacts(path, module, error="too deeply nested to analyse (recursion limit)")
    except MemoryError:
        return FileFacts(path, module, error="too large to analyse (out of memory)")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        return FileFacts(path, module, error=f"internal error while analysing "
                                             f"({type(exc).__name__}: {exc}); please report it")


class ParseError(Exception):
    """Python's parser refused the text; the message is for WS001."""


def python_tree(text: str) -> ast.Module:
    """Python's tree of `text`, or ParseError with a clear message.

    Runs with at most 1,000 levels of recursion left: CPython's own guards (3.11+) then stop
    runaway nesting with an exception, long before the C stack is at risk. Syntax this Python
    does not know (3.12's `type` under 3.11) is a syntax error here, as flake8's E999 says."""
    try:
        with warnings.catch_warnings(), _shallow_recursion():
            warnings.simplefilter("ignore")  # invalid escapes etc.: not ours to report
            return ast.parse(text)
    except (RecursionError, MemoryError):
        raise ParseError("too deeply nested to analyse (Python's parser gives up)") from None
    except SyntaxError as exc:
        message = str(exc.msg or "invalid syntax")
        if "too many nested" in message or "too complex" in message:
            raise ParseError(f"too deeply nested to analyse ({message}, line {exc.lineno})") \
                from None
        where = f"line {exc.lineno}" if exc.lineno else "position unknown"
        if exc.lineno and exc.offset:
            where += f", column {max(exc.offset - 1, 0)}"
        raise ParseError(f"syntax error: {message} ({where}){grammar_hint()}") from None
    except (ValueError, OverflowError) as exc:
        raise ParseError(f"cannot parse: {exc}") from None


# The newest Python whose grammar workersafe supports (pyproject's classifiers, .ci/other-pythons).
NEWEST_PYTHON = (3, 13)


def grammar_hint(version: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """What to say after a syntax error when the running Python is not the newest: the file may
    be valid for a newer one (3.12's f-strings and `type` aliases fail to parse on 3.11), and the
    parser is the running interpreter's."""
    if tuple(version) >= NEWEST_PYTHON:
        return ""
    return (f"; read with Python {version[0]}.{version[1]}'s grammar: code for a newer Python "
            f"needs workersafe run on that Python")


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
