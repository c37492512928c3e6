"""The fix of the worker_init_fn remedies (WS301/WS302 and their latent twins WS311/WS312):
the remedy is first turned into the plain shape in memory (remedyplan.py: the creation moves
into `__init__`), then the instance fix rewrites that to its robust form (an opener
`__init__` calls, re-run per worker through wrappers, dropped when pickled; or lazy).

`RemedyRewriter` is a `Rewriter` whose result is expressed against the original files: the
outcomes are the original findings', the lines it may change are the original lines, so
verification checks it like any other rewrite."""

from __future__ import annotations

import difflib
from typing import Final, Optional

from ..records import replace
from ..engine import CheckResult, Engine
from ..findings import Finding
from ..ruletable import codes_fixed_as
from ..source import decode
from .outcome import Outcome
from .plan import Unfixable
from .remedyplan import Prepass, RemedyGroup, groups_of
from .rewrite import Rewriter

KIND: Final = "worker-init-only"
REMEDY_CODES = frozenset(codes_fixed_as(KIND))


def make_rewriter(engine: Engine, result: CheckResult, strategy: str) -> Rewriter:
    """The rewriter for `result`: one that also fixes the worker_init_fn remedies when it has
    any to fix."""
    if any(f.plan is not None and f.plan.kind == KIND for f in result.findings):
        return RemedyRewriter(engine, result, strategy)
    return Rewriter(engine, result, strategy)


