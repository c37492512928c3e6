"""Linking: the facts of many files seen as one program.

`Project` is built in layers, each a module named for what it computes: `names` (modules,
imports, re-exports), `classes` (the hierarchy), `flow` (which dataset classes a value may
be: one value-flow graph solved once), `loaders` (DataLoader calls as linked), `reach`
(loaders → the classes they use, and what those keep), `starts` (start methods, entry
scripts), `returns` (what calls return), `view` (one linked view per dataset class, read
by every rule). With one file it degrades to same-file knowledge."""

from __future__ import annotations

from .classes import Methods, method_closure
from .names import DEFAULT_START_METHODS
from .reach import LoaderUse, Reach
from .starts import SPAWN_LIKE
from .view import NOT_WORKER_METHODS, PICKLING_METHODS, ClassView, Views, branch_not_taken

__all__ = ["DEFAULT_START_METHODS", "NOT_WORKER_METHODS", "PICKLING_METHODS", "SPAWN_LIKE",
           "ClassView", "LoaderUse", "Methods", "Project", "Reach", "branch_not_taken",
           "method_closure"]


class Project(Views):
    """The linked program (see the modules above for each part)."""
