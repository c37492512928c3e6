"""`python -m workersafe`."""

import gc
import os
import sys


def _leave(code: int) -> None:
    """From Python 3.12, under `-m`, a KeyboardInterrupt that broke into an exec() of source
    text (dataclasses build their methods so: while libcst is imported, say) leaves the
    interpreter believing the interrupt went unhandled although it was caught: it then ends
    itself with SIGINT instead of the exit code. So an interrupted run leaves directly.

    Leaving directly skips the exit hooks, multiprocessing's among them: the named semaphores
    of an abandoned parse pool would stay registered, and multiprocessing's resource tracker
    would print a warning about them after we are gone. Its cleanups that cannot block (those
    with an exit priority of 0 or more: unlinking semaphores, closing queues) run first."""
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


# No cycle collection while the modules load (what they build lives as long as the run): 9
# young-generation collections, ~0.9 ms of the start-up, each rescanning what came before. The
# run then starts with it all frozen, as `cli._fewer_collections` would freeze it.
gc.disable()
try:
    from .cli import main
    from .exitcodes import EXIT_INTERRUPTED
except KeyboardInterrupt:  # Ctrl-C while starting up
    print("workersafe: interrupted", file=sys.stderr)
    _leave(130)
gc.freeze()
gc.enable()

code = main()
if code == EXIT_INTERRUPTED:  # already reported, and the workers stopped
    _leave(code)
raise SystemExit(code)
