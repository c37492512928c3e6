"""`python -m workersafe`, and the `workersafe` command (`run`, its entry point)."""

import gc
import sys
from typing import NoReturn

from .exitcodes import EXIT_INTERRUPTED, leave

# The commands that leave without the interpreter's teardown once done (`exitcodes.leave`):
# not `guard`, whose script's exit hooks must run, nor the language server.
_LEAVE_DIRECTLY = ("check", "fix", "rule")


def run() -> NoReturn:
    # No cycle collection while the modules load (what they build lives as long as the run):
    # 9 young-generation collections, ~0.9 ms of the start-up, each rescanning what came
    # before. The run then starts with it all frozen, as `cli._fewer_collections` would.
    gc.disable()
    try:
        from .cli import main
    except KeyboardInterrupt:  # Ctrl-C while starting up
        print("workersafe: interrupted", file=sys.stderr)
        leave(EXIT_INTERRUPTED)
    gc.freeze()
    gc.enable()
    code = main()
    # An interrupted run leaves directly too: from Python 3.12, under `-m`, a
    # KeyboardInterrupt that broke into an exec() of source text (dataclasses build their
    # methods so: while libcst is imported, say) leaves the interpreter believing the
    # interrupt went unhandled although it was caught: it would end itself with SIGINT
    # instead of the exit code.
    if code == EXIT_INTERRUPTED or (len(sys.argv) > 1 and sys.argv[1] in _LEAVE_DIRECTLY):
        leave(code)
    raise SystemExit(code)


if __name__ == "__main__":
    run()
