"""What the fixer decided for each finding, and the in-memory result of a fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..exitcodes import EXIT_CLEAN, EXIT_FINDINGS
from ..findings import Finding

Status = Literal["fixed", "unfixable", "failed"]


@dataclass
class Outcome:
    finding: Finding
    status: Status
    note: str = ""  # the strategy when fixed, else why not (shown to the user)


@dataclass
class FixResult:
    new_sources: dict[str, bytes] = field(default_factory=dict)  # path → new bytes (changed only)
    outcomes: list[Outcome] = field(default_factory=list)
    # files defining a rewritten dataset class (others may import its worker_init_fn)
    providers: set[str] = field(default_factory=set)

    def exit_code(self, diff_only: bool) -> int:
        """1 while a finding is left unfixed, or when `--diff` would change a file (as
        `ruff check --fix` and `ruff check --diff`): a `fix` that wrote every fix exits 0."""
        left = any(o.status != "fixed" for o in self.outcomes)
        return EXIT_FINDINGS if left or (diff_only and self.new_sources) else EXIT_CLEAN
