"""workersafe benchmark: prepare corpora, time A/B pairs, write bench/RESULTS.md.

Usage: ``.venv/bin/python bench/run.py [--reps 5] [--flake8-reps 2] [--only KEY,...]``
(see bench/README.md). Only the standard library is needed to run this script; the tools
under test come from the main venv (``--venv``, default ``.venv``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import corpora as corpora_mod
import envs
import measure
import results
from pairs import PAIR_TITLES, Pair, Target, Tools, build_pairs

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per side (default 5)")
    p.add_argument("--flake8-reps", type=int, default=2,
                   help="repetitions for flake8 on the torch tree (~2 min per run; default 2)")
    p.add_argument("--flake8-subset", type=int, default=0, metavar="N",
                   help="run the flake8 tree pair on N evenly spaced torch files (0: all)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per side (default 1)")
    p.add_argument("--baselines-only", action="store_true",
                   help="run only the sides that do not involve workersafe (ruff, flake8 "
                        "without the plugin, bare libcst, read+search floor)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="kill a command after this many seconds (default 900); the pair "
                        "reports a timeout and its remaining repetitions are skipped")
    p.add_argument("--only", default="", help="comma-separated pair keys to run")
    p.add_argument("--skip", default="", help="comma-separated pair keys to skip")
    p.add_argument("--list", action="store_true", help="list the pair keys and exit")
    p.add_argument("--venv", type=Path, default=REPO / ".venv")
    p.add_argument("--bare-venv", type=Path, default=OUT / "venv-bare")
    p.add_argument("--work-dir", type=Path,
                   default=Path(tempfile.gettempdir()) / "workersafe-bench",
                   help="where corpora are built (wiped first; must be outside the repo)")
    p.add_argument("--worst-lines", type=int, default=50_000)
    p.add_argument("--ml-lines", type=int, default=120_000,
                   help="size of the generated ML-repositories corpus (gen_mlrepos.py)")
    p.add_argument("--baseline-src", type=Path, default=None,
                   help="the src/ folder of another workersafe version: the ml-old pair runs "
                        "it (PYTHONPATH) against the current one, side by side")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--output", type=Path, default=BENCH / "RESULTS.md")
    p.add_argument("--json", type=Path, default=OUT / "results.json",
                   help="raw samples of every run")
    return p.parse_args(argv)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    main_venv = envs.Venv(args.venv.resolve())
    work = args.work_dir.resolve()
    if corpora_mod.inside_git_worktree(work):
        log(f"--work-dir {work} is inside a git work tree: pick a folder outside it")
        return 2
    if args.list:
        print("\n".join(f"{key:20} {title}" for key, title in PAIR_TITLES.items()))
        return 0
    wanted = _selection(args)
    if wanted is None:
        return 2
    tools = _tools(main_venv, args, wanted)
    machine = results.machine_info(main_venv, tools.bare, REPO)
    log(f"preparing corpora in {work}")
    corpora = corpora_mod.prepare(work, main_venv.python, args.worst_lines, args.seed,
                                  args.flake8_subset, args.ml_lines)
    for c in dict.fromkeys((corpora.torch, corpora.torch_flake8, corpora.worst, corpora.file3k,
                            corpora.ml)):
        log(f"  {c.describe()}")
    if tools.baseline_src is not None:
        tools = dataclasses.replace(tools, baseline_src=_compiled_copy(
            tools.baseline_src, work / "baseline-src", main_venv))
    pairs = build_pairs(tools, corpora, work, args.reps, args.flake8_reps, args.warmup)
    outcomes = [run_pair(p, args.timeout) for p in pairs if wanted(p.key)]
    machine.load_after = os.getloadavg()
    derived = derive(outcomes, corpora)
    invocation = "python bench/run.py " + shlex.join(argv)
    report = results.render(machine, corpora, outcomes, derived, invocation.strip(),
                            time.perf_counter() - started)
    args.output.write_text(report, encoding="utf-8")
    _write_json(args.json, outcomes)
    print(report)
    log(f"wrote {args.output} and {args.json}")
    return 0


def _compiled_copy(src: Path, dest: Path, venv: envs.Venv) -> Path:
    """A byte-compiled copy of the baseline's sources (as the current version is compiled;
    and the baseline's own tree is left untouched)."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(venv.python), "-m", "compileall", "-q", str(dest)], check=True)
    log(f"baseline: byte-compiled copy of {src} in {dest}")
    return dest


def _selection(args: argparse.Namespace) -> Callable[[str], bool] | None:
    only = {k for k in args.only.split(",") if k}
    skip = {k for k in args.skip.split(",") if k}
    unknown = (only | skip) - PAIR_TITLES.keys()
    if unknown:
        log(f"unknown pair keys: {', '.join(sorted(unknown))} (see --list)")
        return None
    return lambda key: (not only or key in only) and key not in skip


