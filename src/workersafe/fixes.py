"""The one place the language server and the notebook writer call the fixer.

The fixer (`workersafe.fix`) plans, rewrites and verifies in memory; `rewrite` asks it for
the new text of each file, for every finding or only some, and writes nothing. The other
names of the fixer that `fix` on notebooks uses (its report, diff and writers) are imported
here too: when the fixer's API changes, this module is what changes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Optional

from .findings import Finding, finding_key
from .fix.apply import fix_result, render_diff, write_all
from .fix.apply import _report as report_outcomes
from .fix.outcome import FixResult
from .fix.write import atomic_write
from .source import SourceError, decode

if TYPE_CHECKING:
    from .engine import CheckResult, Engine

__all__ = ["FixResult", "Rewrite", "atomic_write", "finding_key", "render_diff",
           "report_outcomes", "rewrite", "write_all"]


@dataclass
class Rewrite:
    new_texts: dict[str, str] = field(default_factory=dict)  # path → new text (changed only)
    fixed: list[Finding] = field(default_factory=list)  # the findings the rewrite fixes
    # finding key (`finding_key`, or `(path,)` for a whole file) → why it was not fixed
    notes: dict[tuple[object, ...], str] = field(default_factory=dict)
    result: Optional[FixResult] = None  # the fixer's own answer (for `fix`'s report)


def rewrite(engine: "Engine", result: "CheckResult", strategy: str,
            only: Optional[Callable[[Finding], bool]] = None) -> Rewrite:
    """The fix of the findings `only` accepts (all when None), as new file texts. Findings
    not chosen stay in the check result (the fixer's re-lint expects them) without their
    fix plan, so the fixer leaves them alone."""
    if only is not None:
        chosen = [f if only(f) else replace(f, plan=None) for f in result.findings]
        result = replace(result, findings=chosen)
    fixed = fix_result(engine, result, strategy)
    texts = {}
    for path, new in fixed.new_sources.items():
        try:
            texts[path] = decode(path, new).text
        except SourceError:  # the fixer verified it decodes; never trust that blindly
            undecoded: dict[tuple[object, ...], str] = {
                finding_key(o.finding): "the fix did not decode" for o in fixed.outcomes}
            return Rewrite(notes=undecoded, result=fixed)
    done = [o.finding for o in fixed.outcomes if o.status == "fixed"] if texts else []
    notes: dict[tuple[object, ...], str] = {
        finding_key(o.finding): o.note for o in fixed.outcomes if o.status != "fixed"}
    return Rewrite(texts, done, notes, fixed)
