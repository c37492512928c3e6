"""A guard finding, as text and as JSON: the rule code, the attribute path, what the handle is
and what the parent did with it, the loader's workers and start method, where the attribute
was set (if the static analysis of that file knows), and whether `workersafe fix` applies."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from ..ruletable import BY_CODE

FIXABLE = "`workersafe fix` rewrites this"
UNSEEN = "the linter does not see this statically: open it per worker by hand"


@dataclass(frozen=True)
class GuardFinding:
    code: str
    path: str  # `loader.dataset.dataset.session`
    handle: str  # the registry's constructor (`requests.Session`), or "" (not a handle)
    type_name: str  # the live object's class
    derived: bool  # derived from a handle (a cursor, a transaction, an HDF5 dataset)
    detail: str  # what the parent did with it (open connections, a file position, ...)
    workers: int
    start_method: str
    loader: str  # where the loader started: `train.py:42`
    set_at: Optional[str] = None  # `ds.py:12` when the static analysis of the file knows it
    # the fixer's verdict on the statement at `set_at` (planned and verified in memory): True
    # it rewrites it, a string why not, False the linter does not see it, None not asked
    fix: "bool | str | None" = None

    @property
    def summary(self) -> str:
        rule = BY_CODE.get(self.code)
        return rule.summary if rule else ""

    @property
    def what(self) -> str:
        kind = "derived from a handle" if self.derived else "a handle"
        made = f", made by {self.handle}" if self.handle else ""
        return f"{self.type_name} ({kind}{made})" if self.handle else self.type_name

    def text(self) -> str:
        if self.code == "WS201":
            why = (f"will not pickle into {self.start_method} workers: {self.what}"
                   + (f", {self.detail}" if self.detail and not self.handle else "")
                   + (f"; {self.detail}" if self.detail and self.handle else ""))
        else:
            why = (f"shared by {self.workers} {self.start_method} workers: {self.what}"
                   + (f"; {self.detail}" if self.detail else ""))
        lines = [f"workersafe guard: {self.code} {self.path} {why}"]
        lines.append(f"    loader started at {self.loader} (num_workers={self.workers}, "
                     f"start method {self.start_method})")
        if self.set_at:
            lines.append(f"    set at {self.set_at}")
        lines.append(f"    {self.summary} {self.fix_text}".rstrip())
        return "\n".join(lines)

    @property
    def fix_text(self) -> str:
        if self.fixable:
            return FIXABLE
        if not self.handle or self.fix is None:
            return ""
        if isinstance(self.fix, str):
            return f"`workersafe fix` cannot rewrite this: {self.fix}"
        return f"({UNSEEN}, `workersafe rule {self.code}`)"

    @property
    def fixable(self) -> bool:
        """`workersafe fix` rewrites it: the fixer said so for the statement the linter
        reports (not asked: the rule has a fix)."""
        if not self.handle:
            return False
        if self.fix is not None:
            return self.fix is True
        rule = BY_CODE.get(self.code)
        return bool(rule and rule.fix)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code, "path": self.path, "handle": self.handle,
            "type": self.type_name, "derived": self.derived, "detail": self.detail,
            "num_workers": self.workers, "start_method": self.start_method,
            "loader": self.loader, "set_at": self.set_at, "fixable": self.fixable,
            "not_fixable_because": self.fix if isinstance(self.fix, str) else None,
            "message": self.text().splitlines()[0].removeprefix("workersafe guard: "),
        }

    def json(self) -> str:
        return json.dumps({"workersafe_guard": self.as_dict()})
