"""`workersafe check ARGS...` run as the CLI runs it, with the CPU time of the linking and
the rules (`rules.evaluate`: `Project` built and queried, every rule) measured inside the
process and written as JSON to the file named by ``$WORKERSAFE_TIMED_OUT``.

The time a parent measures for this process (its children included) is the whole check;
the part written here is the link phase's share of it. Usage (from the tree checked):
``WORKERSAFE_TIMED_OUT=link.json python bench/timed_check.py check --no-cache .``
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    from workersafe import cli, rules

    spent = {"link_cpu": 0.0, "link_work": 0}
    original = rules.evaluate  # the engine imports it where it calls it: it gets this one

    def timed(project: Any, registry: Any) -> Any:
        start = time.process_time()
        try:
            return original(project, registry)
        finally:
            spent["link_cpu"] += time.process_time() - start
            spent["link_work"] += getattr(project, "flow_work", 0)

    rules.evaluate = timed  # type: ignore[assignment]
    code = cli.main(argv)
    out = os.environ.get("WORKERSAFE_TIMED_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(spent, handle)
    return int(code)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # as the `workersafe` command ends a finished check (without the interpreter's teardown),
    # in the trees that do so
    from workersafe import exitcodes

    leave = getattr(exitcodes, "leave", sys.exit)
    leave(code)
