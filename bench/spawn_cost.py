"""The fixed CPU cost of one parse worker: a one-process spawn pool started, given one tiny
file (`parallel._parse_batch`, as `parse_files` sends it), and shut down; CPU of the child
(`getrusage(RUSAGE_CHILDREN)`) and of the parent, median of `--reps`.

Usage: ``PYTHONPATH=src python bench/spawn_cost.py --reps 7``
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from workersafe import parallel
from workersafe.config import Config
from workersafe.discovery import SourceFile


def once() -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.process_time()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context,
                             initializer=parallel._ignore_sigint) as pool:
        pool.submit(parallel._parse_batch, [(SourceFile("x.py", "x", False, "."), "x = 1\n")],
                    Config()).result()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return child, time.process_time() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    runs = [once() for _ in range(args.reps)]
    print(f"worker CPU {statistics.median(r[0] for r in runs) * 1000:.1f} ms, "
          f"parent CPU {statistics.median(r[1] for r in runs) * 1000:.1f} ms "
          f"(median of {args.reps})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
