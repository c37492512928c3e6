"""What the engine reports, and what the fixer needs to rewrite it (typed: the fixer and its
verification read these fields, never the message text)."""

from __future__ import annotations

from typing import Literal, Optional

from .facts import Span
from .records import field, record

# Where the handle lives, which picks the rewrite:
# "instance": created in a method and kept on self (WS101/WS111/WS201);
# "module": a module-level variable (WS102/WS112); "class": a class attribute (WS103/WS113);
# "passed": created by the caller and passed to the constructor (WS104, not rewritten);
# "holder" (inside a holder object the dataset keeps), "returned" (returned by a function the
# dataset calls): rewritten when `via` names the call's target (the dataset's statement making
# it moves into the opener), else not; "cache" (a process-global handle cache): rewritten when
# `cache` says where the container is and what fills it (keyed by the process: fix/cachefix).
# The remedies (WS3xx): "worker-init-only" (WS301/WS302: the handle is made only by a
# worker_init_fn), "unguarded-lazy" (WS303: a lazy open without a process check).
FixKind = Literal["instance", "module", "class", "passed", "holder", "returned", "cache",
                  "worker-init-only", "unguarded-lazy"]


@record(frozen=True)
class CacheFill:
    """A process-global handle cache (a "cache" plan): the container and the function filling
    it, both in the finding's file."""

    owner: str  # qualified name of the class whose attribute it is; "" for a module variable
    container: str  # the attribute or module variable: "zip_bank"
    filler: str  # the method (of `owner`) or module-level function filling it: "get_zipfile"


@record(frozen=True)
class FixPlan:
    """What the fixer needs to rewrite a finding (filled in by the rules, used by `fix`)."""

    kind: FixKind
    handle: str  # qualified constructor name, a registry key: "sqlite3.connect"
    class_qualname: str = ""  # the class holding it (a module handle: a class reading it)
    attr: str = ""  # the attribute (or module variable) holding it
    # every attribute the same creation ends up in (`f = h5py.File(p)`, `self.a = f["a"]`,
    # `self.b = f["b"]` → ("a", "b")); `attr` is the first
    attrs: tuple[str, ...] = ()
    method: str = ""  # the creating method ("" for class and module handles)
    loaders: tuple[tuple[str, int, int], ...] = ()  # (path, line, col) of loaders to wire
    # why loaders using the dataset were found but none is to be wired ("" when none was found)
    unwired: str = ""
    # "returned"/"holder": the call in `method` of `class_qualname` that makes the handle
    # (`self._open_env(p)`, `make_client()`, `Reader(p)`) and what it calls ("self._open_env",
    # the qualified function or holder class); for a holder, `attr` is the dataset's attribute
    via: str = ""
    call: Optional[Span] = None
    # "worker-init-only": (path, line, col) of the worker_init_fn (its `def`, or the lambda)
    # that creates the handle; `method` is its qualified name ("" for a lambda)
    worker_init: Optional[tuple[str, int, int]] = None
    cache: Optional[CacheFill] = None  # "cache": the container and its filler

    @property
    def holding_attrs(self) -> tuple[str, ...]:
        return self.attrs or ((self.attr,) if self.attr else ())


@record(frozen=True)
class Finding:
    path: str
    span: Span
    code: str
    message: str
    plan: Optional[FixPlan] = field(default=None, compare=False)
    fixable: Optional[bool] = field(default=None, compare=False)  # None: not determined
    # A notebook's finding, as reported: its 1-based cell, the span counted within the cell
    # (the engine and fixer see the joined module and leave this None; see notebook.in_cells).
    cell: Optional[int] = field(default=None, compare=False)
    # What the finding is about, from its plan (`identity()`); kept when the plan is dropped
    # (a finding the fix was not asked for: `replace(finding, plan=None)`)
    subject: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        plan = self.plan
        if plan is not None and not self.subject:
            about: tuple[str, ...] = (plan.kind, plan.handle, plan.class_qualname, plan.attr)
            if plan.worker_init is not None:  # a remedy: which worker_init_fn makes it
                about += (plan.method,)
            object.__setattr__(self, "subject", about)

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def col(self) -> int:
        return self.span.col

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.span.line, self.span.col, self.code)

    def identity(self) -> tuple[str, ...]:
        """What the finding is about, independent of where it sits in the file (lines move
        when code is rewritten): used to match findings before and after a fix. Typed fields
        (`subject`); only a finding that never had a plan (WS001) is told by its message."""
        return (self.path, self.code) + (self.subject or (self.message,))


# A finding's identity across re-analyses: where it is and its code (the language server's
# diagnostics carry it; here rather than in fixes.py, which imports the fixer and libcst).
FindingKey = tuple[str, Span, str]


def finding_key(finding: Finding) -> FindingKey:
    return finding.path, finding.span, finding.code
