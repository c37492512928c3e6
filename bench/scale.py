"""The linker's scale curve (issue 21): synthetic projects from `gen_scale.py` with N dataset
classes and helper chains of depth D (2**D paths each), linked and checked in one process.

For each (N, D): the files' facts are extracted first (not timed: per-file work), then the
`Project` is built and every rule evaluated (`rules.evaluate`, the link phase), timed in CPU
seconds, with the linker's counted work (`Project.flow_work`) and the findings. With
`--baseline-src DIR` the same is run with another version's `src/` in a subprocess bounded
by `--timeout` (the recursive linker this replaced, for the before/after curve).

Usage: ``python bench/scale.py [--classes 10,100,1000] [--depths 1,5,10] [--loaders 4]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one(root: Path) -> dict[str, float | int]:
    """Link and check the project at `root` in this process."""
    from workersafe.discovery import discover
    from workersafe.link import Project
    from workersafe.parse import file_facts
    from workersafe.registry import DEFAULT_REGISTRY
    from workersafe.rules import evaluate

    facts = []
    for source in discover([str(root)]):
        text = Path(source.path).read_text(encoding="utf-8")
        facts.append(file_facts(text, source.path, source.module,
                                source.path.endswith("__init__.py"), DEFAULT_REGISTRY))
    start = time.process_time()
    project = Project(facts, registry=DEFAULT_REGISTRY)
    findings = evaluate(project, DEFAULT_REGISTRY)
    spent = time.process_time() - start
    confirmed = sum(1 for f in findings if f.code == "WS101")
    return {"files": len(facts), "link_cpu": spent, "work": getattr(project, "flow_work", -1),
            "confirmed": confirmed, "latent": sum(1 for f in findings if f.code == "WS111")}


def run(root: Path, src: str, timeout: float) -> dict[str, float | int] | str:
    env = dict(os.environ, PYTHONPATH=src)
    try:
        done = subprocess.run([sys.executable, __file__, "--one", str(root)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s"
    if done.returncode != 0:
        return f"error: {done.stderr.strip().splitlines()[-1:]}"
    result: dict[str, float | int] = json.loads(done.stdout)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--classes", default="10,100,1000")
    parser.add_argument("--depths", default="1,5,10")
    parser.add_argument("--loaders", type=int, default=4)
    parser.add_argument("--baseline-src", default="")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    sys.path.insert(0, str(HERE))
    from gen_scale import generate

    src = os.environ.get("PYTHONPATH", "")
    head = "| N classes | depth D | files | link CPU s | work | work / file | WS101 | WS111 |"
    if args.baseline_src:
        head += " baseline link CPU s | baseline WS101 |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.classes.split(",")):
            for d in (int(x) for x in args.depths.split(",")):
                root = Path(tmp) / f"n{n}d{d}"
                generate(root, n, d, args.loaders)
                now = run(root, src, args.timeout * 10)
                if isinstance(now, str):
                    print(f"| {n} | {d} | | {now} | | | | |", flush=True)
                    continue
                row = (f"| {n} | {d} | {now['files']} | {now['link_cpu']:.3f} | {now['work']} "
                       f"| {int(now['work']) / int(now['files']):.1f} | {now['confirmed']} "
                       f"| {now['latent']} |")
                if args.baseline_src:
                    old = run(root, args.baseline_src, args.timeout)
                    row += f" {old} | |" if isinstance(old, str) else \
                        f" {old['link_cpu']:.3f} | {old['confirmed']} |"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
