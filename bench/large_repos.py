"""Cold `workersafe check --no-cache .` against a bare `ast.parse` of the same tree, side by
side, on large real repositories (issue 21: at most 1.0x on each, 0.5x in the median).

CPU time is user+system of the command and every process it waited for (pool workers
included), from `getrusage(RUSAGE_CHILDREN)` around each run; the two commands alternate,
`--reps` times each, and the median is kept. The link phase's share (the `Project` built and
queried plus every rule: `rules.evaluate`) is measured inside the check (`timed_check.py`).

Usage: ``python bench/large_repos.py /work/repos/lhotse /work/repos/MONAI ... [--reps 3]``
(workersafe from `$PYTHONPATH` or the installed package). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cpu_of(command: list[str], cwd: Path, env: dict[str, str], timeout: float
           ) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of `command` and the processes it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        code = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = -1
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, code


def measure(repo: Path, reps: int, timeout: float) -> dict[str, float | int | str]:
    env = dict(os.environ)
    check, floor, link, work = [], [], [], 0
    files = sum(1 for _ in repo.rglob("*.py"))
    for rep in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "link.json"
            env["WORKERSAFE_TIMED_OUT"] = str(out)
            order = ["check", "floor"] if rep % 2 == 0 else ["floor", "check"]
            for side in order:
                if side == "check":
                    cpu, _, code = cpu_of([sys.executable, str(HERE / "timed_check.py"),
                                           "check", "--no-cache", "."], repo, env, timeout)
                    if code not in (0, 1):
                        return {"repo": repo.name, "files": files,
                                "error": "timeout" if code == -1 else f"exit {code}"}
                    check.append(cpu)
                    spent = json.loads(out.read_text())
                    link.append(spent["link_cpu"])
                    work = spent["link_work"]
                else:
                    cpu, _, _ = cpu_of([sys.executable, str(HERE / "ast_floor.py"), "."],
                                       repo, env, timeout)
                    floor.append(cpu)
    c, f, li = statistics.median(check), statistics.median(floor), statistics.median(link)
    return {"repo": repo.name, "files": files, "check": c, "floor": f, "ratio": c / f,
            "link": li, "link_ratio": li / f, "work": work}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    rows = []
    print("| repository | .py files | check CPU s | bare ast.parse CPU s | ratio | "
          "link+rules CPU s | link / parse | link work |")
    print("|---|---|---|---|---|---|---|---|")
    for repo in args.repos:
        row = measure(repo.resolve(), args.reps, args.timeout)
        rows.append(row)
        if "error" in row:
            print(f"| {row['repo']} | {row['files']} | {row['error']} | | | | | |")
        else:
            print(f"| {row['repo']} | {row['files']} | {row['check']:.2f} | {row['floor']:.2f} "
                  f"| {row['ratio']:.2f}x | {row['link']:.2f} | {row['link_ratio']:.2f}x "
                  f"| {row['work']} |", flush=True)
    ratios = [float(r["ratio"]) for r in rows if "ratio" in r]
    if ratios:
        print(f"\nmedian ratio {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x "
              f"(target: ≤ 1.0x each, ≤ 0.5x median)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
