"""Per-file facts cost as a ratio to `ast.parse` of the same files (issue 26).

For each corpus, the files `workersafe check --no-cache` parses (recorded from a real run in
this process, `-j 1`), then, per file and in one process with the cyclic GC paused (as the
engine pauses it): `ast.parse`, the main walk (analysis/walker.py), the facts assembly
(extract.py and the class passes) and the remedy facts (remedies.py). Best of `--reps` for
each phase, CPU time (`time.process_time`). "facts/parse" is everything after the parse
(what `extract_facts` costs) over the parse.

    PYTHONPATH=src python bench/facts_ratio.py /tmp/wsbench/ml /work/repos/streaming --reps 5

Needs workersafe importable (this is a measurement of its internals, not of a command).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import io
import os
import subprocess
import sys
import time
import warnings
from typing import Any


def parsed_files(root: str) -> tuple[list[tuple[Any, str]], Any]:
    """(file, text) of every file a cold `check` of `root` parses, and the run's config."""
    import workersafe.parallel as parallel
    from workersafe import cli

    captured: list[tuple[list[tuple[Any, str]], Any]] = []
    original = parallel.parse_files

    def recording(files: Any, texts: Any, config: Any, jobs: int) -> Any:
        captured.append(([(f, texts[f.path]) for f in files], config))
        return original(files, texts, config, 1)

    parallel.parse_files = recording  # type: ignore[assignment]
    here = os.getcwd()
    try:
        os.chdir(root)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main(["check", ".", "--no-cache", "-j", "1"])
            except SystemExit:
                pass
    finally:
        os.chdir(here)
        parallel.parse_files = original  # type: ignore[assignment]
    if not captured:
        return [], None
    return [item for batch, _ in captured for item in batch], captured[0][1]


def measure(items: list[tuple[Any, str]], registry: Any, reps: int) -> dict[str, float]:
    """Best of `reps` per phase, CPU seconds summed over the files."""
    gc.disable()
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as parse.python_tree: invalid escapes are not ours
        return _measure(items, registry, reps, old_limit)


def _measure(items: list[tuple[Any, str]], registry: Any, reps: int, old_limit: int
             ) -> dict[str, float]:
    from workersafe.analysis import extract, remedies
    from workersafe.analysis.positions import Positions
    from workersafe.analysis.values import IDENTITY_WORDS
    from workersafe.analysis.walker import FactWalker

    best: dict[str, float] = {}
    clock = time.process_time
    try:
        for _ in range(reps):
            spent = dict.fromkeys(("parse", "walk", "assembly", "remedies", "extract_facts"), 0.0)
            for file, text in items:
                t0 = clock()
                tree = ast.parse(text)
                t1 = clock()
                walker = FactWalker(file.path, file.module, file.is_package, registry,
                                    Positions(text))
                walker.ev.identity_possible = any(w in text for w in IDENTITY_WORDS)
                walker.walk(tree)
                t2 = clock()
                extract._facts(walker, {walker.state.qual(n.name): n for n in tree.body
                                        if isinstance(n, ast.ClassDef)})
                t3 = clock()
                _remedies(remedies, tree, text, walker)
                t4 = clock()
                extract.extract_facts(tree, text, file.path, file.module, file.is_package,
                                      registry)
                t5 = clock()
                for key, value in (("parse", t1 - t0), ("walk", t2 - t1), ("assembly", t3 - t2),
                                   ("remedies", t4 - t3), ("extract_facts", t5 - t4)):
                    spent[key] += value
                del tree, walker
            for key, value in spent.items():
                best[key] = min(best.get(key, value), value)
    finally:
        sys.setrecursionlimit(old_limit)
        gc.enable()
    return best


def _remedies(remedies: Any, tree: ast.Module, text: str, walker: Any) -> Any:
    """The remedy pass alone, with the arguments this version's extract.py gives it."""
    code = getattr(remedies.remedy_facts, "__code__", None)  # none when compiled (mypyc)
    names = code.co_varnames[:code.co_argcount] if code is not None else ("self_uses",)
    if "self_uses" not in names:
        return remedies.remedy_facts(tree, walker.state, walker.ev, walker.classes)
    return remedies.remedy_facts(
        tree, walker.state, walker.ev, walker.classes, walker.self_uses,
        any(w in text for w in remedies.PROCESS_WORDS), "get_worker_info" in text)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    print("| corpus | files parsed | MB | ast.parse | walk | assembly | remedies | "
          "extract_facts | facts/parse |")
    print("|---|---|---|---|---|---|---|---|---|")
    if len(args.roots) > 1:  # one process per corpus: a run leaves caches behind
        for root in args.roots:
            done = subprocess.run([sys.executable, __file__, root, "--reps", str(args.reps)],
                                  stdout=subprocess.PIPE, text=True, check=False)
            print(done.stdout.splitlines()[-1] if done.stdout else f"| {root} | failed |")
            sys.stdout.flush()
        return 0
    for root in args.roots:
        items, config = parsed_files(root)
        if not items:
            print(f"| {root} | 0 | | | | | | | |")
            continue
        items = [(f, t) for f, t in items if _parses(t)]  # WS001 files: no facts to time
        best = measure(items, config.registry(), args.reps)
        size = sum(len(t.encode()) for _, t in items) / 1e6
        print(f"| {root} | {len(items)} | {size:.2f} | {best['parse']:.3f} s | "
              f"{best['walk']:.3f} s | {best['assembly']:.3f} s | {best['remedies']:.3f} s | "
              f"{best['extract_facts']:.3f} s | **{best['extract_facts'] / best['parse']:.2f}x** |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
