"""The engine both front ends use: files in, findings out.

discover → read → prefilter → parse (cached, maybe parallel) → link → rules → noqa/select.
Which files a linked run parses is `selection.py`'s job."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from .config import Config
from .discovery import SourceFile, discover, module_name
from .facts import FileFacts, Span
from .findings import Finding
from .prefilter import Prefilter, forget_words
from .records import field, record, replace
from .ruletable import UNREADABLE
from .source import Source, SourceError, decode, forget_trees

if TYPE_CHECKING:
    import ast

    from .cache import FactsCache, QuietFiles
    from .index import Index
    from .link import Project
    from .registry import Registry

# The cache and the file selection are imported where used: one file alone (the flake8
# plugin, editors) needs neither, and flake8 pays every import on every run. So are the
# linker and the rules (~3 ms): a run in which no file is a candidate (a small tree, the CLI's
# fixed cost) has nothing to link.


@record()
class Stats:
    files: int = 0
    candidates: int = 0
    parsed: int = 0
    cache_hits: int = 0
    unread: int = 0  # known quiet and unchanged (cache): not read
    errors: int = 0
    findings: int = 0
    workers: int = 1

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@record()
class CheckResult:
    findings: list[Finding]
    stats: Stats
    facts: dict[str, FileFacts] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)  # the files that were read
    files: list[SourceFile] = field(default_factory=list)
    # (quiet, loud) files among those read, when the repo-wide prefilter tested them all
    verdicts: Optional[tuple[set[str], set[str]]] = None


@record()
class Engine:
    config: Config = field(default_factory=Config)
    link: bool = True
    prefilter: bool = True
    jobs: int = 0  # 0: as many as CPUs, when there is enough work
    cache_dir: Optional[str] = None
    # Files the cache knows were quiet (named no handle, no dataset) and that have not changed
    # are not read (`workersafe check`; the fixer reads every file: it looks for importers).
    skip_quiet: bool = False

    def __post_init__(self) -> None:
        # findings of an index's whole project (`check_text_in_project`), by the index
        self._linked: dict[int, tuple["Index", list[Finding]]] = {}
        self.registry = self.config.registry()
        self.filter = Prefilter(self.registry, self.config.dataset_words())
        self.cache = _facts_cache(self.cache_dir, self.registry) if self.cache_dir else None

    # --- public API ---------------------------------------------------------------------------

    def discover(self, paths: Sequence[str]) -> list[SourceFile]:
        return discover(paths, self.config.exclude + self.config.extend_exclude)

    def check_paths(self, paths: Sequence[str]) -> CheckResult:
        files = self.discover(paths)
        quiet = self._quiet_files()
        unread = quiet.unchanged([f.path for f in files]) if quiet else set()
        sources, errors = self._read_all([f for f in files if f.path not in unread])
        result = self.check_sources(files, sources, errors, unread)
        if quiet is not None and result.verdicts is not None:
            quiet.record(*result.verdicts)
        return result

    def _quiet_files(self) -> Optional[QuietFiles]:
        if not (self.skip_quiet and self.cache and self.prefilter and self.link):
            return None
        from .cache import QuietFiles

        return QuietFiles(self.cache, "-".join(self.filter.dataset_words))

    def check_sources(self, files: list[SourceFile], sources: dict[str, Source],
                      errors: Optional[list[Finding]] = None,
                      unread: Optional[set[str]] = None) -> CheckResult:
        """Check files whose text is already in memory (the fixer re-checks its output so).
        `unread`: files known to be quiet, read only if the linking asks for them."""
        errors = list(errors or [])
        stats = Stats(files=len(files))
        texts = _Texts(sources, unread or set())
        stats.unread = len(texts.unread)
        try:
            facts, verdicts, linked = self._analyse(files, texts, stats)
        finally:
            forget_trees()  # those parsed while reading (notebooks) that no facts took
        errors += [self.error_finding(f.path, f.error, *f.error_at)
                   for f in facts.values() if f.error]
        errors += [e for path, s in sources.items() for e in self._cell_errors(path, s.text)]
        findings = self._rules(facts) if linked is None else linked
        result = self._filter(findings + errors, sources)
        stats.errors = sum(1 for f in result if f.code == UNREADABLE)
        stats.findings = len(result) - stats.errors
        return CheckResult(result, stats, facts, sources, files, verdicts)

    def check_text(self, path: str, text: str, module: str = "", noqa: bool = True,
                   tree: Optional[ast.Module] = None, candidate: Optional[bool] = None
                   ) -> list[Finding]:
        """One file alone (flake8, editors, stdin): same-file knowledge only. `tree`: Python's
        `ast` of `text` if the caller has one (flake8's), so the file is not parsed again;
        `candidate`: the prefilter's `single_file_candidate(text)` if the caller asked it."""
        cells = self._cell_errors(path, text)
        if candidate is None and self.prefilter:
            candidate = self.filter.single_file_candidate(text)
        if self.prefilter and not candidate:
            return self._filter(cells, {}) if cells else []
        from .parse import file_facts

        facts = file_facts(text, path, module, os.path.basename(path) == "__init__.py",
                           self.registry, tree)
        if facts.error:
            return [self.error_finding(path, facts.error, *facts.error_at)]
        findings = self._rules({path: facts}) + cells
        if not noqa:
            return [f for f in findings if self.config.enabled(f.code)]
        source = Source(path, b"", text, "utf-8", False)
        return self._filter(findings, {path: source})

    def check_text_in_project(self, path: str, text: str, index: "Index",
                              tree: Optional[ast.Module] = None,
                              handle: Optional[bool] = None) -> list[Finding]:
        """One file linked against an index of its project (the flake8 plugin's confirmed mode).
        Only this file's findings are returned. `handle`: the prefilter's
        `mentions_handle(text)` if the caller asked it."""
        from .parse import file_facts

        here = os.path.abspath(path)
        if handle is None and self.prefilter:
            handle = self.filter.mentions_handle(text)
        if self.prefilter and not handle:
            return []
        known = index.facts.get(here)
        module = known.module if known else ""
        facts = file_facts(text, here, module, os.path.basename(path) == "__init__.py",
                           self.registry, tree)
        if facts.error:
            return [self.error_finding(path, facts.error, *facts.error_at)]
        if known is not None and replace(known, path=here) == facts:
            # unchanged since the index: the index's project, linked once for all its files
            linked = self._linked.get(id(index))
            if linked is None or linked[0] is not index:
                linked = self._linked[id(index)] = (index, self._link_index(index, {}))
            found = linked[1]
        else:
            found = self._link_index(index, {here: facts})
        mine = [replace(f, path=path) for f in found if f.path == here]
        return [f for f in mine if self.config.enabled(f.code)]

    def _link_index(self, index: "Index", changed: dict[str, FileFacts]) -> list[Finding]:
        from .link import Project
        from .rules import evaluate

        every = {p: replace(f, path=p) for p, f in index.facts.items()}
        every.update(changed)
        project = Project(list(every.values()), self.config.all_dataset_bases(),
                          self.config.start_methods(), self.registry)
        return evaluate(project, self.registry)

    def check_bytes(self, path: str, raw: bytes) -> list[Finding]:
        try:
            source = decode(path, raw)
        except SourceError as exc:
            return self._filter([self.error_finding(path, str(exc))], {})
        return self.check_text(path, source.text, module_name(path, os.path.dirname(path) or "."))

    # --- steps --------------------------------------------------------------------------------

    def _read_all(self, files: list[SourceFile]) -> tuple[dict[str, Source], list[Finding]]:
        sources: dict[str, Source] = {}
        errors: list[Finding] = []
        for file in files:
            try:
                sources[file.path] = _read(file.path)
            except SourceError as exc:
                errors.append(self.error_finding(file.path, str(exc)))
        return sources, errors

    def _analyse(self, files: list[SourceFile], texts: "_Texts", stats: Stats
                 ) -> tuple[dict[str, FileFacts], Optional[tuple[set[str], set[str]]],
                            Optional[list[Finding]]]:
        """The facts of the files the selection parses, the prefilter's verdicts, and the
        rules' findings on those facts when the selection's last question already linked them
        (else None: `_rules` links them)."""
        from .selection import Finders, Selection

        by_path = {f.path: f for f in files if f.path in texts or f.path in texts.unread}
        selection = Selection(self.filter, by_path, texts) if self.link and self.prefilter \
            else None
        if selection is not None:
            wanted = selection.first()
        elif not self.prefilter:
            wanted = list(by_path)
        else:
            wanted = [p for p, t in texts.items() if self.filter.single_file_candidate(t)]
        stats.candidates = len(wanted)
        facts = self._parse_many([by_path[p] for p in wanted], texts, stats)
        if selection is None:
            return facts, None, None
        verdicts = selection.verdicts()  # before the closure reads more

        def parse_more(more: list[SourceFile]) -> dict[str, FileFacts]:
            stats.candidates += len(more)
            return self._parse_many(more, texts, stats)

        # The facts only grow: linked once per size. When the selection ends with the facts
        # its last question linked, the rules read that project (`_rules` would link them
        # again).
        linked: list[tuple[int, Project]] = []
        nothing: set[int] = set()  # sizes at which no class of any kind could make a finding

        def may_find(parsed: dict[str, FileFacts], every_class: bool) -> Optional[Finders]:
            if len(parsed) in nothing:  # then neither can a dataset's
                return None
            if not any(not f.error for f in parsed.values()):
                return None  # no file, no handle (and no linker to import)
            from .link import Project
            from .rules import finding_classes, loader_files

            if not linked or linked[-1][0] != len(parsed):
                good = [f for f in parsed.values() if not f.error]
                linked[:] = [(len(parsed), Project(good, self.config.all_dataset_bases(),
                                                   self.config.start_methods(), self.registry))]
            # (every class asked of: the callers' round follows those it names; else the
            # start-method round, the loaders reaching them)
            project = linked[-1][1]
            found = finding_classes(project, self.registry, every_class)
            if found is None:
                if every_class:
                    nothing.add(len(parsed))
                return None
            return Finders(found, None if every_class else loader_files(project, found))

        try:
            selection.complete(facts, parse_more, may_find)
        finally:
            forget_words()  # the texts' words, kept across the rounds: not past the run
        if linked and linked[-1][0] == len(facts):
            from .rules import evaluate

            return facts, verdicts, evaluate(linked[-1][1], self.registry)
        return facts, verdicts, None

    def _parse_many(self, files: list[SourceFile], texts: dict[str, str], stats: Stats
                    ) -> dict[str, FileFacts]:
        out: dict[str, FileFacts] = {}
        todo: list[SourceFile] = []
        for file in files:
            cached = self.cache.get(file, texts[file.path]) if self.cache else None
            if cached is not None:
                out[file.path] = cached
                stats.cache_hits += 1
            else:
                todo.append(file)
        if todo:
            from .parallel import parse_files

            parsed, workers = parse_files(todo, texts, self.config, self.jobs)
            stats.parsed += len(parsed)
            stats.workers = max(stats.workers, workers)
            for file in todo:
                result = parsed[file.path]
                out[file.path] = result
                if self.cache:
                    self.cache.put(file, texts[file.path], result)
        # (a cached notebook's too: its facts were cached for the text read unchecked)
        rechecked = [f for f in files if _recheck(f.path, out[f.path], texts)]
        if rechecked:
            out.update(self._parse_many(rechecked, texts, stats))
        return out

    def _rules(self, facts: dict[str, FileFacts]) -> list[Finding]:
        good = [f for f in facts.values() if not f.error]
        if not good:
            return []  # a finding is in a file: no facts, none (and nothing to import)
        from .link import Project
        from .rules import evaluate

        bases, starts = self.config.all_dataset_bases(), self.config.start_methods()
        if self.link:
            return evaluate(Project(good, bases, starts, self.registry), self.registry)
        return [finding for f in good
                for finding in evaluate(Project([f], bases, starts, self.registry),
                                        self.registry)]

    def _filter(self, findings: Iterable[Finding], sources: dict[str, Source]) -> list[Finding]:
        """select/ignore, then `# noqa` exactly as flake8 applies it."""
        ordered = sorted(findings, key=Finding.sort_key)
        if not ordered:
            return []
        from .noqa import NoqaFilter, file_is_ignored  # (its patterns: only with findings)

        filters: dict[str, Optional[NoqaFilter]] = {}
        kept = []
        for finding in ordered:
            if not self.config.enabled(finding.code):
                continue
            source = sources.get(finding.path)
            if source is not None:
                if finding.path not in filters:
                    lines = source.lines
                    filters[finding.path] = None if file_is_ignored(lines) else NoqaFilter(lines)
                noqa = filters[finding.path]
                if noqa is None or noqa.suppressed(finding.code, finding.line):
                    continue
            kept.append(finding)
        return kept

    def _cell_errors(self, path: str, text: str) -> list[Finding]:
        """WS001 for each cell of a notebook that does not parse (the others are analysed)."""
        if not path.endswith(".ipynb") or "] unparsed " not in text:
            return []
        from .notebook import cell_errors

        return [self.error_finding(path, message, line, col)
                for line, col, message in cell_errors(text)]

    @staticmethod
    def error_finding(path: str, message: str, line: int = 0, col: int = 0) -> Finding:
        """WS001 at the syntax error's place when there is one, else at 1:1."""
        at = Span(line, col, line, col) if line > 0 else Span(1, 0, 1, 0)
        return Finding(path, at, UNREADABLE, f"cannot analyse this file: {message}")


def _read(path: str) -> Source:
    """A file's text; a notebook's unchecked (its code is parsed only if the selection wants
    it: `_recheck` then marks its cells that do not parse, as reading checked would have)."""
    from .reading import read_source  # with the notebook reader: not for one file alone

    return read_source(path, check=False)


def _recheck(path: str, facts: FileFacts, texts: dict[str, str]) -> bool:
    """Whether the notebook at `path`, read unchecked and whose code does not parse, was read
    again with its cells checked (its text and source replaced in `texts`, a `_Texts`): the
    cells that parse are analysed, the others reported (WS001 at each, `_cell_errors`)."""
    if not facts.error or not path.endswith(".ipynb") or not isinstance(texts, _Texts):
        return False
    from .notebook import checked_source

    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return False
    source = checked_source(path, raw, texts[path])
    if source is None or source.text == texts[path]:
        return False  # changed since it was read, or no cell to mask: the error stands
    texts.sources[path] = source
    texts[path] = source.text
    return True


def _facts_cache(cache_dir: str, registry: Registry) -> FactsCache:
    from .cache import FactsCache as Cache

    return Cache(cache_dir, registry)


class _Texts(dict[str, str]):
    """path → text of the files read; a file left unread (known quiet) is read when asked for,
    and its source joins `sources` (its findings need its `# noqa` comments)."""

    def __init__(self, sources: dict[str, Source], unread: set[str]) -> None:
        super().__init__((p, s.text) for p, s in sources.items())
        self.sources = sources
        self.unread = unread

    def __missing__(self, path: str) -> str:
        if path not in self.unread:
            raise KeyError(path)
        try:
            source = _read(path)
        except SourceError:
            return ""  # changed since it was recorded quiet and now unreadable: nothing in it
        self.sources[path] = source
        self[path] = source.text
        return source.text
