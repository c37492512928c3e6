"""What the fixer decided to move for one handle, or why it refuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst


class Unfixable(Exception):
    """The fix would not be safe; the message says why (shown to the user)."""


@dataclass
class AttrPlan:
    """What moves for one handle: the statements of the creating method that create, derive
    and configure it, and the attributes they leave the handle (and its derived objects) in."""

    attr: str
    handle: str
    method: cst.FunctionDef
    statements: list[cst.BaseStatement]  # in their order in the method
    attrs: list[str]  # attributes holding the handle or objects derived from it
    imports: list[cst.BaseStatement] = field(default_factory=list)  # function-local imports
    renames: dict[str, str] = field(default_factory=dict)  # `__init__` local → self attribute
    class_statement: Optional[cst.BaseStatement] = None  # a class attribute (WS103) instead
    # the class body's statements configuring it after the creation (moved with it)
    class_configures: list[cst.BaseStatement] = field(default_factory=list)
    keeps: dict[str, str] = field(default_factory=dict)  # local → new self attribute to store
    # drop the old handle first: the library opens a file once per process (lmdb, h5py)
    close_first: bool = False
    moved_imports: list[cst.BaseStatement] = field(default_factory=list)
    # other attributes the moved statements set (`self.lengths`): the parent needs them, so
    # even the lazy strategy runs the opener in `__init__`
    results: list[str] = field(default_factory=list)
    # plain locals the moved statements bind and the rest of the method reads: the opener
    # keeps them on self (local → attribute, chosen with the class's names) and the method
    # reads them back after calling it
    exports: dict[str, str] = field(default_factory=dict)
    # calls of the project's code that make the handle (a factory, a holder class), as the
    # module spells them → the handle's constructor (see fix/factories.py)
    factories: dict[str, str] = field(default_factory=dict)
    opener_name: str = ""  # when the usual name is the factory's own (`self._open_env(p)`)
    # statements of the method left in place that a moved statement after them reads
    # (`self.name = cfg.name` between `c = Client()` and `self.b = c.bucket(self.name)`):
    # they run before the opener, in their order
    hoisted: list[cst.BaseStatement] = field(default_factory=list)
    # other methods' `self.<attr> = None` (method: statement), left as they are by the
    # worker-init opener; the lazy strategy refuses them (its property has no setter)
    nulled: list[str] = field(default_factory=list)

    @property
    def opener(self) -> str:
        return self.opener_name or f"_open_{self.attrs[0].lstrip('_')}"
