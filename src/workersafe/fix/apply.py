"""`workersafe fix`: plan every fixable finding, rewrite, verify, then write atomically.

Nothing is written unless every rewritten file parses, compiles, re-lints without the fixed
findings, is stable under a second fix, and differs from the original only inside the edited
statements and the added code."""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from libcst import ParserSyntaxError

from ..atomic import remove_stale_temps
from ..config import Config
from ..discovery import DiscoveryError
from ..engine import CheckResult, Engine
from ..exitcodes import EXIT_ERROR, UsageError
from ..parse import deep_recursion
from ..ruletable import UNREADABLE
from ..source import decode
from .outcome import FixResult, Outcome
from .remedyfix import make_rewriter
from .verify import VerificationError, verify
from .write import atomic_write


@dataclass
class FixRun:
    """What `workersafe fix` did: the verified rewrite, and what failed to be written."""

    fixed: FixResult
    diff_only: bool
    failures: list[tuple[str, str]] = field(default_factory=list)  # (path, why not written)

    @property
    def exit_code(self) -> int:
        return EXIT_ERROR if self.failures else self.fixed.exit_code(self.diff_only)


def run_fix(paths: list[str], config: Config, engine: Engine, diff: bool = False) -> FixRun:
    """Fix the files under `paths` (or, with `diff`, print the diff and write nothing),
    reporting each finding's outcome; raises UsageError for paths it cannot fix."""
    if "-" in paths:
        raise UsageError("fix works on files; use `workersafe check -` for standard input")
    try:
        result = engine.check_paths(paths)
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    fixed = fix_result(engine, result, config.fix_strategy)
    if diff:
        sys.stdout.write(render_diff(result, fixed))
        _report(fixed, sys.stderr, diff_only=True)
        return FixRun(fixed, diff_only=True)
    failures = write_all(result, fixed)
    _report(fixed, sys.stdout, diff_only=False)
    for path, message in failures:
        print(f"{path}: not written: {message}", file=sys.stderr)
    return FixRun(fixed, diff_only=False, failures=failures)


def fix_result(engine: Engine, result: CheckResult, strategy: str) -> FixResult:
    """Plan, rewrite and verify in memory; writes nothing."""
    # The engine analyses nesting up to parse.MAX_DEPTH; libcst's position metadata and code
    # generation recurse once per level, so the fixer needs the same room.
    rewriter = make_rewriter(engine, result, strategy)
    try:
        with deep_recursion():
            new_texts, outcomes = rewriter.run()
            if not new_texts:
                return FixResult({}, outcomes)
            new_bytes = verify(engine, result, rewriter, new_texts, strategy)
    except VerificationError as exc:
        return _failed(outcomes, f"fix failed verification: {exc}")
    except RecursionError:
        # From Python 3.12 the C stack has its own, fixed limit, and libcst's code generation
        # spends it on each level of a deep expression (~500 levels suffice).
        return _none_fixed(result, "not fixed: the code nests too deeply for libcst to rewrite "
                                   "it (RecursionError); fix it by hand")
    except ParserSyntaxError as exc:
        # Python's parser took the file, libcst's does not (its tokenizer differs on rare
        # whitespace, e.g. a form feed before a dedent): nothing can be rewritten safely.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        return _none_fixed(result, f"not fixed: libcst cannot parse a file this fix edits "
                                   f"({first}); fix it by hand")
    return FixResult(new_bytes, outcomes, {c.path for c in rewriter.fixed_classes})


def _none_fixed(result: CheckResult, note: str) -> FixResult:
    return FixResult({}, [Outcome(f, "failed", note) for f in result.findings
                          if f.code != UNREADABLE])


def _failed(outcomes: list[Outcome], note: str) -> FixResult:
    for outcome in outcomes:
        if outcome.status == "fixed":
            outcome.status, outcome.note = "failed", note
    return FixResult({}, outcomes)


def render_diff(result: CheckResult, fixed: FixResult) -> str:
    chunks: list[str] = []
    for path, new in sorted(fixed.new_sources.items()):
        old_source = result.sources[path]
        new_source = decode(path, new)
        chunks.extend(difflib.unified_diff(
            old_source.text.splitlines(keepends=True), new_source.text.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}"))
    text = "".join(chunks)
    return text if not text or text.endswith("\n") else text + "\n"


def write_all(result: CheckResult, fixed: FixResult) -> list[tuple[str, str]]:
    """Write dataset files before the files that import from them (a run stopped in between
    leaves no file importing a worker-init function that does not exist yet); report what
    failed. Temp files a killed earlier run left next to these files are removed first."""
    failures = []
    for directory in sorted({os.path.dirname(os.path.abspath(p)) for p in fixed.new_sources}):
        remove_stale_temps(directory)
    for path in write_order(fixed):
        try:
            atomic_write(path, result.sources[path].raw, fixed.new_sources[path])
        except OSError as exc:
            failures.append((path, exc.strerror or str(exc)))
    return failures


def write_order(fixed: FixResult) -> list[str]:
    """The changed files, those that define a fixed dataset class first, then the rest (the
    files that only import from them), each part in path order."""
    providers = fixed.providers | {o.finding.path for o in fixed.outcomes
                                   if o.status == "fixed" and o.finding.plan is not None
                                   and o.finding.plan.kind in ("instance", "class", "module")}
    return sorted(fixed.new_sources, key=lambda p: (p not in providers, p))


def _report(fixed: FixResult, stream: TextIO, diff_only: bool) -> None:
    done = "would fix" if diff_only else "fixed"
    for outcome in sorted(fixed.outcomes, key=lambda o: o.finding.sort_key()):
        f = outcome.finding
        if outcome.status == "fixed":
            text = f"{done} ({outcome.note})" if outcome.note else done
        elif outcome.status == "failed":
            text = outcome.note
        else:
            text = f"not fixed: {outcome.note}"
        print(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {text}", file=stream)
    changed = len(fixed.new_sources)
    fixed_count = sum(1 for o in fixed.outcomes if o.status == "fixed")
    left = sum(1 for o in fixed.outcomes if o.status != "fixed")
    print(f"workersafe: {fixed_count} {done} in {changed} file{'s' if changed != 1 else ''}, "
          f"{left} left", file=stream)
