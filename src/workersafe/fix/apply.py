"""`workersafe fix`: plan every fixable finding, rewrite, verify, then write atomically.

Nothing is written unless every rewritten file parses, compiles, re-lints without the fixed
findings, is stable under a second fix, and differs from the original only inside the edited
statements and the added code."""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass, field

from ..config import Config
from ..engine import CheckResult, Engine
from ..findings import Finding
from ..source import decode
from .write import atomic_write

INSTANCE_CODES = ("WS101", "WS111", "WS201")


@dataclass
class Outcome:
    finding: Finding
    status: str  # "fixed", "unfixable", "failed"
    note: str = ""


@dataclass
class FixResult:
    new_sources: dict[str, bytes] = field(default_factory=dict)  # path → new bytes (changed only)
    outcomes: list[Outcome] = field(default_factory=list)


def run_fix(args: argparse.Namespace, config: Config, engine: Engine) -> int:
    from ..cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError
    from ..discovery import DiscoveryError

    paths = args.paths or ["."]
    if "-" in paths:
        raise UsageError("fix works on files; use `workersafe check -` for standard input")
    try:
        result = engine.check_paths(paths)
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    fixed = fix_result(engine, result, config.fix_strategy)
    if getattr(args, "diff", False):
        sys.stdout.write(render_diff(result, fixed))
        _report(fixed, sys.stderr, result)
        return EXIT_FINDINGS if fixed.new_sources else EXIT_CLEAN
    failures = write_all(result, fixed)
    _report(fixed, sys.stdout, result)
    for path, message in failures:
        print(f"{path}: not written: {message}", file=sys.stderr)
    if failures:
        return EXIT_ERROR
    remaining = [o for o in fixed.outcomes if o.status != "fixed"]
    return EXIT_FINDINGS if fixed.new_sources or remaining else EXIT_CLEAN


def fix_result(engine: Engine, result: CheckResult, strategy: str) -> FixResult:
    """Plan, rewrite and verify in memory; writes nothing."""
    from .cstguard import deep_recursion
    from .rewrite import Rewriter
    from .verify import VerificationError, verify

    # The engine analyses nesting up to parse.MAX_DEPTH; libcst's position metadata and code
    # generation recurse once per level, so the fixer needs the same room.
    rewriter = Rewriter(engine, result, strategy)
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
        note = ("not fixed: the code nests too deeply for libcst to rewrite it "
                "(RecursionError); fix it by hand")
        return FixResult({}, [Outcome(f, "failed", note) for f in result.findings
                              if f.code != "WS001"])
    return FixResult(new_bytes, outcomes)


def _failed(outcomes: list[Outcome], note: str) -> FixResult:
    for outcome in outcomes:
        if outcome.status == "fixed":
            outcome.status, outcome.note = "failed", note
    return FixResult({}, outcomes)


def render_diff(result: CheckResult, fixed: FixResult) -> str:
    chunks = []
    for path, new in sorted(fixed.new_sources.items()):
        old_source = result.sources[path]
        new_source = decode(path, new)
        chunks.extend(difflib.unified_diff(
            old_source.text.splitlines(keepends=True), new_source.text.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}"))
    text = "".join(chunks)
    return text if not text or text.endswith("\n") else text + "\n"


def write_all(result: CheckResult, fixed: FixResult) -> list[tuple[str, str]]:
    """Write dataset files before the files that import from them; report what failed."""
    failures = []
    order = sorted(fixed.new_sources, key=lambda p: ("worker_init" in _imports_added(
        result.sources[p].text, fixed.new_sources[p]), p))
    for path in order:
        try:
            atomic_write(path, result.sources[path].raw, fixed.new_sources[path])
        except OSError as exc:
            failures.append((path, exc.strerror or str(exc)))
    return failures


def _imports_added(old: str, new: bytes) -> str:
    return new.decode("utf-8", "replace") if len(new) != len(old) else ""


def _report(fixed: FixResult, stream, result: CheckResult) -> None:  # type: ignore[no-untyped-def]
    for outcome in sorted(fixed.outcomes, key=lambda o: o.finding.sort_key()):
        f = outcome.finding
        if outcome.status == "fixed":
            text = f"fixed ({outcome.note})" if outcome.note else "fixed"
        elif outcome.status == "failed":
            text = outcome.note
        else:
            text = f"not fixed: {outcome.note}"
        print(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {text}", file=stream)
    changed = len(fixed.new_sources)
    fixed_count = sum(1 for o in fixed.outcomes if o.status == "fixed")
    left = sum(1 for o in fixed.outcomes if o.status != "fixed")
    print(f"workersafe: {fixed_count} fixed in {changed} file{'s' if changed != 1 else ''}, "
          f"{left} left", file=stream)
