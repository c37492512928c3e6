"""Parse one file with libcst and extract its facts. libcst is imported here, lazily: a run in
which no file passes the prefilter never imports it."""

from __future__ import annotations

import ast
import re
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from .facts import FileFacts
from .registry import Registry

# libcst's parser and our visitor recurse; deep but legal code must not crash the run.
# Measured (Python 3.11, 8 MiB main-thread stack): the extraction at this limit raises a clean
# RecursionError with a 2 MiB stack and only overflows (SIGSEGV) at 1 MiB; with MAX_DEPTH
# below it stays far from the limit.
_RECURSION_LIMIT = 10_000

# libcst's native parser is guarded by nothing: it recurses in native code (~1 KiB of stack a
# level: `1+1+...+1` with 8,000 terms overflows an 8 MiB stack, a segfault that kills the whole
# run or flake8) and takes quadratic time and memory on long chains (2,000 subscripts
# `x[0][0]...`: 14 s; 2,000 nested conditional expressions: 700 MiB). Python's own parser is
# cheap, bounded and safe, so it measures the nesting first; deeper files are reported.
MAX_DEPTH = 1000
_LINE_END = re.compile(r"\r\n|\r|\n")


def parse_module(text: str) -> Any:
    import libcst

    return libcst.parse_module(text)


def file_facts(text: str, path: str, module: str, is_package: bool,
               registry: Registry) -> FileFacts:
    """Facts of one file; a file that cannot be parsed gets facts with `error` set."""
    with _gc_paused():
        return _file_facts(text, path, module, is_package, registry)


def _file_facts(text: str, path: str, module: str, is_package: bool,
                registry: Registry) -> FileFacts:
    import libcst

    from .analysis.extract import extract_facts

    problem, python_error, python_tree = _python_check(text)
    if problem is not None:
        return FileFacts(path, module, error=problem)
    try:
        with deep_recursion():
            tree = libcst.parse_module(text)
            return extract_facts(tree, path, module, is_package, registry, text,
                                 python_tree)
    except libcst.ParserSyntaxError as exc:
        if python_error is not None:  # Python's message is the clearer one
            return FileFacts(path, module, error=python_error)
        return FileFacts(path, module, error=f"syntax error: {_first_line(str(exc))} "
                                             f"(line {exc.raw_line}, column {exc.raw_column})")
    except RecursionError:
        return FileFacts(path, module, error="too deeply nested to analyse (recursion limit)")
    except MemoryError:
        return FileFacts(path, module, error="too large to analyse (out of memory)")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        return FileFacts(path, module, error=f"internal error while analysing "
                                             f"({type(exc).__name__}: {exc}); please report it")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while one file is parsed and analysed. A libcst tree is
    hundreds of thousands of small objects: each allocation counts towards the next collection,
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
    depth, frame = 0, sys._getframe()
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
    """Room for libcst's recursive visitors and code generation on anything `file_facts`
    accepts (nesting up to MAX_DEPTH): the recursion limit raised, then restored."""
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old_limit)


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else "cannot parse"


def nesting_problem(text: str, limit: int = MAX_DEPTH) -> Optional[str]:
    """Why libcst must not be given this text (too deeply nested), or None."""
    return _python_check(text, limit)[0]


def _python_check(text: str, limit: int = MAX_DEPTH
                  ) -> tuple[Optional[str], Optional[str], Optional[ast.Module]]:
    """(why libcst must not be given this text, Python's syntax error message if any, Python's
    tree when it parsed: positions are read from it).

    Runs with at most 1,000 levels of recursion left: CPython's own guards (3.11+) then stop
    runaway nesting with an exception, long before the C stack is at risk. Text Python cannot
    parse for other reasons (newer syntax, Python 2) is left to libcst; if libcst fails too,
    Python's message is reported."""
    try:
        with warnings.catch_warnings(), _shallow_recursion():
            warnings.simplefilter("ignore")  # invalid escapes etc.: not ours to report
            tree = ast.parse(text)
    except (RecursionError, MemoryError):
        return "too deeply nested to analyse (Python's parser gives up)", None, None
    except SyntaxError as exc:
        message = str(exc.msg or "invalid syntax")
        if "too many nested" in message or "too complex" in message:
            return f"too deeply nested to analyse ({message}, line {exc.lineno})", None, None
        where = f"line {exc.lineno}" if exc.lineno else "position unknown"
        if exc.lineno and exc.offset:
            where += f", column {max(exc.offset - 1, 0)}"
        return None, f"syntax error: {message} ({where})", None
    except (ValueError, OverflowError):
        return None, None, None
    line = _deep_line(tree, text, limit)
    if line is not None:
        return (f"too deeply nested to analyse (an expression more than {limit} levels deep, "
                f"line {line})"), None, None
    return None, None, tree


def _deep_line(tree: ast.AST, text: str, limit: int) -> Optional[int]:
    """The line of a node nested deeper than `limit`, or None.

    A nesting level takes at least one character of source (at most two AST levels, e.g.
    `keyword`, `arguments`), so a subtree spanning `n` characters is at most `2 n` levels deep
    below its root: only long statements are walked node by node. Spans are whole lines (an
    over-estimate); positions inside f-strings are not trusted before 3.12."""
    starts = [0]
    starts.extend(m.end() for m in _LINE_END.finditer(text))
    starts.append(len(text) + 1)
    last = len(starts) - 1

    def span(node: ast.AST) -> int:
        first = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None)
        if first is None or end is None:
            return limit  # no position (e.g. `arguments`): look inside
        return starts[min(end, last)] - starts[min(first, last) - 1]

    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]  # node, depth, statement line
    while stack:
        node, depth, line = stack.pop()
        if depth > limit:
            return line
        if isinstance(node, ast.stmt):
            line = node.lineno
        walk_all = isinstance(node, (ast.JoinedStr, ast.FormattedValue))
        for child in ast.iter_child_nodes(node):
            if walk_all or isinstance(child, (ast.stmt, ast.excepthandler)) \
                    or depth + 1 + 2 * span(child) > limit:
                stack.append((child, depth + 1, line))
    return None
