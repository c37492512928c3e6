"""`python -m workersafe`."""

import os
import sys


def _leave(code: int) -> None:
    """From Python 3.12, under `-m`, a KeyboardInterrupt that broke into an exec() of source
    text (dataclasses build their methods so: while libcst is imported, say) leaves the
    interpreter believing the interrupt went unhandled although it was caught: it then ends
    itself with SIGINT instead of the exit code. So an interrupted run leaves directly."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


try:
    from .cli import main
    from .exitcodes import EXIT_INTERRUPTED
except KeyboardInterrupt:  # Ctrl-C while starting up
    print("workersafe: interrupted", file=sys.stderr)
    _leave(130)

code = main()
if code == EXIT_INTERRUPTED:  # already reported, and the workers stopped
    _leave(code)
raise SystemExit(code)
