"""The engine both front ends use: files in, findings out.

discover → read → prefilter → parse (cached, maybe parallel) → link → rules → noqa/select."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from .cache import FactsCache, QuietFiles
from .config import Config
from .discovery import SourceFile, discover, module_aliases
from .facts import FileFacts, Span
from .findings import Finding
from .link import Project
from .noqa import NoqaFilter, file_is_ignored
from .prefilter import Prefilter, class_bases, words_pattern
from .source import Source, SourceError, decode, read_source

if TYPE_CHECKING:
    from .index import Index

ERROR_CODE = "WS001"
_IMPORT_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import\b", re.MULTILINE)
_START_METHOD = "set_start_method"
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.MULTILINE)


@dataclass
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


@dataclass
class CheckResult:
    findings: list[Finding]
    stats: Stats
    facts: dict[str, FileFacts] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)  # the files that were read
    files: list[SourceFile] = field(default_factory=list)
    # (quiet, loud) files among those read, when the repo-wide prefilter tested them all
    verdicts: Optional[tuple[set[str], set[str]]] = None


@dataclass
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
        self.registry = self.config.registry()
        extra_words = tuple(b.rsplit(".", 1)[-1] for b in self.config.dataset_bases)
        self.filter = Prefilter(self.registry, extra_words)
        self.cache = FactsCache(self.cache_dir, self.registry) if self.cache_dir else None

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
        return QuietFiles(self.cache, "-".join(self.filter._dataset_words))

    def check_sources(self, files: list[SourceFile], sources: dict[str, Source],
                      errors: Optional[list[Finding]] = None,
                      unread: Optional[set[str]] = None) -> CheckResult:
        """Check files whose text is already in memory (the fixer re-checks its output so).
        `unread`: files known to be quiet, read only if the linking asks for them."""
        errors = list(errors or [])
        stats = Stats(files=len(files))
        texts = _Texts(sources, unread or set())
        stats.unread = len(texts.unread)
        facts, verdicts = self._analyse(files, texts, stats)
        errors += [self._error_finding(f.path, f.error) for f in facts.values() if f.error]
        findings = self._rules(facts)
        result = self._filter(findings + errors, sources)
        stats.errors = sum(1 for f in result if f.code == ERROR_CODE)
        stats.findings = len(result) - stats.errors
        return CheckResult(result, stats, facts, sources, files, verdicts)

    def check_text(self, path: str, text: str, module: str = "", noqa: bool = True
                   ) -> list[Finding]:
        """One file alone (flake8, editors, stdin): same-file knowledge only."""
        if self.prefilter and not self.filter.single_file_candidate(text):
            return []
        from .parse import file_facts

        facts = file_facts(text, path, module, os.path.basename(path) == "__init__.py",
                           self.registry)
        if facts.error:
            return [self._error_finding(path, facts.error)]
        findings = self._rules({path: facts})
        if not noqa:
            return [f for f in findings if self.config.enabled(f.code)]
        source = Source(path, b"", text, "utf-8", False)
        return self._filter(findings, {path: source})

    def check_text_in_project(self, path: str, text: str, index: "Index") -> list[Finding]:
        """One file linked against an index of its project (the flake8 plugin's confirmed mode).
        Only this file's findings are returned."""
        from dataclasses import replace as _replace

        from .parse import file_facts

        here = os.path.abspath(path)
        if self.prefilter and not self.filter.mentions_handle(text):
            return []
        known = index.facts.get(here)
        module = known.module if known else ""
        facts = file_facts(text, here, module, os.path.basename(path) == "__init__.py",
                           self.registry)
        if facts.error:
            return [self._error_finding(path, facts.error)]
        every = {p: _replace(f, path=p) for p, f in index.facts.items()}
        every[here] = facts
        from .rules import evaluate

        project = Project(list(every.values()), self.config.all_dataset_bases(),
                          self.config.start_methods())
        mine = [_replace(f, path=path) for f in evaluate(project, self.registry) if f.path == here]
        return [f for f in mine if self.config.enabled(f.code)]

    def check_bytes(self, path: str, raw: bytes) -> list[Finding]:
        try:
            source = decode(path, raw)
        except SourceError as exc:
            return self._filter([self._error_finding(path, str(exc))], {})
        from .discovery import module_name

        return self.check_text(path, source.text, module_name(path, os.path.dirname(path) or "."))

    # --- steps --------------------------------------------------------------------------------

    def _read_all(self, files: list[SourceFile]) -> tuple[dict[str, Source], list[Finding]]:
        sources: dict[str, Source] = {}
        errors: list[Finding] = []
        for file in files:
            try:
                sources[file.path] = read_source(file.path)
            except SourceError as exc:
                errors.append(self._error_finding(file.path, str(exc)))
        return sources, errors

    def _analyse(self, files: list[SourceFile], texts: "_Texts", stats: Stats
                 ) -> tuple[dict[str, FileFacts], Optional[tuple[set[str], set[str]]]]:
        by_path = {f.path: f for f in files if f.path in texts or f.path in texts.unread}
        linking = self.link and self.prefilter
        if not self.prefilter:
            wanted = list(by_path)
        elif linking:  # the closure needs both words for every file: test each once
            handle_files = {p for p, t in texts.items() if self.filter.mentions_handle(t)}
            dataset_files = {p for p, t in texts.items() if self.filter.mentions_dataset(t)}
            wanted = sorted(handle_files & dataset_files)
        else:
            wanted = [p for p, t in texts.items() if self.filter.single_file_candidate(t)]
        stats.candidates = len(wanted)
        facts = self._parse_many([by_path[p] for p in wanted], texts, stats)
        if not linking:
            return facts, None
        # an entry script's start method reaches the loaders its imports build: never quiet
        start_files = {p for p, t in texts.items() if _START_METHOD in t}
        loud = handle_files | dataset_files | start_files
        verdicts = (set(texts) - loud, loud)  # before the closure reads more
        self._link_closure(by_path, texts, facts, stats, handle_files, dataset_files,
                           start_files)
        return facts, verdicts

    def _link_closure(self, by_path: dict[str, SourceFile], texts: dict[str, str],
                      facts: dict[str, FileFacts], stats: Stats, handle_files: set[str],
                      dataset_files: set[str], start_files: set[str]) -> None:
        """Parse more files until every file that could add to a finding has been parsed.

        Cheap text tests decide: a class graph from `class X(Base)` lines tells which classes
        may be datasets; files are parsed when they hold such a class and a handle, define
        something a parsed fact refers to, or name something a parsed fact is interested in."""
        dataset_names = _dataset_class_names(texts, handle_files | dataset_files,
                                             self.filter._dataset_words)
        words = set(self.filter._dataset_words)
        by_module = {f.module: f.path for f in by_path.values() if f.module}
        aliases = module_aliases((f.path, f.module) for f in by_path.values())
        by_module.update((alias, by_module[module]) for alias, module in aliases.items())
        imports: dict[str, set[str]] = {}

        def imported_by(path: str) -> set[str]:
            if path not in imports:
                imports[path] = _imported_modules(texts[path], by_path[path])
            return imports[path]

        wanted = {p for p in handle_files - dataset_files
                  if any(set(bases) & dataset_names for _, bases in class_bases(texts[p]))}
        wanted |= _dataset_files_importing_handles(
            dataset_files - handle_files, handle_files, by_module, imported_by)
        while True:
            wanted |= _needed_modules(facts.values(), by_module, words | dataset_names,
                                      handle_files)
            pattern = words_pattern(_interesting_names(facts.values()))
            if pattern is not None:
                wanted |= {p for p in dataset_files | handle_files if pattern.search(texts[p])}
            modules = _interesting_modules(facts.values())
            if modules:
                wanted |= {p for p in dataset_files | handle_files
                           if p not in facts and imported_by(p) & modules}
            loader_files = {p for p, f in facts.items() if f.loaders}
            chains = _import_chains(start_files - set(facts), loader_files, imported_by,
                                    by_module)
            if chains - set(facts):
                # a start method reaches these loaders only if every entry importing them
                # sets one: the linker needs the others too (those that set none fork)
                reached = chains & loader_files
                wanted |= chains | _importers(reached, list(by_path), texts, imported_by,
                                              by_module, by_path)
            wanted -= set(facts)
            if not wanted:
                return
            stats.candidates += len(wanted)
            facts.update(self._parse_many([by_path[p] for p in sorted(wanted)], texts, stats))
            wanted = set()

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
        if not todo:
            return out
        from .parallel import parse_files

        parsed, workers = parse_files(todo, texts, self.config, self.jobs)
        stats.parsed += len(parsed)
        stats.workers = max(stats.workers, workers)
        for file in todo:
            result = parsed[file.path]
            out[file.path] = result
            if self.cache:
                self.cache.put(file, texts[file.path], result)
        return out

    def _rules(self, facts: dict[str, FileFacts]) -> list[Finding]:
        from .rules import evaluate

        good = [f for f in facts.values() if not f.error]
        bases, starts = self.config.all_dataset_bases(), self.config.start_methods()
        if self.link:
            return evaluate(Project(good, bases, starts), self.registry)
        return [finding for f in good
                for finding in evaluate(Project([f], bases, starts), self.registry)]

    def _filter(self, findings: Iterable[Finding], sources: dict[str, Source]) -> list[Finding]:
        """select/ignore, then `# noqa` exactly as flake8 applies it."""
        filters: dict[str, Optional[NoqaFilter]] = {}
        kept = []
        for finding in sorted(findings, key=Finding.sort_key):
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

    @staticmethod
    def _error_finding(path: str, message: str) -> Finding:
        return Finding(path, Span(1, 0, 1, 0), ERROR_CODE, f"cannot analyse this file: {message}")


class _Texts(dict):  # type: ignore[type-arg]
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
            source = read_source(path)
        except SourceError:
            return ""  # changed since it was recorded quiet and now unreadable: nothing in it
        self.sources[path] = source
        self[path] = source.text
        return source.text


# --- linking helpers ----------------------------------------------------------------------------

def _needed_modules(all_facts: Iterable[FileFacts], by_module: dict[str, str],
                    dataset_words: set[str], handle_files: set[str]) -> set[str]:
    """Files defining names that dataset-relevant facts refer to: the bases of classes that
    hold handles or may be datasets, what loaders construct (through factories and module
    variables, followed on demand), worker_init_fns."""
    every = list(all_facts)
    demanded: set[str] = set()
    sources: dict[str, FileFacts] = {}

    def demand(names: Iterable[str], facts: FileFacts) -> None:
        for name in names:
            if name and name not in demanded:
                demanded.add(name)
                sources[name] = facts

    for facts in every:
        imports = facts.import_map()
        relevant = [c for c in facts.classes if _relevant_class(c, dataset_words)]
        if relevant or facts.loaders:
            demand(facts.star_imports, facts)
        for cls in relevant:
            demand(cls.bases, facts)
            for name in {imports.get(g, "") for m in cls.methods for g in m.globals_read}:
                path = _module_file(name, by_module) if name else None
                if path in handle_files:  # a module-level handle may live there
                    demand([name], facts)
            demand((r.target for _, refs in cls.attr_refs for r in refs), facts)
        for loader in facts.loaders:
            demand((r.target for r in loader.datasets), facts)
            demand(loader.worker_inits, facts)
    _follow_factories(every, demand, demanded)
    wanted: set[str] = set()
    for name in demanded:
        path = _module_file(name, by_module)
        package = sources[name].module.rpartition(".")[0]
        if path is None and package:  # a sibling module of a script
            path = _module_file(f"{package}.{name}", by_module)
        if path is not None:
            wanted.add(path)
    return wanted


def _follow_factories(every: list[FileFacts], demand, demanded: set[str]) -> None:  # type: ignore
    """What demanded factories return and demanded module variables hold is demanded too."""
    changed = True
    while changed:
        before = len(demanded)
        for facts in every:
            for func in facts.functions:
                if func.qualname in demanded or func.name in demanded:
                    demand((r.target for r in func.returns), facts)
            for name, refs in facts.module_vars:
                if f"{facts.module}.{name}" in demanded or name in demanded:
                    demand((r.target for r in refs), facts)
        changed = len(demanded) != before


def _relevant_class(cls, dataset_words: set[str]) -> bool:  # type: ignore[no-untyped-def]
    if cls.held or cls.class_held:
        return True
    return any(word in base for base in cls.bases for word in dataset_words)


def _dataset_class_names(texts: dict[str, str], paths: set[str], words: tuple[str, ...]
                         ) -> set[str]:
    """Class names that may be datasets, from `class X(Base)` lines: a base naming a dataset
    word, or a base that is such a class (by name, transitively)."""
    graph = [(name, bases) for p in paths for name, bases in class_bases(texts[p])]
    names = {name for name, bases in graph if any(w in b for b in bases for w in words)}
    changed = True
    while changed:
        changed = False
        for name, bases in graph:
            if name not in names and set(bases) & names:
                names.add(name)
                changed = True
    return names


def _module_file(name: str, by_module: dict[str, str]) -> Optional[str]:
    parts = name.split(".") if name else []
    for cut in range(len(parts), 0, -1):
        path = by_module.get(".".join(parts[:cut]))
        if path is not None:
            return path
    return None


def _interesting_names(all_facts: Iterable[FileFacts]) -> set[str]:
    """Names whose mention makes another file worth parsing: classes holding handles and their
    subclasses, module-level handles, and factories or variables that build such classes."""
    every = list(all_facts)
    module_handles = {h.name for f in every for h in f.module_handles}
    holders = {c.name for f in every for c in f.classes if c.held or c.class_held
               or any(set(m.globals_read) & module_handles for m in c.methods)}
    changed = True
    while changed:
        before = len(holders)
        holders |= {c.name for f in every for c in f.classes
                    if {b.rsplit(".", 1)[-1] for b in c.bases} & holders}
        changed = len(holders) != before
    names = set(holders)
    for facts in every:
        names |= {h.name for h in facts.module_handles}
        names |= {f.name for f in facts.functions
                  if any(r.target.rsplit(".", 1)[-1] in holders for r in f.returns)}
        names |= {n for n, refs in facts.module_vars
                  if any(r.target.rsplit(".", 1)[-1] in holders for r in refs)}
    return {n for n in names if len(n) > 2}


def _interesting_modules(all_facts: Iterable[FileFacts]) -> set[str]:
    """Modules defining a handle holder, a module handle or a factory, and modules that
    re-export one of those names (`from .remote import RemoteImages as Images`)."""
    every = list(all_facts)
    names = _interesting_names(every)
    modules = {f.module for f in every if f.module and _interesting_names([f])}
    changed = True
    while changed:
        changed = False
        for facts in every:
            if facts.module in modules or not facts.module:
                continue
            for local, qualified in facts.imports:
                source, _, imported = qualified.rpartition(".")
                if imported in names and source in modules:
                    modules.add(facts.module)
                    changed = True
                    break
    return modules


def _module_prefixes(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _dataset_files_importing_handles(dataset_only: set[str], handle_only: set[str],
                                     by_module: dict[str, str], imported_by) -> set[str]:
    """A dataset file importing from a handle file: the handle may be a module-level one."""
    handle_modules = {m: p for m, p in by_module.items() if p in handle_only}
    if not handle_modules:
        return set()
    found: set[str] = set()
    for path in dataset_only:
        for imported in imported_by(path):
            target = _module_file(imported, handle_modules)
            if target is not None:
                found |= {path, target}
    return found


def _import_chains(starts: set[str], targets: set[str], imported_by, by_module: dict[str, str]
                   ) -> set[str]:  # type: ignore[no-untyped-def]
    """The files on import paths from a file in `starts` to one in `targets` (the linker
    follows an entry script's start method down them), found from import lines."""
    found: set[str] = set()
    if not targets:
        return found
    for start in sorted(starts):
        parent: dict[str, str] = {start: ""}
        queue = [start]
        while queue:
            current = queue.pop(0)
            if current in targets:
                step = current
                while step:
                    found.add(step)
                    step = parent[step]
                continue
            for module in sorted(imported_by(current)):
                path = _module_file(module, by_module)
                if path is not None and path not in parent:
                    parent[path] = current
                    queue.append(path)
    return found


def _importers(seeds: set[str], paths: list[str], texts: dict[str, str], imported_by,
               by_module: dict[str, str], by_path: dict[str, SourceFile]
               ) -> set[str]:  # type: ignore[no-untyped-def]
    """Files that import a file of `seeds`, directly or through others: an import of a module
    names its last part, so only files containing one are tested."""
    closure = set(seeds)
    frontier = set(seeds)
    while frontier:
        names = {by_path[p].module.rpartition(".")[2] for p in frontier if by_path[p].module}
        frontier = set()
        for path in paths:
            if path in closure or not any(n in texts[path] for n in names):
                continue
            if any(_module_file(m, by_module) in closure for m in imported_by(path)):
                frontier.add(path)
        closure |= frontier
    return closure - seeds


def _imported_modules(text: str, file: SourceFile) -> set[str]:
    from .discovery import module_of_import

    out: set[str] = set()
    for match in _IMPORT_FROM.finditer(text):
        spec = match.group(1)
        level = len(spec) - len(spec.lstrip("."))
        out.add(module_of_import(file.module, file.is_package, level, spec.lstrip(".")))
    for match in _IMPORT.finditer(text):
        for part in match.group(1).split(","):
            name = part.strip().split()[0] if part.strip() else ""
            if name:
                out.add(name)
    return out
