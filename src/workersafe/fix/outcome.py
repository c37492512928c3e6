"""What the fixer decided for each finding, and the in-memory result of a fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
