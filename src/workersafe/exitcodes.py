"""Exit codes and usage errors, shared by the front ends (`workersafe check | fix | rule`,
the fixer): 0 clean, 1 findings (or `fix --diff` would change something), 2 usage or internal
error, 130 interrupted; and leaving the process without tearing the interpreter down."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A command line the tool cannot act on; the message is shown to the user."""


def leave(code: int) -> NoReturn:
    """Ends the process with `code` once its output is out, without the interpreter's
    teardown: freeing every module and object one by one costs a `check` ~5 ms of CPU (a
    pre-commit run on a few files, ~40 ms, pays it in full), for nothing a finished run needs.
    Only for a run whose work is done and written (`check`, `fix`, `rule`): it skips `atexit`
    hooks, so never after running someone else's code (`guard`) or a server.

    multiprocessing's cleanups that cannot block (those with an exit priority of 0 or more:
    unlinking the named semaphores of a parse pool, closing queues) run first: skipped, its
    resource tracker would warn about them after we are gone."""
    finalizers = getattr(sys.modules.get("multiprocessing.util"), "_run_finalizers", None)
    if finalizers is not None:
        try:
            finalizers(0)
        except Exception:  # noqa: BLE001 - best effort: we are leaving anyway
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
