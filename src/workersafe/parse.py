"""Parse one file with libcst and extract its facts. libcst is imported here, lazily: a run in
which no file passes the prefilter never imports it."""

from __future__ import annotations

import sys
from typing import Any

from .facts import FileFacts
from .registry import Registry

# libcst's parser and our visitor recurse; deep but legal code must not crash the run.
_RECURSION_LIMIT = 10_000


def parse_module(text: str) -> Any:
    import libcst

    return libcst.parse_module(text)


def file_facts(text: str, path: str, module: str, is_package: bool,
               registry: Registry) -> FileFacts:
    """Facts of one file; a file that cannot be parsed gets facts with `error` set."""
    import libcst

    from .analysis.extract import extract_facts

    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
    try:
        tree = libcst.parse_module(text)
        return extract_facts(tree, path, module, is_package, registry)
    except libcst.ParserSyntaxError as exc:
        return FileFacts(path, module, error=f"syntax error: {_first_line(str(exc))} "
                                             f"(line {exc.raw_line}, column {exc.raw_column})")
    except RecursionError:
        return FileFacts(path, module, error="too deeply nested to analyse (recursion limit)")
    except MemoryError:
        return FileFacts(path, module, error="too large to analyse (out of memory)")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        return FileFacts(path, module, error=f"internal error while analysing "
                                             f"({type(exc).__name__}: {exc}); please report it")
    finally:
        sys.setrecursionlimit(old_limit)


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else "cannot parse"
