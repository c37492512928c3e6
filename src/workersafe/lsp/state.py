"""The language server's view of a workspace: the files `workersafe check .` would check, their
text on disk (re-read when it changes), the editor's unsaved buffers over them, and the last
analysis. No LSP types here: positions are the engine's (1-based lines, code-point columns)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..cache import FactsCache
from ..config import Config, ConfigError, discover_config
from ..discovery import DiscoveryError, SourceFile, discover, module_name
from ..engine import CheckResult, Engine
from ..facts import FileFacts
from ..findings import Finding, FindingKey, finding_key
from ..paths import CACHE_DIR_NAME
from ..reading import read_source
from ..source import Source, SourceError, decode

if TYPE_CHECKING:
    from ..fixes import Rewrite

# The fixer (and libcst) is imported when a fix is asked for, not when the server starts.

log = logging.getLogger("workersafe.lsp")
# A workspace of at least this many files answers an opened file first with that file alone
# (as flake8 sees it), then with the linked analysis of the workspace, which takes seconds on
# a large repository: the editor shows the file's own findings within the parse floor.
QUICK_FILES = int(os.environ.get("WORKERSAFE_LSP_QUICK_FILES", "100"))
# A file's text as read: (modification stamp, source or None, why it cannot be read or None)
_Entry = tuple[tuple[int, int], Optional[Source], Optional[str]]


@dataclass
class Analysis:
    generation: int  # bumped by every change of a buffer or file
    result: CheckResult
    by_path: dict[str, list[Finding]] = field(default_factory=dict)


class Workspace:
    def __init__(self, root: Optional[str], cache: bool = True) -> None:
        self.root = os.path.abspath(root) if root else None
        self.cache = cache
        self.buffers: dict[str, str] = {}  # path → unsaved text of an open document
        self.generation = 0
        self._files: Optional[list[SourceFile]] = None
        self._disk: dict[str, _Entry] = {}
        self._analysis: Optional[Analysis] = None
        self._fixes: dict[tuple[int, str, Optional[FindingKey]], Rewrite] = {}
        self.reload_config()

    # --- configuration and files -------------------------------------------------------------

    def reload_config(self) -> None:
        try:
            self.config: Config = discover_config([self.root or os.getcwd()])
        except ConfigError as exc:  # keep serving, with the defaults, and say why
            log.warning("workersafe: configuration error: %s (using the defaults)", exc)
            self.config = Config()
        cache_dir = None
        if self.cache and self.config.cache and self.root:
            cache_dir = os.path.join(self.root, CACHE_DIR_NAME)
        # One process: parsing in a pool would fork the server (and its threads).
        self.engine = Engine(self.config, link=True, jobs=1, cache_dir=cache_dir)
        self.engine.cache = _Kept(self.engine.cache)
        self.changed(files=True)

    def changed(self, files: bool = False) -> None:
        """Something changed: a buffer, or (files=True) the set of files on disk."""
        self.generation += 1
        self._fixes.clear()
        if files:
            self._files = None

    def open(self, path: str, text: str) -> None:
        self.buffers[path] = text
        if self._files is not None and path not in {f.path for f in self._files}:
            self._files = None
        self.changed()

    def update(self, path: str, text: str) -> None:
        if self.buffers.get(path) != text:
            self.buffers[path] = text
            self.changed()

    def close(self, path: str) -> None:
        if self.buffers.pop(path, None) is not None:
            self.changed()

    def files(self) -> list[SourceFile]:
        if self._files is None:
            found: dict[str, SourceFile] = {}
            if self.root:
                excludes = self.config.exclude + self.config.extend_exclude
                try:
                    found = {f.path: f for f in discover([self.root], excludes)}
                except DiscoveryError:
                    found = {}
            for path in self.buffers:  # open files outside the workspace (or excluded) too
                if path not in found and path.endswith((".py", ".pyi")):
                    found[path] = _lone_file(path, self.root)
            self._files = sorted(found.values(), key=lambda f: f.path)
        return self._files

    # --- analysis ----------------------------------------------------------------------------

    def analysis(self) -> Analysis:
        if self._analysis is None or self._analysis.generation != self.generation:
            self._refresh_disk()
            self._analysis = self._analyse()
        return self._analysis

    def _analyse(self) -> Analysis:
        files = self.files()
        sources: dict[str, Source] = {}
        errors = []
        for file in files:
            _, source, error = self._entry(file.path)
            if source is not None:
                sources[file.path] = source
            elif error is not None:  # a WS001, as `workersafe check` reports it
                errors.append(self.engine.error_finding(file.path, error))
        result = self.engine.check_sources(files, sources, errors)
        by_path: dict[str, list[Finding]] = {}
        for finding in result.findings:
            by_path.setdefault(finding.path, []).append(finding)
        return Analysis(self.generation, result, by_path)

    def answers_quickly(self) -> bool:
        """No linked analysis yet, and the workspace is large enough for it to take a while:
        the server answers an opened file with `alone` first."""
        return self._analysis is None and len(self.files()) >= QUICK_FILES

    def alone(self, path: str) -> list[Finding]:
        """The findings of `path` from its own text alone (same-file knowledge: what
        `workersafe check` of that one file reports), without reading or linking the rest."""
        _, source, error = self._entry(path)
        if source is None:
            return [self.engine.error_finding(path, error)] if error is not None else []
        module = next((f.module for f in self.files() if f.path == path), None)
        if module is None:
            module = _lone_file(path, self.root).module
        return self.engine.check_text(path, source.text, module)

    def source(self, path: str) -> Optional[Source]:
        """The text the analysis uses: the unsaved buffer, else the file on disk; None when
        it cannot be read or decoded (`error` says why)."""
        return self._entry(path)[1]

    def error(self, path: str) -> Optional[str]:
        """Why `path` (its buffer, else the file) cannot be analysed, or None."""
        return self._entry(path)[2]

    def _entry(self, path: str) -> "_Entry":
        text = self.buffers.get(path)
        if text is not None:
            try:
                return ((0, 0), buffer_source(path, text), None)
            except SourceError as exc:
                return ((0, 0), None, str(exc))
        entry = self._disk.get(path)
        return entry if entry is not None else self._read(path)

    def text(self, path: str) -> Optional[str]:
        text = self.buffers.get(path)
        if text is not None:
            return text
        source = self.source(path)
        return source.text if source is not None else None

    def _refresh_disk(self) -> None:
        """Re-read the files whose size or modification time changed (editors and git change
        files the server has not opened)."""
        for file in self.files():
            if file.path in self.buffers:
                continue
            known = self._disk.get(file.path)
            if known is None or known[0] != _stamp(file.path):
                self._read(file.path)

    def _read(self, path: str) -> "_Entry":
        stamp = _stamp(path)
        try:
            self._disk[path] = (stamp, read_source(path), None)
        except SourceError as exc:
            self._disk[path] = (stamp, None, str(exc) if stamp != (-1, -1) else None)
        return self._disk[path]

    # --- fixes -------------------------------------------------------------------------------

    def fix(self, path: str, key: Optional[FindingKey] = None) -> Rewrite:
        """The rewrite of one finding (by `fixes.finding_key`), or of every finding in `path`."""
        analysis = self.analysis()
        cache_key = (analysis.generation, path, key)
        if cache_key not in self._fixes:
            from ..fixes import Rewrite, rewrite

            def chosen(finding: Finding) -> bool:
                return finding_key(finding) == key if key else finding.path == path
            try:
                self._fixes[cache_key] = rewrite(self.engine, analysis.result,
                                                 self.config.fix_strategy, chosen)
            except Exception as exc:  # noqa: BLE001 - a fixer bug must not take the editor down
                self._fixes[cache_key] = Rewrite(notes={key or (path,): f"fix failed: {exc}"})
        return self._fixes[cache_key]


class _Kept(FactsCache):
    """The facts of the files the last analyses parsed, kept in memory over the disk cache
    (when there is one): the analysis after a keystroke or an opened file extracts the facts
    of the changed file only, and reads nothing back from disk (a large workspace's every file
    from the disk cache costs as much as extracting them all again). Only `get` and `put`,
    the engine's two calls, are used; the disk cache's own state stays in `disk`."""

    def __init__(self, disk: Optional[FactsCache]) -> None:
        self.disk = disk
        self.kept: dict[str, tuple[SourceFile, str, FileFacts]] = {}

    def get(self, file: SourceFile, text: str) -> Optional[FileFacts]:
        kept = self.kept.get(file.path)
        if kept is not None and kept[0] == file and kept[1] == text:
            return kept[2]
        facts = self.disk.get(file, text) if self.disk is not None else None
        if facts is not None:
            self.kept[file.path] = (file, text, facts)
        return facts

    def put(self, file: SourceFile, text: str, facts: FileFacts) -> None:
        self.kept[file.path] = (file, text, facts)
        if self.disk is not None:
            self.disk.put(file, text, facts)


def buffer_source(path: str, text: str) -> Source:
    """An unsaved buffer as a Source; its bytes in the encoding it declares (the fixer parses
    bytes). SourceError for what `workersafe check` would not read either (NUL bytes, text
    that cannot be encoded)."""
    raw = text.encode("utf-8", "surrogatepass")
    encoding = decode(path, raw).encoding  # a coding cookie may name another encoding
    if encoding != "utf-8":
        try:
            raw = text.encode(encoding)
        except (LookupError, UnicodeEncodeError):
            encoding = "utf-8"
    return Source(path, raw, text, encoding, False)


def _lone_file(path: str, root: Optional[str]) -> SourceFile:
    base = root if root and path.startswith(root + os.sep) else os.path.dirname(path)
    return SourceFile(path, module_name(path, base), os.path.basename(path) == "__init__.py",
                      base)


def _stamp(path: str) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)
