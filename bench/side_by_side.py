"""Shell commands measured side by side: alternated `--reps` times, CPU (user + system of the
command and every process it waited for, `getrusage(RUSAGE_CHILDREN)`) and wall time, the
median kept. For fixed costs (start-up, a pool's start) where only a ratio measured in one run
means anything on a shared machine.

Usage: ``python bench/side_by_side.py --reps 15 "python=python -c pass" \\
    "check=python -m workersafe check --no-cache ."`` (each argument `label=command`)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time


def run(command: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sides", nargs="+", help="label=command")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    sides = [side.split("=", 1) for side in args.sides]
    cpu: dict[str, list[float]] = {label: [] for label, _ in sides}
    wall: dict[str, list[float]] = {label: [] for label, _ in sides}
    for rep in range(args.reps):
        for label, command in sides if rep % 2 == 0 else sides[::-1]:
            c, w = run(command)
            cpu[label].append(c)
            wall[label].append(w)
    print(f"| command, median of {args.reps} | CPU | wall |")
    print("|---|---|---|")
    for label, _ in sides:
        print(f"| {label} | {statistics.median(cpu[label]) * 1000:.1f} ms "
              f"| {statistics.median(wall[label]) * 1000:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
