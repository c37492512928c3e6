"""`workersafe ARGS...` as `python -m workersafe` runs it, with the garbage collector set first:
`default` (Python's thresholds, nothing frozen; `cli._fewer_collections` bypassed), `off`, or a
young-generation threshold `t<N>` after `gc.freeze()`. Prints the peak memory on stderr.

Usage (with bench/side_by_side.py): ``python bench/gc_run.py default check --no-cache .``
"""

from __future__ import annotations

import contextlib
import gc
import resource
import sys


def main(argv: list[str]) -> int:
    mode, args = argv[0], argv[1:]
    from workersafe import cli

    cli._fewer_collections = lambda **_: contextlib.nullcontext()  # type: ignore[assignment]
    if mode == "off":
        gc.disable()
    elif mode.startswith("t"):
        gc.freeze()
        gc.set_threshold(int(mode[1:]), 10, 10)
    code = cli.main(args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak memory {peak} MB", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
