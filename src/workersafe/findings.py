"""What the engine reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .facts import Span


@dataclass(frozen=True)
class FixPlan:
    """What the fixer needs to rewrite a finding (filled in by the rules, used by `fix`)."""

    kind: str  # "instance", "module", "class", "passed"
    class_qualname: str = ""
    attr: str = ""
    method: str = ""  # creating method
    loaders: tuple[tuple[str, int, int], ...] = ()  # (path, line, col) of loaders to wire


@dataclass(frozen=True)
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

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def col(self) -> int:
        return self.span.col

    def sort_key(self) -> tuple:
        return (self.path, self.span.line, self.span.col, self.code)