def _tools(main_venv: envs.Venv, args: argparse.Namespace,
           wanted: Callable[[str], bool]) -> Tools:
    bare = None
    if not args.list and any(wanted(k) for k in ("flake8-plugin", "file3k-flake8-bare",
                                                 "file3k-flake8-floor")):
        bare = envs.ensure_bare_venv(main_venv, args.bare_venv.resolve(), log)
    elif args.bare_venv.exists():
        bare = envs.Venv(args.bare_venv.resolve())
    compiled = envs.byte_compile_workersafe(main_venv)
    log(f"byte-compiled workersafe in {compiled}" if compiled else "workersafe not installed")
    options = envs.workersafe_options(main_venv)
    log(f"workersafe check options: {sorted(options) if options is not None else 'CLI missing'}")
    return Tools(main_venv, bare, options, envs.flake8_has_plugin(main_venv),
                 args.baselines_only,
                 args.baseline_src.resolve() if args.baseline_src else None)


def run_pair(pair: Pair, timeout_s: float) -> results.Outcome:
    log(f"[{pair.key}] {pair.title}")
    outcome = results.Outcome(pair)
    if pair.missing:
        log(f"  A: {pair.missing}")
        if pair.b is not None and not _is_workersafe(pair.b):
            outcome.b = _run_alone(pair.b, pair.reps, pair.warmup, timeout_s)  # a baseline
        return outcome
    assert pair.a is not None and pair.b is not None
    outcome.a, outcome.b = measure.alternate(
        pair.a, pair.b, pair.reps, pair.warmup, pair.before_a, pair.before_b, pair.order,
        timeout_s, progress=log)
    if pair.probe_a and outcome.a.ok:
        outcome.stats = measure.stats_probe(pair.a, timeout_s)
    if outcome.ratio is not None:
        log(f"  A {outcome.a.median_s:.3f} s  B {outcome.b.median_s:.3f} s  "
            f"A/B {outcome.ratio:.2f}x (CPU {outcome.cpu_ratio or 0:.2f}x)  "
            f"-> {outcome.verdict()}")
    return outcome


def _run_alone(cmd: measure.Command, reps: int, warmup: int,
               timeout_s: float) -> measure.Series:
    series = measure.Series(cmd)
    for _ in range(warmup):
        measure.run_once(cmd, timeout_s)
    for rep in range(reps):
        sample = measure.run_once(cmd, timeout_s)
        series.samples.append(sample)
        log(f"  B rep {rep + 1}/{reps}: {measure.describe(sample)}")
        if sample.timed_out:
            break
    return series


def _is_workersafe(cmd: measure.Command) -> bool:
    return Path(cmd.argv[0]).name == "workersafe"


def derive(outcomes: list[results.Outcome],
           corpora: corpora_mod.Corpora) -> list[results.Derived]:
    by_key = {o.pair.key: o for o in outcomes}
    out = []
    ruff = by_key.get("torch-ruff")
    if ruff is not None:
        rss = ruff.a.peak_rss_kib * 1024 / 1e6 if ruff.a and ruff.a.ok else None
        out.append(results.Derived(
            "peak memory of workersafe check on the torch tree", rss,
            "MB", Target("<=", 150, "MB"), "torch-ruff side A (max over runs)",
            ruff.pair.missing))
    parse = by_key.get("worst-parse")
    if parse is not None:
        lines = corpora.worst.lines
        out.append(results.Derived(
            "worst case: lines/s per core (workersafe -j1)", _rate(lines, parse.a), "lines/s",
            Target(">=", 15_000, "lines/s"), "worst-parse side A", parse.pair.missing,
            _rate(lines, parse.a, cpu=True)))
        out.append(results.Derived(
            "worst case: lines/s (bare libcst parse, one process)", _rate(lines, parse.b),
            "lines/s", None, "worst-parse side B", cpu_value=_rate(lines, parse.b, cpu=True)))
    ml = by_key.get("ml-ruff") or by_key.get("ml-old")
    if ml is not None:
        lines = corpora.ml.lines
        out.append(results.Derived(
            "ML repositories: lines/s per core (workersafe -j1)", _rate(lines, ml.a), "lines/s",
            Target(">=", 60_000, "lines/s"), f"{ml.pair.key} side A", ml.pair.missing,
            _rate(lines, ml.a, cpu=True), judge_cpu=True))
    return out


def _rate(lines: int, series: measure.Series | None, cpu: bool = False) -> float | None:
    if series is None or not series.ok:
        return None
    seconds = series.median_cpu_s if cpu else series.median_s
    return lines / seconds if seconds > 0 else None


def _write_json(path: Path, outcomes: list[results.Outcome]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {o.pair.key: {"a": o.a.to_json() if o.a else None,
                         "b": o.b.to_json() if o.b else None,
                         "ratio": o.ratio, "verdict": o.verdict(), "stats": o.stats,
                         "load_at_start": o.load}
            for o in outcomes}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
