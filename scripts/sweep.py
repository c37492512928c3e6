#!/usr/bin/env python
"""Whole-tree sweep: `workersafe check` over every .py/.pyi file of an installed
site-packages (torch included: over 1M lines), as a user runs it (a subprocess), and checks
that nothing crashed:

- exit code 0 or 1 exactly as findings dictate, never 2 for a bad file;
- nothing on stderr but the `--stats` line (no traceback, no internal error);
- every file discovered, each unparsable file reported once (WS001) with a clear reason;
- in `--no-prefilter` mode every file went through libcst and the fact extraction.

    python scripts/sweep.py                      # prefiltered, all of site-packages
    python scripts/sweep.py --no-prefilter --subset torch/utils torch/nn
    python scripts/sweep.py --no-prefilter --sample 400
    python scripts/sweep.py --full               # both modes over everything (slow: minutes)

Prints the figures (files, lines, candidates, parse failures, findings, wall and CPU time)
and every finding; exits 1 when a check failed. The tests in tests/test_reliability_sweep.py
call `sweep()` directly."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

WS001_REASONS = ("syntax error: ", "too deeply nested to analyse", "file contains NUL bytes",
                 "cannot decode as ", "cannot read: ", "cannot determine encoding",
                 "too large to analyse")
# Every file, nothing excluded (site-packages has directories named `build`), no cache.
CONFIG = "[tool.workersafe]\nexclude = []\ncache = false\n"


@dataclass
class Sweep:
    mode: str
    targets: list[str]
    returncode: int = -1
    files: int = 0
    lines: int = 0
    stats: dict = field(default_factory=dict)
    findings: list[dict] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0
    stderr: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def parse_failures(self) -> list[dict]:
        return [f for f in self.findings if f["code"] == "WS001"]

    @property
    def real_findings(self) -> list[dict]:
        return [f for f in self.findings if f["code"] != "WS001"]

    def summary(self) -> str:
        codes: dict[str, int] = {}
        for f in self.real_findings:
            codes[f["code"]] = codes.get(f["code"], 0) + 1
        return (f"{self.mode}: {self.files:,} files, {self.lines:,} lines, "
                f"{self.stats.get('candidates', '?')} candidates, "
                f"{self.stats.get('parsed', '?')} parsed, "
                f"{len(self.parse_failures)} parse failures, "
                f"{len(self.real_findings)} findings {codes or ''}, exit {self.returncode}, "
                f"{self.wall:.1f} s wall, {self.cpu:.1f} s CPU "
                f"({self.stats.get('workers', '?')} workers)")


def site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def discovered(targets: Sequence[str]) -> list[str]:
    """The files workersafe will check (its own discovery, nothing excluded)."""
    from workersafe.discovery import discover

    return [f.path for f in discover(targets, ())]


def count_lines(paths: Sequence[str]) -> int:
    total = 0
    for path in paths:
        try:
            with open(path, "rb") as handle:
                total += handle.read().count(b"\n")
        except OSError:
            pass
    return total


def sample(root: str, count: int) -> list[str]:
    """A deterministic sample of `count` files below `root` (by hash of the relative path)."""
    files = discovered([root])
    key = (lambda p: hashlib.sha1(os.path.relpath(p, root).encode()).hexdigest())
    return sorted(sorted(files, key=key)[:count])


def sweep(targets: Sequence[str], prefilter: bool = True, jobs: int = 2,
          timeout: float = 3600) -> Sweep:
    """Run `workersafe check` over `targets` in a subprocess and check the run."""
    result = Sweep("prefiltered" if prefilter else "no-prefilter", list(targets))
    files = discovered(targets)
    result.files, result.lines = len(files), count_lines(files)
    with tempfile.TemporaryDirectory(prefix="workersafe-sweep-") as tmp:
        config = os.path.join(tmp, "pyproject.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(CONFIG)
        cmd = [sys.executable, "-m", "workersafe", "check", "--config", config, "--no-cache",
               "--format", "json", "--stats", "-j", str(jobs)]
        if not prefilter:
            cmd.append("--no-prefilter")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("WORKERSAFE_DEBUG", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.run(cmd + list(targets), capture_output=True, timeout=timeout,
                              cwd=tmp, env=env)
        result.wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result.returncode = proc.returncode
    result.stderr = proc.stderr.decode("utf-8", "replace")
    _check(result, proc.stdout.decode("utf-8", "replace"), prefilter)
    return result


def _check(result: Sweep, stdout: str, prefilter: bool) -> None:
    problems = result.problems
    lines = result.stderr.splitlines()
    stats_lines = [line for line in lines if line.startswith("{")]
    other = [line for line in lines if not line.startswith("{")]
    if other:
        problems.append("stderr: " + "\n".join(other[-40:]))
    if result.returncode not in (0, 1):
        problems.append(f"exit code {result.returncode}")
    try:
        result.findings = json.loads(stdout) if stdout.strip() else []
    except ValueError:
        problems.append(f"output is not JSON: {stdout[:500]!r}")
        return
    if stats_lines:
        result.stats = json.loads(stats_lines[-1])
    else:
        problems.append("no --stats line on stderr")
    if result.returncode in (0, 1) and result.returncode != (1 if result.findings else 0):
        problems.append(f"exit code {result.returncode} with {len(result.findings)} findings")
    if result.stats and result.stats.get("files") != result.files:
        problems.append(f"checked {result.stats.get('files')} files, discovered {result.files}")
    if not prefilter and result.stats and result.stats.get("candidates") != result.files:
        problems.append(f"--no-prefilter: {result.stats.get('candidates')} of {result.files} "
                        "files went through the parser")
    seen: dict[str, int] = {}
    for failure in result.parse_failures:
        seen[failure["path"]] = seen.get(failure["path"], 0) + 1
        message = failure["message"]
        prefix = "cannot analyse this file: "
        if not message.startswith(prefix) or not message[len(prefix):].startswith(WS001_REASONS) \
                or "internal error" in message:
            problems.append(f"unclear or internal WS001: {failure['path']}: {message}")
    problems += [f"{path}: reported {n} times" for path, n in seen.items() if n > 1]
    for finding in result.findings:
        if "internal error" in finding["message"]:
            problems.append(f"internal error: {finding['path']}: {finding['message']}")


def report(result: Sweep, root: str) -> str:
    out = [result.summary()]
    for f in result.findings:
        path = os.path.relpath(f["path"], root) if f["path"].startswith(root) else f["path"]
        out.append(f"  {path}:{f['line']}:{f['col']}: {f['code']} {f['message']}")
    out += [f"  PROBLEM: {p}" for p in result.problems]
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=site_packages(), help="default: this site-packages")
    parser.add_argument("--full", action="store_true",
                        help="both modes over the whole root (the no-prefilter one is slow)")
    parser.add_argument("--no-prefilter", action="store_true")
    parser.add_argument("--subset", nargs="+", metavar="DIR", help="directories below root")
    parser.add_argument("--sample", type=int, metavar="N", help="a deterministic sample of N files")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="write the figures here too")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    if args.subset:
        targets = [os.path.join(root, d) for d in args.subset]
    elif args.sample:
        targets = sample(root, args.sample)
    else:
        targets = [root]
    modes = [True, False] if args.full else [not args.no_prefilter]
    results = []
    for prefilter in modes:
        result = sweep(targets, prefilter=prefilter, jobs=args.jobs)
        print(report(result, root), flush=True)
        results.append(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([{"mode": r.mode, "files": r.files, "lines": r.lines, "stats": r.stats,
                        "parse_failures": r.parse_failures, "findings": r.real_findings,
                        "returncode": r.returncode, "wall": r.wall, "cpu": r.cpu,
                        "problems": r.problems} for r in results], handle, indent=2)
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
