"""Verification of a rewrite, before anything is written: every check must pass."""

from __future__ import annotations

from collections import Counter

import libcst

from ..records import replace
from ..engine import CheckResult, Engine
from ..source import Source, SourceError, decode
from .lazyguard import unguarded_left
from .promise import PromiseBroken, check_class, check_introduced_names
from .rewrite import Rewriter


class VerificationError(Exception):
    pass


def verify(engine: Engine, result: CheckResult, rewriter: Rewriter,
           new_files: dict[str, bytes], strategy: str) -> dict[str, bytes]:
    for path, new in new_files.items():
        old = result.sources[path]
        new_source = _decoded(path, new, old)
        module = _check_parses(path, old, new_source)
        _check_line_endings(path, old, new_source)
        _check_untouched(path, old, new_source, rewriter.allowed_lines.get(path, set()))
        try:
            check_introduced_names(path, old.text, new_source.text, module)
            for fixed in rewriter.fixed_classes:
                if fixed.path == path:
                    check_class(module, engine.registry, fixed.class_name, fixed.openers,
                                fixed.methods, fixed.properties, fixed.handles,
                                dict(fixed.factories))
        except PromiseBroken as exc:
            raise VerificationError(str(exc)) from None
    new_result = _relint(engine, result, new_files, rewriter)
    problem = unguarded_left(rewriter.guarded_lazy, new_result.facts)
    if problem:
        raise VerificationError(problem)
    _check_idempotent(engine, _unasked_kept(result, new_result), strategy)
    return new_files


def _decoded(path: str, new: bytes, old: Source) -> Source:
    try:
        source = decode(path, new)
    except SourceError as exc:
        raise VerificationError(f"{path}: the new text does not decode ({exc})") from None
    if source.bom != old.bom or source.encoding != old.encoding:
        raise VerificationError(f"{path}: encoding or BOM changed")
    return source


def _check_parses(path: str, old: Source, new: Source) -> libcst.Module:
    try:
        module = libcst.parse_module(new.text)
    except libcst.ParserSyntaxError as exc:
        raise VerificationError(f"{path}: the new code does not parse ({exc.message})") from None
    if _compiles(old.text, path):
        try:
            compile(new.text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            raise VerificationError(f"{path}: the new code does not compile ({exc})") from None
    return module


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _newline_styles(text: str) -> set[str]:
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    return {name for name, count in (("crlf", crlf), ("lf", lf), ("cr", cr)) if count}


def _check_line_endings(path: str, old: Source, new: Source) -> None:
    styles = _newline_styles(old.text)
    if len(styles) == 1 and _newline_styles(new.text) - styles:
        raise VerificationError(f"{path}: line endings changed")


def _check_untouched(path: str, old: Source, new: Source, allowed: set[int]) -> None:
    """Every old line outside the edited statements is still there, unchanged and in order
    (new lines may be inserted anywhere). A blank line right below an edited statement may go
    with it (a class body's first statement removed: the body does not open with a blank)."""
    new_lines = new.text.splitlines()
    position = 0
    for number, line in enumerate(old.text.splitlines(), start=1):
        if number in allowed or (number - 1 in allowed and not line.strip()):
            continue
        while position < len(new_lines) and new_lines[position] != line:
            position += 1
        if position == len(new_lines):
            raise VerificationError(f"{path}: line {number} changed outside the edited statements")
        position += 1


def _relint(engine: Engine, result: CheckResult, new_files: dict[str, bytes],
            rewriter: "Rewriter") -> CheckResult:
    sources = dict(result.sources)
    for path, new in new_files.items():
        sources[path] = decode(path, new)
    new_result = engine.check_sources(result.files, sources)
    fixed = {(o.finding.path, o.finding.span, o.finding.code)
             for o in rewriter.outcomes if o.status == "fixed"}
    fixed_keys = Counter(f.identity() for f in result.findings
                         if (f.path, f.span, f.code) in fixed)
    before = Counter(f.identity() for f in result.findings) - fixed_keys
    new_ones = [f for f in new_result.findings if f.identity() in
                Counter(f.identity() for f in new_result.findings) - before]
    if new_ones:
        f = new_ones[0]
        raise VerificationError(f"re-lint still reports {f.code} in {f.path}: {f.message}")
    return new_result


def _unasked_kept(result: CheckResult, new_result: CheckResult) -> CheckResult:
    """`new_result` with the findings the fix was not asked for (no plan in `result`, e.g. the
    other findings of an editor's quick fix) still without their plans: a second fix is asked
    for the same findings as the first."""
    unasked = {f.identity() for f in result.findings if f.plan is None}
    findings = [replace(f, plan=None) if f.plan is not None and f.identity() in unasked else f
                for f in new_result.findings]
    return replace(new_result, findings=findings)


def _check_idempotent(engine: Engine, new_result: CheckResult, strategy: str) -> None:
    again, _ = Rewriter(engine, new_result, strategy).run()
    changed = [p for p, data in again.items() if data != new_result.sources[p].raw]
    if changed:
        raise VerificationError(f"{changed[0]}: a second fix would change it again")
