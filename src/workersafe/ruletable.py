"""The one table of rule codes: what the rules, the fixer, the reports, `workersafe rule`, the
docs test and select/ignore know about each code.

Adding a rule touches this table, the rule's logic (`rules.py`), its doc file
(`docs/<code>.md`, titled `# <code>: <name>`, its first sentence of "What it does" equal to
`summary`) and its fixtures; nothing else. Plain data: no import of the analysis."""

from __future__ import annotations

from typing import Literal, Optional

from .records import record

# The rewrite `workersafe fix` applies (the kinds of `FixPlan.kind` it can fix):
# "instance": the creation moves into a per-worker `open_handles()` (worker-init or lazy);
# "module": a module-level handle becomes a per-process accessor;
# "class": a class attribute becomes a per-process instance attribute (lazy);
# "worker-init-only": the handle a worker_init_fn makes is opened by the dataset instead;
# "unguarded-lazy": the lazy open gains a process check.
FixKind = Literal["instance", "module", "class", "worker-init-only", "unguarded-lazy"]
Level = Literal["error", "warning"]

# The prefix `select` has by default: a rule that is off by default needs a longer one.
DEFAULT_SELECT = "WS"


@record(frozen=True)
class Rule:
    code: str
    name: str  # the slug: the doc's title, SARIF's rule name
    summary: str  # one sentence: `workersafe rule --all`, SARIF's shortDescription
    fix: Optional[FixKind]  # the rewrite that fixes it; None: no automatic fix
    fix_does: str  # what the fix does, in a few words
    latent: Optional[str] = None  # the code reported when no DataLoader using the dataset is found
    default_on: bool = True  # off: reported only when `select` names it (`WS3`, `WS301`)
    level: Level = "error"  # SARIF level and GitHub annotation kind


RULES: tuple[Rule, ...] = (
    Rule("WS001", "unreadable-file",
         "A file workersafe could not read, decode or parse.",
         None, "nothing: the file is left as it is", level="warning"),
    Rule("WS101", "handle-created-in-init",
         "A handle created in a Dataset's `__init__` is shared by its workers.",
         "instance", "creates the handle per worker (`open_handles()`, wired into the loader)",
         latent="WS111"),
    Rule("WS102", "module-level-handle",
         "A module-level handle used by a Dataset is shared by its workers.",
         "module", "turns the handle into a per-process accessor `get_<name>()`; keys a "
         "process-global cache by the process in the function filling it",
         latent="WS112"),
    Rule("WS103", "class-attribute-handle",
         "A handle created in a Dataset's class body is shared by its workers.",
         "class", "makes the class attribute a lazy per-process instance attribute; keys a "
         "class-level cache by the process in the method filling it",
         latent="WS113"),
    Rule("WS104", "handle-passed-to-constructor",
         "A handle passed to a Dataset's constructor is shared by its workers.",
         None, "nothing: the constructor's callers must change by hand"),
    Rule("WS111", "latent-handle-created-in-init",
         "WS101's pattern (handle made in `__init__`), with no DataLoader found.",
         "instance", "as WS101, always lazy (no loader to wire)"),
    Rule("WS112", "latent-module-level-handle",
         "WS102's pattern (module-level handle), with no DataLoader found.",
         "module", "as WS102"),
    Rule("WS113", "latent-class-attribute-handle",
         "WS103's pattern (handle in the class body), with no DataLoader found.",
         "class", "as WS103"),
    Rule("WS201", "unpicklable-handle-under-spawn",
         "A handle that does not pickle, in a dataset loaded by spawn workers.",
         "instance", "as WS101; `__getstate__`/`__setstate__` drop and reopen the handle"),
    Rule("WS301", "handle-only-in-worker-init",
         "A handle a Dataset uses is None after `__init__` and created only by a worker_init_fn.",
         "worker-init-only", "moves the creation into an opener `__init__` calls, re-run per "
         "worker (as WS101); the worker_init_fn is chained, or unwired if that was all it did",
         latent="WS311"),
    Rule("WS302", "worker-init-misses-wrapper",
         "A worker_init_fn sets a handle on `get_worker_info().dataset`, which is a wrapper.",
         "worker-init-only", "as WS301: the dataset opens the handle itself, and the fix's "
         "worker_init_fn reaches it through wrappers", latent="WS312"),
    Rule("WS303", "parent-opens-lazy-handle",
         "A lazily opened handle without a process check is opened by the parent first.",
         "unguarded-lazy", "adds a process check to the lazy open: reopened when `os.getpid()` "
         "changes; a handle that does not pickle is left out of the pickle", latent="WS313"),
    Rule("WS311", "latent-handle-only-in-worker-init",
         "WS301's pattern, with no main-process use of the dataset found.",
         "worker-init-only", "as WS301"),
    Rule("WS312", "latent-worker-init-misses-wrapper",
         "WS302's pattern, with no DataLoader using the worker_init_fn found.",
         "worker-init-only", "as WS302", default_on=False),
    Rule("WS313", "latent-parent-opens-lazy-handle",
         "WS303's pattern, with no parent use before a forking DataLoader found.",
         "unguarded-lazy", "as WS303", default_on=False),
)

BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
UNREADABLE = "WS001"  # the engine's code for a file it could not analyse


def latent_of(code: str) -> Optional[str]:
    """The latent twin of a confirmed code (WS101 → WS111), if it has one."""
    rule = BY_CODE.get(code)
    return rule.latent if rule else None


def codes_fixed_as(kind: FixKind) -> tuple[str, ...]:
    """The codes the fixer rewrites with `kind` (e.g. "module" → WS102, WS112)."""
    return tuple(rule.code for rule in RULES if rule.fix == kind)


def level_of(code: str) -> Level:
    rule = BY_CODE.get(code)
    return rule.level if rule else "error"


def default_on(code: str) -> bool:
    """Codes not in the table (a future plugin's) count as on."""
    rule = BY_CODE.get(code)
    return rule.default_on if rule else True