class RemedyRewriter(Rewriter):
    def _run(self) -> tuple[dict[str, bytes], list[Outcome]]:
        groups = groups_of(self.result.findings)
        refused: dict[int, str] = {}
        for _ in range(len(groups) + 1):
            active = [g for i, g in enumerate(groups) if i not in refused]
            answer = self._attempt(groups, active, refused)
            if answer is not None:
                return answer
        raise AssertionError("every group refused, yet the attempt did not settle")

    def _attempt(self, groups: list[RemedyGroup], active: list[RemedyGroup],
                 refused: dict[int, str]) -> Optional[tuple[dict[str, bytes], list[Outcome]]]:
        """One try with the `active` groups; None when a group had to be refused (`refused`
        then says why, and the caller tries again without it)."""
        sources = self.result.sources
        prepass = Prepass({p: s.raw for p, s in sources.items()},
                          {p: s.text for p, s in sources.items()}, self._class_homes(),
                          {p: dict(f.imports) for p, f in self.result.facts.items()})
        planned: list[RemedyGroup] = []
        for group in active:
            try:
                prepass.plan(group)
            except Unfixable as exc:
                refused[groups.index(group)] = str(exc)
                return None
            planned.append(group)
        texts = prepass.render()
        middle = self._middle_result(texts)
        inner = Rewriter(self.engine, middle, self.strategy)
        # a creation the remedy moved into `__init__` is not one the class made there: its
        # lazy reopen elsewhere is no reason to keep `__init__` as it now is
        inner.moved_creations = {(qualname, attr) for group in planned
                                 for qualname, attrs in group.attrs.items() for attr in attrs}
        new_texts, inner_outcomes = inner.run()
        verdicts = self._group_verdicts(planned, middle, inner_outcomes)
        failed = [(g, why) for g, why in verdicts.items() if why is not None]
        if failed:
            group, why = failed[0]
            refused[groups.index(group)] = why
            return None
        outcomes = self._outcomes(groups, refused, inner_outcomes, middle)
        self.outcomes = outcomes
        self.fixed_classes = inner.fixed_classes
        out: dict[str, bytes] = {}
        for path in set(texts) | set(new_texts):
            data = new_texts.get(path) or texts[path]
            if data != self.result.sources[path].raw:
                out[path] = data
            self.allowed_lines[path] = self._allowed(
                path, middle, inner.allowed_lines.get(path, set()),
                prepass.files[path].touched if path in prepass.files else set())
        return out, outcomes

    # --- the plain shape, checked again ---------------------------------------------------------

    def _class_homes(self) -> dict[str, tuple[str, str]]:
        return {name: (home.path, self.project.classes[name].name)
                for name, home in self.project.class_file.items()
                if name in self.project.classes}

    def _middle_result(self, texts: dict[str, bytes]) -> CheckResult:
        """The check of the plain shape. Only the findings the original run would fix keep
        their plans (the fix of some findings, e.g. the editor's quick fix, stays that)."""
        sources = dict(self.result.sources)
        for path, text in texts.items():
            sources[path] = decode(path, text)
        middle = self.engine.check_sources(self.result.files, sources)
        wanted = {f.identity() for f in self.result.findings if f.plan is not None}
        chosen = [f if f.plan is None or f.identity() in wanted or self._converted(f)
                  else replace(f, plan=None) for f in middle.findings]
        return replace(middle, findings=chosen)

    def _converted(self, finding: Finding) -> bool:
        """A finding of the plain shape that one of the remedies became."""
        plan = finding.plan
        if plan is None or plan.kind == KIND:
            return False
        return any(f.plan is not None and f.plan.kind == KIND
                   and f.plan.class_qualname == plan.class_qualname
                   and f.plan.attr in plan.holding_attrs for f in self.result.findings)

    def _group_verdicts(self, groups: list[RemedyGroup], middle: CheckResult,
                        inner: list[Outcome]) -> dict[RemedyGroup, Optional[str]]:
        """Per group: None when the plain shape it became was fixed, else why not."""
        verdicts: dict[RemedyGroup, Optional[str]] = {}
        for group in groups:
            mine = [o for o in inner if _of_group(o.finding, group)]
            left = [f for f in middle.findings if f.plan is not None and f.plan.kind == KIND
                    and _same_handle(f, group)]
            if left:
                verdicts[group] = (f"after moving the creation into __init__, {left[0].code} "
                                   "is still reported: fix it by hand")
            elif not mine:
                attrs = {a for found in group.attrs.values() for a in found}
                other = next((o for o in inner if o.finding.plan is not None
                              and attrs & set(o.finding.plan.holding_attrs)), None)
                verdicts[group] = ("moved into __init__, the handle would still not be fixed "
                                   f"({other.note})" if other is not None and other.note else
                                   "after moving the creation into __init__, the handle is not "
                                   "recognised there: fix it by hand")
            else:
                bad = next((o for o in mine if o.status != "fixed"), None)
                verdicts[group] = bad.note if bad is not None else None
        return verdicts

    def _outcomes(self, groups: list[RemedyGroup], refused: dict[int, str],
                  inner: list[Outcome], middle: CheckResult) -> list[Outcome]:
        """The inner outcomes told about the original findings."""
        originals = {f.identity(): f for f in self.result.findings}
        outcomes: list[Outcome] = []
        for index, group in enumerate(groups):
            if index in refused:
                outcomes += [Outcome(f, "unfixable", refused[index]) for f in group.findings]
                continue
            note = next((o.note for o in inner if _of_group(o.finding, group)), "")
            note += f"; {group.note}" if group.note else ""
            outcomes += [Outcome(f, "fixed", note) for f in group.findings]
        decided = {id(o.finding) for o in outcomes}
        for outcome in inner:
            found = originals.get(outcome.finding.identity())
            if found is None or id(found) in decided:
                continue
            if found.plan is not None and found.plan.kind == KIND:
                continue
            decided.add(id(found))
            outcomes.append(Outcome(found, outcome.status, outcome.note))
        left = {f.identity() for f in middle.findings}
        for finding in self.result.findings:  # WS001 and the like, decided by no one yet
            if id(finding) in decided or any(g.findings.count(finding) for g in groups):
                continue
            if finding.code in REMEDY_CODES and finding.identity() not in left:
                # not chosen (the editor's quick fix of its twin), but fixed all the same
                outcomes.append(Outcome(finding, "fixed", "with the worker_init_fn's fix"))
            else:
                outcomes.append(Outcome(finding, "unfixable", "no automatic fix for this finding"))
        return outcomes

    def _allowed(self, path: str, middle: CheckResult, inner_allowed: set[int],
                 touched: set[int]) -> set[int]:
        """The original lines this rewrite may change: those the first step edited, and those
        the instance fix edited (its line numbers are the plain shape's), mapped back."""
        old = self.result.sources[path].text.splitlines()
        new = middle.sources[path].text.splitlines()
        mapping: dict[int, int] = {}
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                mapping[block.b + offset + 1] = block.a + offset + 1
        return set(touched) | {mapping[line] for line in inner_allowed if line in mapping}


def _of_group(finding: Finding, group: RemedyGroup) -> bool:
    plan = finding.plan
    return plan is not None and plan.kind != KIND and any(
        plan.class_qualname == qualname and set(attrs) & set(plan.holding_attrs)
        for qualname, attrs in group.attrs.items())


def _same_handle(finding: Finding, group: RemedyGroup) -> bool:
    plan = finding.plan
    return plan is not None and plan.attr in group.attrs.get(plan.class_qualname, [])
