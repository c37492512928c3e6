"""The guard installed into torch: just before a DataLoader starts its worker processes
(`_MultiProcessingDataLoaderIter.__init__`, which every multi-process iterator, persistent or
not, runs before its first `Process.start()`), walk what the workers get and report the live
handles they would share, or the objects that will not pickle into them. torch is imported
here only, when the guard is installed."""

from __future__ import annotations

import functools
import multiprocessing
import os
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import IO, Any, Callable, Optional

from .report import GuardFinding
from .table import TypeTable
from .walk import DEFAULT_BUDGET, Hit, walk
from .where import UNSEEN, Static, shown, static_info

FORMATS = ("text", "json")
_HERE = os.path.dirname(os.path.abspath(__file__))


class GuardError(RuntimeError):
    """Raised by a strict guard before any worker starts: the dataset holds a handle the
    workers would share (or one that will not pickle into them)."""

    def __init__(self, findings: list[GuardFinding]) -> None:
        self.findings = findings
        super().__init__(
            "workersafe guard (strict): the DataLoader was stopped before any worker started: "
            + "; ".join(f"{f.code} {f.path}" for f in findings))


def start_method(loader: Any) -> str:
    context = getattr(loader, "multiprocessing_context", None)
    if context is not None:
        return str(context.get_start_method())
    # torch uses the default context (it is fixed by the loader's first Queue anyway)
    return str(multiprocessing.get_start_method())


def _loader_site() -> tuple[str, int]:
    """The first frame outside torch and the guard: where the loop over the loader is."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_HERE) and f"{os.sep}torch{os.sep}" not in name:
            return name, frame.f_lineno
        frame = frame.f_back
    return "?", 0


@dataclass
class Guard:
    strict: bool = False
    format: str = "text"
    stream: Optional[IO[str]] = None  # None: standard error
    output: Optional[str] = None  # also append each finding to this file
    static: bool = True  # say where the attribute was set (runs the engine on that file)
    budget: int = DEFAULT_BUDGET
    table: TypeTable = field(default_factory=TypeTable)
    findings: list[GuardFinding] = field(default_factory=list)  # each reported once
    raised: bool = False  # strict: a GuardError was raised
    _reported: set[tuple[str, str]] = field(default_factory=set)
    _notes: set[str] = field(default_factory=set)

    def check(self, loader: Any) -> list[GuardFinding]:
        """What workers of `loader` would share (or fail to unpickle), now."""
        workers = int(getattr(loader, "num_workers", 0) or 0)
        if workers <= 0:
            return []
        method = start_method(loader)
        pickled = method != "fork"
        # what runs in the workers: the dataset, the collate function (a callable object
        # holding a session, under fork too) and the worker_init_fn
        roots: list[tuple[Any, str]] = [(loader.dataset, "loader.dataset"),
                                        (loader.collate_fn, "loader.collate_fn"),
                                        (loader.worker_init_fn, "loader.worker_init_fn")]
        try:
            result = walk(roots, self.table, pickled=pickled,
                          worker_init_fn=None if pickled else loader.worker_init_fn,
                          budget=self.budget)
        except Exception as exc:  # noqa: BLE001 - the guard must never break the training run
            self._note(f"internal error, this loader not checked: {type(exc).__name__}: {exc}")
            return []
        if result.truncated:
            self._note(f"the dataset is larger than the walk's budget ({self.budget} objects): "
                       "objects beyond it were not checked")
        if not result.hits:
            return []
        site = _loader_site()
        return [self._finding(hit, workers, method, site) for hit in result.hits]

    def _finding(self, hit: Hit, workers: int, method: str, site: tuple[str, int]
                 ) -> GuardFinding:
        static: Optional[Static] = None  # None: not looked up (a plain object; `static=False`)
        if self.static and hit.match is not None:
            # the module named before the global (`pkg.data.CACHE['a.zip']`, a project
            # class's attribute: `pkg.data.ZipReader.zip_bank[...]`)
            module = hit.path.split(f".{hit.attr}", 1)[0] \
                if hit.where == "module" and f".{hit.attr}" in hit.path else ""
            # the class's file linked with the loader's: confirmed codes, the loader wired
            static = static_info(hit.holder_type, module, hit.attr, site[0])
        known = static or UNSEEN
        return GuardFinding(
            code=hit.code, path=hit.path, handle=hit.match.row.name if hit.match else "",
            type_name=hit.type_name, derived=bool(hit.match and hit.match.derived),
            detail=hit.state.detail, workers=workers, start_method=method,
            loader=f"{shown(site[0])}:{site[1]}" if site[1] else site[0],
            set_at=known.set_at, fix=None if static is None else
            (True if known.fixable else known.note or False))

    def reset(self) -> None:
        """Forget what was reported (each finding is reported once per guard)."""
        self.findings.clear()
        self._reported.clear()

    def before_workers(self, loader: Any) -> None:
        found = self.check(loader)
        for finding in found:
            key = (finding.code, finding.path)
            if key not in self._reported:
                self._reported.add(key)
                self.findings.append(finding)
                self._emit(finding)
        if found and self.strict:
            self.raised = True
            raise GuardError(found)

    def _note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.add(text)
            stream = self.stream or sys.stderr
            stream.write(f"workersafe guard: note: {text}\n")
            stream.flush()

    def _emit(self, finding: GuardFinding) -> None:
        line = finding.json() if self.format == "json" else finding.text()
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()
        if self.output:
            with open(self.output, "a", encoding="utf-8") as out:
                out.write(finding.json() + "\n")


_GUARD: Optional[Guard] = None
_MARK = "__workersafe_guard_original__"


def _iterator_class() -> Any:
    from torch.utils.data import dataloader

    return dataloader._MultiProcessingDataLoaderIter


def install(strict: bool = False, format: str = "text", stream: Optional[IO[str]] = None,
            output: Optional[str] = None, static: bool = True) -> Guard:
    """Check every DataLoader with workers just before its workers start, from now on in this
    process. Imports torch. Installing again replaces the settings."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    global _GUARD
    _GUARD = Guard(strict=strict, format=format, stream=stream, output=output, static=static)
    cls = _iterator_class()
    if not hasattr(cls.__init__, _MARK):
        original: Callable[..., None] = cls.__init__

        @functools.wraps(original)
        def __init__(self: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
            if _GUARD is not None:
                try:
                    _GUARD.before_workers(loader)
                except GuardError:
                    self._shutdown = True  # nothing started: torch's __del__ has nothing to stop
                    raise
            original(self, loader, *args, **kwargs)

        setattr(__init__, _MARK, original)
        cls.__init__ = __init__
    return _GUARD


def uninstall() -> None:
    """Remove the guard (torch's iterator as it was)."""
    global _GUARD
    _GUARD = None
    if "torch.utils.data.dataloader" not in sys.modules:
        return
    cls = _iterator_class()
    original = getattr(cls.__init__, _MARK, None)
    if original is not None:
        cls.__init__ = original


def current() -> Optional[Guard]:
    return _GUARD
