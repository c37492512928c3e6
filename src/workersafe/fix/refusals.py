"""Refusals the registry decides alone, before any rewrite is planned: `check` marks such a
finding "not fixable" without loading the rewriter (libcst and the planning cost more than the
rest of a check on a large tree), and the rewriter refuses with the same words."""

from __future__ import annotations

from ..findings import Finding
from ..registry import Registry


def known_refusal(finding: Finding, registry: Registry) -> str:
    """Why `fix` refuses the finding, when the handle's row alone says so; "" otherwise (the
    rewriter decides). A handle a worker_init_fn makes is the remedies' rewriter's."""
    plan = finding.plan
    if plan is None or plan.worker_init is not None:
        return ""
    row = registry.lookup(plan.handle)
    if row is not None and row.hangs_when_dropped_in_child:
        return (f"a forked worker hangs when it drops the parent's {plan.handle}, as a "
                "worker's own would replace it; open it on first use in `__getitem__`, never "
                "in the parent, by hand")
    return ""
