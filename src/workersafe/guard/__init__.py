"""`workersafe guard`: the runtime check. When a DataLoader with workers starts them, the
dataset is walked for live handles the workers would share (or objects that will not pickle
into spawn/forkserver workers), reported with the rule code the linter would give.

    import workersafe.guard
    workersafe.guard.install(strict=False)

The linter never imports this package; it imports torch only in `install()`."""

from __future__ import annotations

from .hook import Guard, GuardError, current, install, uninstall
from .report import GuardFinding

__all__ = ["Guard", "GuardError", "GuardFinding", "current", "install", "uninstall"]
