"""Two workersafe sources side by side on real trees: cold `check --no-cache` CPU of each
against a bare `ast.parse` of the same tree, and whether their outputs are identical.

For each tree, `--reps` rounds alternate `python -m workersafe check --no-cache --format json
--stats .` under each source's `PYTHONPATH` (the order flips each round) with
`bench/ast_floor.py .`; CPU is user + system of each process (`getrusage(RUSAGE_CHILDREN)`),
the median kept. The last round's outputs (stdout and exit code) are compared byte for byte, and
the files each parsed (`--stats`) printed. For a change that must keep findings and lower
cost: the ratio B/A, measured in one run, is what carries over between machines.

Usage: ``python bench/side_by_side_trees.py --reps 3 OLD/src src /work/repos/lhotse ...``
(byte-compile both sources first: `python -m compileall -q OLD/src src`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cpu_of(command: list[str], cwd: str, env: dict[str, str]
           ) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def parsed(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    try:
        return str(json.loads(lines[-1])["parsed"])
    except (IndexError, ValueError, KeyError):
        return "?"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="the first source tree (its src/ directory)")
    parser.add_argument("b", help="the second source tree")
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    check = [sys.executable, "-m", "workersafe", "check", "--no-cache", "--format", "json",
             "--stats", "."]
    floor = [sys.executable, str(HERE / "ast_floor.py"), "."]
    print("| tree | floor CPU s | A CPU s | B CPU s | A / floor | B / floor | B / A "
          "| files parsed A → B | same output |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tree in args.trees:
        times: dict[str, list[float]] = {"a": [], "b": [], "floor": []}
        last: dict[str, subprocess.CompletedProcess[str]] = {}
        for rep in range(args.reps):
            for side in ("a", "b") if rep % 2 == 0 else ("b", "a"):
                env = dict(os.environ, PYTHONPATH=getattr(args, side))
                spent, last[side] = cpu_of(check, tree, env)
                times[side].append(spent)
            times["floor"].append(cpu_of(floor, tree, dict(os.environ))[0])
        a, b, f = (statistics.median(times[k]) for k in ("a", "b", "floor"))
        same = (last["a"].stdout, last["a"].returncode) == (last["b"].stdout,
                                                            last["b"].returncode)
        print(f"| {os.path.basename(os.path.abspath(tree))} | {f:.3f} | {a:.3f} | {b:.3f} "
              f"| {a / f:.2f}x | {b / f:.2f}x | {b / a:.3f} "
              f"| {parsed(last['a'])} → {parsed(last['b'])} | {same} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
