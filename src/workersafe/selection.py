"""Which files a linked run parses: those the prefilter finds naming both a handle and a
dataset word, then, until nothing is added, every file that could add to a finding.

Cheap text tests decide: a class graph from `class X(Base)` lines tells which classes may be
datasets; files are parsed when they hold such a class and a handle, define something a parsed
fact refers to, or name something a parsed fact is interested in. A name is looked for only
where it can come from: a function's or class's callers among the files that can import its
module (import lines, followed through re-exports), so a script's own `train()` pulls nothing
in, and only where it is spelled as a call or an import (the linker ties call sites, not
mentions). A name's module is parsed only if it may bind the name (spells it, or star-imports)."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Callable, Iterable, Iterator, NamedTuple, Optional

from .carry import Pending, offered
from .discovery import SourceFile, module_aliases, module_of_import, module_spellings
from .facts import LOOKUP_VERBS, DatasetRef, FileFacts, LoaderCall, last_parts, looks_up
from .prefilter import (ImportLines, Prefilter, class_bases, import_lines, is_word_char,
                        spells_word, whole_words, word_starts, words_pattern)

# The engine's parser: files → their facts (cached, maybe parallel).
ParseMany = Callable[[list[SourceFile]], dict[str, FileFacts]]
Demand = Callable[[Iterable[str], FileFacts], None]
ImportedBy = Callable[[str], set[str]]


class Finders(NamedTuple):
    """What the linker says of the facts parsed so far (`MayFind`)."""
    # the classes (qualified) holding a handle a finding could be about; `rules.ANY_CLASS`
    # among them: a finding whose class is not known
    classes: frozenset[str]
    # the files of the loaders reaching them: only those loaders' start methods can change a
    # finding (None: any loader's may, one of them reached by none parsed)
    loader_files: Optional[frozenset[str]] = None


# The engine links the facts parsed so far to tell (None for no class: until one could make
# a finding, no start method can change one). `every_class`: a handle of any class counts (a
# loader found later may reach it).
MayFind = Callable[[dict[str, FileFacts], bool], Optional[Finders]]
# A file's `class X(Base)` lines (`prefilter.class_bases`), and where the selection asks them.
ClassBases = list[tuple[str, list[str]]]
BasesOf = Callable[[str], ClassBases]
# `_lead_binders`: the leading names' reach sets are joined while they reach each file read
# fewer times than this on average (Megatron-LM's 11 names: 3 times; fourteen repositories'
# 984 names: 250 times, where reading every file's words costs less).
_UNION_PER_FILE = 32
# Where a leading name is bound (`Selection._leading_names`): a file's path; "" anywhere (a
# nested class named through its outer one, a name nothing read defines); `_ON_OBJECTS` a
# method's name, called on an object: code gets what it gives only through the object's
# class, which leads too (`_lead_edges`), so no file binds it.
_ON_OBJECTS = "."
# (a name, where it is bound, the names whose objects it may give)
_LeadEdge = tuple[str, str, frozenset[str]]
# An entry script's start method reaches the loaders its imports build.
_START_METHOD = "set_start_method"


class Selection:
    """The prefilter's verdicts on the files read (each text tested once), and the closure."""

    def __init__(self, prefilter: Prefilter, by_path: dict[str, SourceFile],
                 texts: dict[str, str]) -> None:
        self.prefilter = prefilter
        self.by_path = by_path
        self.texts = texts  # may read a file left unread when asked for it (engine._Texts)
        self._lines: dict[str, ImportLines] = {}  # `_import_lines`
        self._bases: dict[str, ClassBases] = {}  # `_class_bases`
        self.handle_files = {p for p, t in texts.items()
                             if prefilter.mentions_handle(t, self._import_lines(p))}
        self.handle_files |= _handle_subclass_files(texts, self._class_bases, self.handle_files,
                                                    prefilter.registry.short_names())
        self.dataset_files = {p for p, t in texts.items() if prefilter.mentions_dataset(t)}
        self.start_files = {p for p, t in texts.items() if _START_METHOD in t}
        self._imports: dict[str, set[str]] = {}  # `_imported_by`
        self._modules: Optional[set[str]] = None  # the files' modules, by any spelling
        self._spelled: Optional[dict[str, str]] = None  # `_aliases`
        # `_may_refer`'s reading of a file's text for (file, name, defining file)
        self._refers: dict[tuple[str, str, str], tuple[bool, tuple[str, ...]]] = {}
        # (name, defining file, only returned) searched by the callers' round (`_caller_names`)
        self._callers_searched: set[tuple[str, str, bool]] = set()
        self._calls: dict[str, _Calls] = {}  # each parsed file's, for `_caller_names`
        self._demands: dict[str, _Demands] = {}  # each parsed file's, for `_needed_modules`
        self._demanded: dict[tuple[str, str], Optional[str]] = {}  # `_needed_modules`'s files
        # `_keeping_classes` of the facts when they were that many (they only grow)
        self._keeping: tuple[int, set[str]] = (-1, set())
        # from the import lines of the files read (`_index_imports`; how many were read): a
        # module → the files importing names from it (`from a.b import f`: a.b); (a module, a
        # name) → the files importing that name from it (a.b, f; a.b, "*" for a star); a
        # module → the files importing it or one of its names (`import a.b`: a, a.b; `from a
        # import b`: a.b), whatever is below it reached
        self._importing: dict[str, set[str]] = {}
        self._listing: dict[tuple[str, str], set[str]] = {}
        self._below: dict[str, set[str]] = {}
        self._open_lists: dict[str, set[str]] = {}  # unread `from a import (` lists, by module
        self._name_reach: dict[tuple[str, str], frozenset[str]] = {}  # `_name_reachers`
        self._whole: dict[str, frozenset[str]] = {}  # `_whole_reach`
        self._indexed = -1
        self._unread_reach: frozenset[str] = frozenset()
        self._runs: dict[str, tuple[set[str], set[str]]] = {}  # `_spellings`
        self._scoped_seen: set[str] = set()  # files setting a start method in a function
        self._verdicts: tuple[set[str], set[str]] = (set(), set())
        # files the callers' round found that cannot lead to a finding yet (`_gate`)
        self._deferred_callers: set[str] = set()
        # the names a file must spell, or be imported below a file spelling, for what it gives
        # a loader to hold a handle a finding could be about (`_leading_names`): none until
        # the linker tells one (None: any file may)
        self._leading: Optional[frozenset[str]] = frozenset()
        # what the linker said (`_release_callers`), and how many files were parsed then
        self._candidates: Optional[frozenset[str]] = None
        self._asked = -1
        # the loaders whose start methods could change a finding, as the linker said when that
        # many files were parsed (`_ask_start_loaders`; None: any loader's, or not asked)
        self._start_loaders: Optional[frozenset[str]] = None
        self._start_classes: frozenset[str] = frozenset()  # (the classes it named then)
        self._starts_asked = -1
        # where each leading name leads from (`_leading_names`: a file, "" anywhere,
        # `_ON_OBJECTS` a method's)
        self._lead_homes: dict[str, frozenset[str]] = {}
        # `_may_lead`: the files that may bind one of the leading names (`_lead_binders`), and
        # what they import, transitively; for those names, and that many files read
        self._led: tuple[set[str], set[str]] = (set(), set())
        self._lead_of: Optional[frozenset[str]] = frozenset()
        self._lead_read = -1
        self._by_module: dict[str, str] = {}  # the run's modules → files (`complete`)
        self._imports_below: dict[str, list[str]] = {}  # `_imports_of`
        self._subclass_index: tuple[int, dict[str, list[tuple[str, str]]]] = (-1, {})
        self._reexports: dict[tuple[str, str], set[str]] = {}  # `_reexported`
        # each parsed file's `_lead_edges`, read once
        self._lead_edges: dict[str, tuple[FileFacts, list[_LeadEdge]]] = {}
        self._binds: dict[tuple[str, str], bool] = {}  # `_may_bind`
        self._froms: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # `_from_imports`
        self._definitions: dict[str, tuple[FileFacts, frozenset[str]]] = {}  # `_defined`
        self._builds_from_handles: dict[str, bool] = {}  # `_calls_from_handle_file`
        # the handle files such a caller takes from, to parse (`_calls_from_handle_file`)
        self._handle_sources: set[str] = set()
        self._carriers: dict[str, set[str]] = {}  # a parsed handle file's `_handle_carriers`

    def first(self) -> list[str]:
        """The files parsed first: a handle and a dataset word in the same file."""
        return sorted(self.handle_files & self.dataset_files)

    def verdicts(self) -> tuple[set[str], set[str]]:
        """(quiet, loud) among the files read so far: quiet ones named neither (nor set a start
        method: an entry script's start method reaches the loaders its imports build)."""
        loud = self.handle_files | self.dataset_files | self.start_files
        self._verdicts = (set(self.texts) - loud, loud)
        return self._verdicts

    def complete(self, facts: dict[str, FileFacts], parse: ParseMany,
                 may_find: Optional[MayFind] = None) -> None:
        """Parse more files (adding to `facts`) until every file that could add to a finding
        has been parsed. The start-method round (entry scripts, the files between them and the
        loaders, every importer of those: on a library most of the tree) runs only once the
        other rounds add nothing and `may_find` says a handle in what is parsed could make a
        finding; from then on in every round. The callers' round adds the callers that name a
        handle (one may pass it to a dataset's constructor), and, once the handles of some
        classes could make a finding, the callers that may give a loader one of their objects
        (`_gate`): the linker is asked which classes whenever the other rounds add nothing."""
        starts_needed = may_find is None
        if may_find is None:
            self._leading = None
        texts, handle_files, dataset_files = self.texts, self.handle_files, self.dataset_files
        words = self.prefilter.dataset_words
        bases_of = self._class_bases
        dataset_names = _dataset_class_names(bases_of, handle_files | dataset_files, words)
        loader_names = _dataset_class_names(bases_of, handle_files | dataset_files,
                                            ("DataLoader",))
        # and through an alias of it (`DataLoader as TorchLoader`): a DataLoader subclass
        loader_aliases = _loader_aliases(texts, dataset_files)
        loader_like = loader_names | _dataset_class_names(
            bases_of, handle_files | dataset_files, loader_aliases) \
            if loader_aliases else loader_names
        by_module = {f.module: f.path for f in self.by_path.values() if f.module}
        aliases = self._aliases()
        by_module.update((alias, by_module[module]) for alias, module in aliases.items()
                         if module in by_module)
        self._by_module = by_module
        wanted = {p for p in handle_files - dataset_files
                  if any(set(bases) & dataset_names for _, bases in bases_of(p))}
        pending: Pending = {}
        project = {module.partition(".")[0] for module in by_module}
        wanted |= _dataset_files_importing_handles(
            dataset_files - handle_files, handle_files, by_module, self._imported_by,
            dataset_files, texts, self._imported_names, pending)
        wanted |= {p for p in dataset_files - handle_files if _loader_of_parameter(texts[p])}
        interesting_alone: dict[int, bool] = {}  # by id: `facts` holds every one while here
        while True:
            wanted |= offered(pending, facts, project)
            arg_callees = self._arg_callees(facts, loader_names)
            for path, f in facts.items():
                if path not in self._demands:
                    self._demands[path] = _Demands(f)
            wanted |= _needed_modules(facts.values(), by_module, set(words) | dataset_names,
                                      handle_files, self._may_bind, set(words) | loader_like,
                                      arg_callees, [self._demands[p] for p in facts],
                                      self._demanded)
            anywhere: set[str] = set()
            interesting = _interesting_names(facts.values(), anywhere)
            builders = _builders(facts.values(), interesting, dataset_names)
            wanted |= self._naming(interesting, anywhere, facts, by_module, builders)
            modules, exported = _interesting_modules(facts.values(), interesting_alone,
                                                     interesting, aliases, texts)
            named = words_pattern(exported)
            if modules and named is not None:
                wanted |= {p for p in (dataset_files | handle_files) - facts.keys()
                           if self._imported_by(p) & modules
                           and self._binds_from(p, modules, exported)
                           and named.search(texts[p])
                           and self._may_hand_on(p, named.found(texts[p]), builders)}
                wanted |= self._reexporters(modules, exported, facts)
                wanted |= self._quiet_builders(modules, interesting & dataset_names, facts)
            callers = self._callers(facts, dataset_names, loader_names) - set(facts)
            wanted |= self._gate(callers, facts)
            wanted |= self._handle_sources
            if starts_needed:
                wanted |= self._start_method_reach(facts, by_module)
            wanted -= set(facts)
            if not wanted and may_find is not None:
                if self._deferred_callers and self._leading is not None:
                    wanted = self._release_callers(facts, by_module, may_find)
                if not wanted and (not starts_needed or self._start_loaders is not None):
                    more = self._ask_start_loaders(facts, by_module, may_find)
                    if more is not None:
                        starts_needed, wanted = True, more
            if not wanted:
                return
            facts.update(parse([self.by_path[p] for p in sorted(wanted)]))
            wanted = set()

    def _naming(self, interesting: set[str], anywhere: set[str],
                facts: dict[str, FileFacts], by_module: dict[str, str],
                builders: set[str]) -> set[str]:
        """The unparsed files naming a dataset or a handle that mention one of `interesting`
        where it can be what a parsed module defines (a holder class, a module handle or
        variable, a factory): only a file importing that name, or the module as a module,
        refers to it (`_may_refer`); elsewhere the same word is another binding (a script's
        `model`, `client` or `tar`, mentioned in hundreds of files), which the linker never
        ties to it. The names in `anywhere` (registries and their lookups) everywhere. Only
        the files that may hand on what they name (`_may_hand_on`, by `builders`)."""
        pattern = words_pattern(interesting)
        if pattern is None:
            return set()
        homes: dict[str, set[str]] = {}
        for path, f in facts.items():
            for name in (self._defined(path, f) & interesting) - anywhere:
                homes.setdefault(name, set()).add(path)
        found = set()
        for path in (self.dataset_files | self.handle_files) - facts.keys():
            if pattern.search(self.texts[path]) is None:  # (kept from round to round)
                continue
            spelled = pattern.found(self.texts[path])
            if not self._may_hand_on(path, spelled, builders):
                continue
            for name in spelled:
                where = homes.get(name)
                if where is None or any(self._may_refer(path, name, home, by_module)
                                        for home in where):
                    found.add(path)
                    break
        return found

    def _defined(self, path: str, f: FileFacts) -> frozenset[str]:
        """The names a parsed module defines (classes, functions, variables, handles), read
        once per file: every round asks again of every parsed file."""
        found = self._definitions.get(path)
        if found is None or found[0] is not f:
            names = frozenset({c.name for c in f.classes} | {fn.name for fn in f.functions}
                              | {name for name, _ in f.module_vars}
                              | {h.name for h in f.module_handles})
            found = self._definitions[path] = (f, names)
        return found[1]

    def _may_refer(self, path: str, name: str, home: str, by_module: dict[str, str]) -> bool:
        """Whether `path` may refer to the `name` that `home` defines: it imports the name
        from `home`'s module, a package above it or a module that can re-export it
        (`from m import name`, or a list not on one line, or `*`), or imports `home`'s module, a
        package above it or its own name (`import a.b`, `from a import b`) and spells
        `.name`; and the file can reach that name at all (`_name_reachers`). Text only,
        over-reaching: the module's last part is the same from every root it can be imported
        from."""
        key = (path, name, home)
        spelled = self._refers.get(key)
        if spelled is None:
            spelled = self._refers[key] = self._spells_reference(path, name, home, by_module)
        direct, through = spelled
        if not direct and not through:
            return False
        # (files read since may import more: asked each time)
        reach = self._name_reachers(home, name)
        return path in reach and (direct or any(source in reach for source in through))

    def _spells_reference(self, path: str, name: str, home: str, by_module: dict[str, str]
                          ) -> tuple[bool, tuple[str, ...]]:
        """What `_may_refer` reads of the file's import lines and text: whether they refer
        to `home`'s module, else the project modules it imports `name` from (a re-export if
        one of them reaches `home`)."""
        through: list[str] = []
        stem = os.path.basename(home)
        if stem == "__init__.py":
            stem = os.path.basename(os.path.dirname(home))
        stem = stem.partition(".")[0]
        runs = self._spellings(home)[0]
        file = self.by_path[path]
        attribute: Optional[bool] = None
        for level, module, names in self._import_lines(path):
            imported = module_of_import(file.module, file.is_package, level, module)
            if names is not None and (not names or "*" in names or name in names):
                source = by_module.get(imported)
                if imported in runs:  # from it or a package above it
                    return True, ()
                if source is not None:  # from a module that may re-export it
                    through.append(source)
                continue
            named = imported in runs if names is None else stem in names
            if named:
                if attribute is None:
                    text = self.texts[path]
                    attribute = any(_module_attribute(text, start, stem)
                                    for start in word_starts(text, name))
                if attribute:
                    return True, ()
        return False, tuple(through)

    def _quiet_builders(self, modules: set[str], datasets: set[str],
                        facts: dict[str, FileFacts]) -> set[str]:
        """Files naming no dataset word and no handle that import a dataset class holding a
        handle (`datasets`), or a function returning one, from its module and spell it as a
        call: a factory module (`from .shards import ShardFeatures` ... `return
        ShardFeatures(root)`) whose function a script gives its loader
        (`DataLoader(make_features(kind, root))`), or a script handing what it builds down a
        chain of helpers to one. Module handles and the functions reaching them are not
        followed here: a file using one builds no dataset."""
        if not datasets:
            return set()
        names = datasets | {fn.name for f in facts.values() for fn in f.functions
                            if any(r.target.rpartition(".")[2] in datasets for r in fn.returns)}
        pattern = words_pattern(names)
        if pattern is None:
            return set()
        # (a warm run's quiet file is not read: one found here was marked loud when it was)
        unnamed = set(self.texts) - self.dataset_files - self.handle_files - facts.keys()
        found = {p for p in unnamed
                 if self._imported_by(p) & modules and self._binds_from(p, modules, names)
                 and any(_called(self.texts[p], name) for name in pattern.found(self.texts[p]))}
        return self._loud(found)

    def _loud(self, found: set[str]) -> set[str]:
        """`found`, marked loud in the verdicts (`verdicts`): a file a round parsed though it
        names no handle and no dataset is read again on the next run (a warm run reads only
        the loud ones)."""
        quiet, loud = self._verdicts
        quiet -= found
        loud |= found
        return found

    def _arg_callees(self, facts: dict[str, FileFacts], loader_names: set[str]) -> set[str]:
        """Short names of the callables an argument of which may reach a loader's dataset:
        the loader callables and the classes keeping one (`_keeping_classes`)."""
        for path, f in facts.items():
            if path not in self._calls:
                self._calls[path] = _Calls(f)
        indexes = [self._calls[path] for path in facts]
        every = list(facts.values())
        callables = _loader_callables(every, loader_names, indexes)
        keeping = _keeping_classes(every, loader_names, indexes, set(callables))
        self._keeping = (len(facts), keeping)  # the callers' round asks again of these facts
        return callables | {_short(name) for name in keeping}

    def _gate(self, found: set[str], facts: dict[str, FileFacts]) -> set[str]:
        """What the callers' round adds now: the files naming a handle (one may be passed to a
        dataset's constructor), and those that may give a loader an object holding a handle a
        finding could be about (`_may_lead`); the others are kept in `_deferred_callers` until
        they may (on a library, most callers of its loader helpers pass other datasets)."""
        deferred = self._deferred_callers
        deferred |= found - self.handle_files
        released = self._may_lead(deferred)
        released |= {p for p in deferred - released if self._calls_from_handle_file(p, facts)}
        deferred -= released
        return (found & self.handle_files) | released

    def _calls_from_handle_file(self, path: str, facts: dict[str, FileFacts]) -> bool:
        """Whether a file calls a name it imports from a file naming a handle that gives one
        out of it (`store = ShardStore(root)`, then `make_loader(Features(store))`;
        `_handle_carriers`, once that file is parsed): what it gives a loader may hold the
        handle, though the file names none and the linker knows no class holding one yet.
        A handle file it takes from and not parsed yet is asked for (`_handle_sources`)."""
        found = self._builds_from_handles.get(path)
        if found is not None:
            return found
        file = self.by_path[path]
        text = self.texts[path]
        waiting = False
        for level, module, names in self._import_lines(path):
            if not names:
                continue
            imported = module_of_import(file.module, file.is_package, level, module)
            source = self._by_module.get(imported)
            if source not in self.handle_files:
                continue
            called = tuple(name for name in names if name != "*" and _called(text, name))
            if not called:
                continue
            if source not in facts:
                self._handle_sources.add(source)
                waiting = True
                continue
            carriers = self._carriers.get(source)
            if carriers is None:
                carriers = self._carriers[source] = _handle_carriers(facts[source])
            if not carriers.isdisjoint(called):
                self._builds_from_handles[path] = True
                return True
        if not waiting:
            self._builds_from_handles[path] = False
        return False

    def _release_callers(self, facts: dict[str, FileFacts], by_module: dict[str, str],
                         may_find: MayFind) -> set[str]:
        """The deferred callers to parse now that the other rounds add nothing: those that may
        lead to a class whose handles could make a finding. The names leading to the classes
        the linker named are read again from the facts; the linker is asked again only when
        files were parsed since and some callers stay deferred (at the end of the selection,
        that project is the one the rules read: the engine links it once)."""
        if self._asked == len(facts):
            return set()
        released: set[str] = set()
        if self._asked >= 0 and self._candidates is not None:
            released = self._release(facts, by_module)
            if not self._deferred_callers:
                return released
        self._asked = len(facts)
        answer = may_find(facts, True)
        self._candidates = None if answer is None else answer.classes
        if self._candidates is None:
            return released
        return released | self._release(facts, by_module)

    def _release(self, facts: dict[str, FileFacts], by_module: dict[str, str]) -> set[str]:
        """The deferred callers leading to the classes the linker named (`_candidates`). A warm
        run leaves quiet files unread: a subclass or a factory there would not be seen to
        lead to one, so every caller may (their facts are mostly cached)."""
        assert self._candidates is not None
        warm = len(self.texts) < len(self.by_path)
        found = None if warm else self._leading_names(self._candidates, facts, by_module)
        self._leading = None if found is None else frozenset(found)
        if found:
            self._lead_homes = {name: frozenset(homes) for name, homes in found.items()}
            self._lead_read = -1  # (the same names may now be bound in more places)
        return self._gate(set(), facts) - set(facts)

    def _leading_names(self, classes: frozenset[str], facts: dict[str, FileFacts],
                       by_module: dict[str, str]) -> Optional[dict[str, set[str]]]:
        """The names whose call or mention may give code an object holding a handle of one of
        `classes`, each with where it is bound (`_lead_homes`): theirs and their subclasses' (by
        the `class X(Base)` lines of every file read), the classes keeping such an object (an
        attribute built from one, a call's result kept, an annotation, a method returning
        one), the functions and methods returning one, the module variables bound to one, the
        lookups of a registry one is registered in by a decorator (`registry.get_task(name)`,
        a `build_dataset` of the decorator's module); transitively. A name leads from where
        it is bound only through a file that may name the leading one it refers to
        (`_name_reachers`): many projects in one tree share names (`Config`, `Dataset`,
        `Trainer`), and one's would otherwise make every other's lead. A worklist: each name
        is read again only when it leads from one more place. None: any file may (a finding
        whose class is not known, or a registry in a module not parsed)."""
        from .rules import ANY_CLASS  # (the linker's side: imported only when it answered)

        if ANY_CLASS in classes:
            return None
        leading: dict[str, set[str]] = {}

        def lead(name: str, home: str) -> bool:
            homes = leading.setdefault(name, set())
            if home in homes:
                return False
            homes.add(home)
            return True

        def reaches(path: str, name: str) -> bool:
            return any(home in ("", _ON_OBJECTS) or home == path
                       or path in self._name_reachers(home, name) for home in leading[name])

        for qualname in classes:
            module, _, short = qualname.rpartition(".")
            path = _module_file(module, by_module)
            own = path is not None and path in facts and facts[path].module == module
            lead(short, path if own and path else "")
        sources: list[tuple[str, str, str]] = []  # (file, name, where it is bound)
        by_short: dict[str, list[int]] = {}  # a name → the sources giving its objects
        registered: dict[str, list[tuple[str, str]]] = {}  # a class → (its file, callee)
        for path, f in facts.items():
            found = self._lead_edges.get(path)
            if found is None or found[0] is not f:
                found = self._lead_edges[path] = (f, _lead_edges(f, path))
            for name, home, shorts in found[1]:
                for short in shorts:
                    by_short.setdefault(short, []).append(len(sources))
                sources.append((path, name, home))
            for cls in f.classes:
                if cls.registered:
                    registered.setdefault(cls.name, []).extend(
                        (path, callee) for callee, _ in cls.registered)
        subclasses = self._subclasses()
        bound_here: dict[tuple[str, str], bool] = {}  # `_bound_in_file`, once per class line
        todo = list(leading)
        while todo:
            name = todo.pop()
            for sub, path in subclasses.get(name, ()):
                if not reaches(path, name):
                    continue
                key = (path, sub)
                here = bound_here.get(key)
                if here is None:
                    here = bound_here[key] = _bound_in_file(self.texts[path], sub)
                if lead(sub, path if here else ""):
                    todo.append(sub)
            for index in by_short.get(name, ()):
                path, source, home = sources[index]
                if reaches(path, name) and lead(source, home):
                    todo.append(source)
            for path, callee in registered.get(name, ()):
                if not reaches(path, name):
                    continue
                lookups = _registry_lookups(callee, facts, by_module)
                if lookups is None:
                    return None
                owner = callee.rpartition(".")[0]
                home = by_module.get(owner) or by_module.get(owner.rpartition(".")[0], "")
                todo += [lookup for lookup in lookups if lead(lookup, home)]
        return leading

    def _subclasses(self) -> dict[str, list[tuple[str, str]]]:
        """A base's name → the classes naming it as a base, with their files, from the `class
        X(Base)` lines of every file read (found again only when more were read)."""
        if self._subclass_index[0] != len(self.texts):
            index: dict[str, list[tuple[str, str]]] = {}
            for path in list(self.texts):
                for name, bases in self._class_bases(path):
                    for base in bases:
                        index.setdefault(base, []).append((name, path))
            self._subclass_index = (len(self.texts), index)
        return self._subclass_index[1]

    def _may_lead(self, paths: set[str]) -> set[str]:
        """Those of `paths` (callers of a function or class that hands what it is given to a
        loader) that may give it an object holding a handle a finding could be about: a file
        that may bind a name of `_leading` (it builds or fetches one: `_lead_binders`), or
        one that such a file imports, directly or through other modules
        (`_imported_closure`: what it is given may come from there, through its functions'
        parameters). Both are found once per names (and files read): a library's callers
        are mostly its modules, imported by nearly every file."""
        leading = self._leading
        if leading is None:
            return set(paths)
        if not leading:
            return set()
        if self._lead_of != leading or self._lead_read != len(self.texts):
            self._lead_of, self._lead_read = leading, len(self.texts)
            binders = self._lead_binders(leading)
            self._led = (binders, self._imported_closure(binders))
        binders, led = self._led
        return paths & (binders | led)

    def _lead_binders(self, leading: frozenset[str]) -> set[str]:
        """The files read that spell a name of `leading` where they may bind it: one bound in a
        file it leads from (`_lead_homes`), in the files that may name it from there
        (`_name_reachers`); one that leads from anywhere (a class's nested class, one nothing
        read defines) wherever it is spelled; a method's nowhere (`_lead_edges`). A file that
        may bind one is asked of the names it spells (across many projects, hundreds of names
        reach thousands of files each: no file → names map is built)."""
        pattern = words_pattern(leading)
        assert pattern is not None
        homes = self._lead_homes
        anywhere = {name for name in leading if "" in homes.get(name, ("",))}
        loose = words_pattern(anywhere)
        texts = self.texts
        found = {path for path, text in texts.items()
                 if loose is not None and loose.search(text) is not None}
        # the files that may bind one (a union in C, cheaper than reading every file's
        # words until the names reach each file many times over: fourteen projects' 984
        # names reached the tree 250 times over); past that, every file read is asked
        may_bind: set[str] = set()
        budget = _UNION_PER_FILE * len(texts)
        for name, home in ((n, h) for n in leading for h in homes.get(n, ())
                           if h and h != _ON_OBJECTS):
            reach = self._name_reachers(home, name)
            budget -= len(reach)
            if budget < 0:
                may_bind = set(texts)
                break
            may_bind.update(reach)
        for path in may_bind - found:
            if path in texts and any(path in self._name_reachers(home, name)
                                     for name in pattern.found(texts[path])
                                     for home in homes.get(name, ())
                                     if home and home != _ON_OBJECTS):
                found.add(path)
        return found

    def _imported_closure(self, seeds: set[str]) -> set[str]:
        """`seeds` and the modules they import, transitively (`_imports_of`)."""
        closure = set(seeds)
        frontier = [p for p in seeds if not self.by_path[p].is_package]
        while frontier:
            for found in self._imports_of(frontier.pop()):
                if found not in closure:
                    closure.add(found)
                    if not self.by_path[found].is_package:
                        frontier.append(found)
        return closure

    def _imports_of(self, path: str) -> list[str]:
        """The files a module imports (found once per file). From a package's `__init__` only
        the names imported are (`from pkg import run_eval`: the module its `from .runner
        import run_eval` names): a package imported whole is not followed further (on a
        library, the top package imports everything)."""
        found = self._imports_below.get(path)
        if found is not None:
            return found
        by_module = self._by_module
        out: list[str] = []
        file = self.by_path[path]
        for level, name, names in self._import_lines(path):
            module = module_of_import(file.module, file.is_package, level, name)
            target = _module_file(module, by_module)
            if target is None:
                continue
            out.append(target)
            if not names or not self.by_path[target].is_package:
                continue
            for each in names:
                below = by_module.get(f"{module}.{each}")
                if below is not None:
                    out.append(below)
                else:
                    out += self._reexported(target, each)
        self._imports_below[path] = out
        return out

    def _reexported(self, package: str, name: str) -> set[str]:
        """The files a package's `__init__` (`package`) imports `name` from, through the
        packages it imports it from in turn (a star or a list not on one line may hold it)."""
        key = (package, name)
        found = self._reexports.get(key)
        if found is not None:
            return found
        found = self._reexports[key] = set()
        todo, seen = [package], {package}
        while todo:
            for module, names in self._from_imports(todo.pop()):
                if names and name not in names and "*" not in names:
                    continue
                path = _module_file(module, self._by_module)
                if path is None or path in seen:
                    continue
                seen.add(path)
                found.add(path)
                if self.by_path[path].is_package:
                    todo.append(path)
        return found

    def _ask_start_loaders(self, facts: dict[str, FileFacts], by_module: dict[str, str],
                           may_find: MayFind) -> Optional[set[str]]:
        """Once the other rounds add nothing: whether a start method could change a finding,
        and the loaders whose start methods could (`_start_loaders`), asked again when files
        were parsed since (a loader found may reach one more class). What the start-method
        round then adds, from every entry setting one, parsed already or not; None at the
        first question if no start method can change a finding."""
        if self._starts_asked == len(facts):
            return set()
        first = self._starts_asked < 0
        self._starts_asked = len(facts)
        answer = may_find(facts, False)
        if answer is None:
            return None if first else set()
        loaders = answer.loader_files
        if not first:
            if loaders is not None and self._start_loaders is not None:
                loaders |= self._start_loaders  # (only ever more)
            if loaders == self._start_loaders:
                return set()
        self._start_loaders = loaders
        self._start_classes = self._start_classes | answer.classes  # (only ever more)
        return self._start_method_reach(facts, by_module, self.start_files) - set(facts)

    def _start_method_reach(self, facts: dict[str, FileFacts], by_module: dict[str, str],
                            starts: Optional[set[str]] = None) -> set[str]:
        """Entry scripts that set a start method, the files between them and the loaders they
        reach, and every other importer of those loaders: a start method reaches a loader only
        if every entry importing it sets one (the linker needs those that set none: they fork).
        The loaders, once the linker named those reaching a class whose handles could make a
        finding, are only those (`_start_loaders`: on a tree of many projects, the others' are
        most of it)."""
        loader_files = {p for p, f in facts.items() if f.loaders}
        finders = None  # (the classes whose handles could make a finding, if named)
        if self._start_loaders is not None:
            loader_files &= self._start_loaders
            finders = self._start_classes
        if any(c.held and c.method("__getstate__") and (finders is None or c.qualname in finders)
               for f in facts.values() for c in f.classes):
            # A dataset that decides its pickle may be safe by spawn: also the loaders no
            # parsed file names it in (it may be built by name from a config), if an entry
            # script sets a start method.
            loader_files |= {p for p in self.dataset_files if "DataLoader(" in self.texts[p]}
        wanted = self._scoped_start_reach(facts, by_module)
        if starts is None:  # those parsed were followed when they were parsed
            starts = self.start_files - set(facts)
        chains = _import_chains(starts, loader_files, self._imported_by, by_module)
        if not chains - set(facts):
            return wanted
        reached = chains & loader_files
        return wanted | chains | _importers(reached, self.by_path, self.texts,
                                            self._imported_by, by_module)

    def _scoped_start_reach(self, facts: dict[str, FileFacts], by_module: dict[str, str]
                            ) -> set[str]:
        """A start method set inside a function counts only where an entry runs it: the
        importers of such a file (who may call it), and the files setting one that a parsed
        file imports (`from setup import init_workers`)."""
        scoped = {p for p, f in facts.items() if f.scoped_start_methods} - self._scoped_seen
        self._scoped_seen |= scoped
        wanted = _importers(scoped, self.by_path, self.texts, self._imported_by, by_module) \
            if scoped else set()
        unparsed = self.start_files - set(facts)
        if unparsed:
            imported = {_module_file(q, by_module) for f in facts.values() for _, q in f.imports}
            wanted |= unparsed & imported
        return wanted

    def _callers(self, facts: dict[str, FileFacts], dataset_names: set[str],
                 loader_names: set[str]) -> set[str]:
        """Files that may call a function whose parameter reaches a loader (`def val(net,
        dataset): DataLoader(dataset, ...)`): what they pass is the loader's dataset. A
        module-level function or a class is called only where its name can come from: its
        own file and the files that may bind it (`_name_reachers`); a method anywhere its
        name is. A function returning its parameter (`wrap(ds)`) matters only where what it
        returns meets a dataset or a loader: in a file naming one (`dataset_names`: the
        class graph's); elsewhere the value goes on to a callable or a factory another round
        follows."""
        keeping = self._keeping[1] if self._keeping[0] == len(facts) else None
        names = _caller_names(facts, loader_names, self._calls, keeping) - self._callers_searched
        self._callers_searched |= names
        pattern = words_pattern({name for name, _, _ in names})
        if pattern is None:
            return set()
        homes: dict[str, set[tuple[str, bool]]] = {}
        for name, home, returned in names:
            homes.setdefault(name, set()).add((home, returned))
        naming = words_pattern(dataset_names)
        classes = {c.name for f in facts.values() for c in f.classes}
        # the files that can reach a definition: only those are read for its name; a
        # method's callers anywhere, but they spell its name (a scan in C per name, where
        # the words of every text would be collected)
        reach = {(name, home): self._name_reachers(home, name) for name, home, _ in names
                 if home}
        candidates = set().union(*reach.values())
        methods = {name for name, home, _ in names if not home}
        if methods:
            candidates.update(path for path, text in self.texts.items()
                              if any(name in text for name in methods))
        found = set()
        for path in candidates:
            if path in facts or path not in self.texts:  # not read: a warm run's quiet file
                continue
            text = self.texts[path]
            here = [(name, *how) for name in pattern.found(text) for how in homes[name]]
            if not here:
                continue
            names_dataset = path in self.dataset_files \
                or (naming is not None and naming.search(text) is not None)
            if any((not home or path in reach[name, home]) and (names_dataset or not returned)
                   and (name in classes or _may_call(text, name))
                   for name, home, returned in here):
                found.add(path)
        return self._loud(found)

    def _index_now(self) -> None:
        """The import index of the files read (`_index_imports`) and what reaches the files
        left unread (a warm run's quiet ones: one may re-export anything, so what reaches
        it is in every answer), again when files were read since (their imports count)."""
        if len(self.texts) != self._indexed:
            self._index_imports()
            unread = {p for p in self.by_path if p not in self.texts}
            self._unread_reach = self._closure(unread) if unread else frozenset()

    def _name_reachers(self, path: str, name: str) -> frozenset[str]:
        """The files that may name `name`, defined in `path`: itself; the files importing it
        by name (`from a.b import f`, a list holding it or `*`, the module by any spelling:
        `utils` for a script's sibling examples/utils.py), and through a package re-exporting
        it (listing it), that package's importers of it, transitively; and the files binding
        one of those modules whole, or a module above it on the way (`import a.x` binds `a`;
        `from a import b` for a/b/c.py: `b.c.f(ds)`; a list not all on one line), and the
        files binding one of those whole in turn. Not a file importing other names from a
        module on the way (`from a.b import g`), nor one importing a name from a file binding
        a module (`from w import a`, `a` bound by `import a.b` in w: not followed). From
        import lines, over-reaching (a spelling matches any run of a module's parts) rather
        than missing. A file left unread (a warm run's quiet one) may re-export anything:
        what reaches it is in every answer. On a library whose top package re-exports
        everything, any name of it would otherwise reach nearly every file."""
        self._index_now()
        key = (path, name)
        found = self._name_reach.get(key)
        if found is not None:
            return found
        closure, frontier = {path}, [path]
        while frontier:
            for end in self._spellings(frontier.pop())[1]:
                for importer in (*self._listing.get((end, name), ()),
                                 *self._listing.get((end, "*"), ())):
                    if importer not in closure:
                        closure.add(importer)
                        frontier.append(importer)
        for each in list(closure):
            closure |= self._whole_reach(each)
        found = self._name_reach[key] = frozenset(closure) | self._unread_reach
        return found

    def _may_hand_on(self, path: str, spelled: Iterable[str], builders: set[str]) -> bool:
        """Whether a file spelling names of a parsed module (`spelled`) may make what they give
        reach a dataset: it names a dataset word, it spells a dataset class or what builds
        one (`builders`: `_builders`), or another file may import it. A file spelling only a
        holder that is not a dataset (or a module handle, or a helper), naming no dataset
        word, that no file imports (a test module, an example script), defines nothing another
        file can name (a class keeping the holder, a subclass, a factory) and builds no
        dataset to keep one in."""
        return path in self.dataset_files or not builders.isdisjoint(spelled) \
            or self._imported(path)

    def _imported(self, path: str) -> bool:
        """Whether another file may import `path`'s module (`import a.b.m`, `from a.b import
        m`), a name from it, or a package above it with a list whose names cannot be read
        (`from a.b import (` never closed), by any spelling (`_spellings`); always, while some
        file is left unread (a warm run's quiet ones). Binding a package above it whole
        (`import a`) reaches it only where another file imports it."""
        self._index_now()
        if len(self.texts) < len(self.by_path):
            return True
        runs, ends = self._spellings(path)
        groups = [*(self._below.get(e, ()) for e in ends),
                  *(self._importing.get(e, ()) for e in ends),
                  *(self._open_lists.get(r, ()) for r in runs)]
        return any(importer != path for group in groups for importer in group)

    def _whole_reach(self, path: str) -> frozenset[str]:
        """The files binding `path`'s module whole (`import a.b`, `from a import b`, a list
        not on one line: the runs of `_spellings`), and those binding one of them whole in
        turn (`import w`: `w.a.b.f(ds)`); found once per file, a file's found before whole."""
        found = self._whole.get(path)
        if found is not None:
            return found
        closure: set[str] = set()
        frontier = [path]
        while frontier:
            for run in self._spellings(frontier.pop())[0]:
                for importer in self._below.get(run, ()):
                    if importer in closure:
                        continue
                    closure.add(importer)
                    done = self._whole.get(importer)
                    if done is not None:  # complete: whatever binds it whole is in it
                        closure |= done
                    else:
                        frontier.append(importer)
        found = self._whole[path] = frozenset(closure)
        return found

    def _index_imports(self) -> None:
        """`_importing`, `_listing` and `_below` from the import lines of the files read."""
        self._indexed = len(self.texts)
        self._name_reach, self._whole = {}, {}
        self._below, self._importing, self._listing, self._open_lists = {}, {}, {}, {}
        for read in list(self.texts):
            file = self.by_path[read]
            for level, name, names in self._import_lines(read):
                module = module_of_import(file.module, file.is_package, level, name)
                if names is None:  # `import a.b`: `a`, `a.b` and all below
                    parts = module.split(".")
                    keys = [".".join(parts[:cut]) for cut in range(1, len(parts) + 1)]
                elif not names:  # names not on the line: the module or all below it
                    keys = [module]
                    self._open_lists.setdefault(module, set()).add(read)
                else:  # the module itself names what it holds, each name what is below
                    self._importing.setdefault(module, set()).add(read)
                    for each in names:
                        self._listing.setdefault((module, each), set()).add(read)
                    keys = [f"{module}.{n}" if module else n for n in names if n != "*"]
                for key in keys:
                    self._below.setdefault(key, set()).add(read)

    def _closure(self, seeds: set[str]) -> frozenset[str]:
        """`seeds` and the files importing one of them or a name from one (`_spellings`),
        transitively, whatever names: what may reach a file left unread (`_index_now`)."""
        closure, frontier = set(seeds), list(seeds)
        # each group of importers is gone through once: all of it is in `closure` after
        # (`b` is a run of most modules of a package `a.b`)
        runs_seen: set[str] = set()
        ends_seen: set[str] = set()
        while frontier:
            current = frontier.pop()
            runs, ends = self._spellings(current)
            importers: list[Iterable[str]] = [self._below.get(r, ()) for r in runs - runs_seen]
            importers += [self._importing.get(r, ()) for r in ends - ends_seen]
            runs_seen |= runs
            ends_seen |= ends
            for importer in (i for group in importers for i in group):
                if importer not in closure:
                    closure.add(importer)
                    frontier.append(importer)
        return frozenset(closure)

    def _spellings(self, path: str) -> tuple[set[str], set[str]]:
        """Every run of consecutive parts of each name `path` may be imported by (its module,
        the other spellings of discovery.module_spellings): `b`, `a.b`, `b.c` ... for `a.b.c`,
        so a package above it and a spelling from another root match too; and the runs
        ending with its last part (`c`, `b.c`, `a.b.c`): what names the module itself."""
        found = self._runs.get(path)
        if found is None:
            file = self.by_path[path]
            runs: set[str] = set()
            ends: set[str] = set()
            for spelling in {file.module, *module_spellings(path, file.module)}:
                parts = spelling.split(".") if spelling else []
                runs |= {".".join(parts[i:j]) for i in range(len(parts))
                         for j in range(i + 1, len(parts) + 1)}
                ends |= {".".join(parts[i:]) for i in range(len(parts))}
            found = self._runs[path] = (runs, ends)
        return found

    def _reexporters(self, modules: set[str], exported: set[str],
                     facts: dict[str, FileFacts]) -> set[str]:
        """The other packages importing a name an interesting module exports, or such a
        module (`from .remote import RemoteImages as Images` in imaging/__init__.py, naming
        neither a dataset nor a handle): a name may resolve through them (`imaging.Images`),
        and a package above them through them in turn (the next round). From import lines;
        a list not on one line (`from a import (`) counts as naming any."""
        found = set()
        loud = self.dataset_files | self.handle_files
        for path in self.texts:
            if path in facts or path in loud or not self.by_path[path].is_package:
                continue
            for module, names in self._from_imports(path):
                if (module in modules and (not names or not exported.isdisjoint(names))) \
                        or any(f"{module}.{name}" in modules for name in names):
                    found.add(path)
                    break
        return found

    def _binds_from(self, path: str, modules: set[str], exported: set[str]) -> bool:
        """Whether a file importing one of `modules` may get what they export through it:
        it imports the module itself (`import a.b`: `a.b.X`), a module below it, or one of
        the names it exports (`from a.b import X`), or names not all on the line (`from a.b
        import (`, `*`); not a file importing only other names from there (`from
        torch_geometric.data import Data`, where `DataLoader` then comes from elsewhere)."""
        file = self.by_path[path]
        for level, name, names in self._import_lines(path):
            module = module_of_import(file.module, file.is_package, level, name)
            if module not in modules:
                continue
            if names is None or not names or "*" in names or not exported.isdisjoint(names) \
                    or any(f"{module}.{n}" in modules for n in names):
                return True
        return False

    def _imported_names(self, path: str, module: str) -> Optional[tuple[str, ...]]:
        """The names a file imports from `module` by `from` lines, and those it spells as
        attributes of the module imported by name (`from a import b`: `b.f`); or None when it
        may use any of them: it imports the module itself (`import a.b`), renames it (`from a
        import b as c`), or imports a list not on one line (`from a.b import (`) or `*`."""
        file = self.by_path[path]
        found: list[str] = []
        for level, name, names in self._import_lines(path):
            imported = module_of_import(file.module, file.is_package, level, name)
            if names is None:
                if imported == module or module.startswith(imported + "."):
                    return None
                continue
            if any(module.startswith(f"{imported}.{n}.") for n in names):
                return None  # `from a import b`: `b.c.f` may be anything below a.b
            local = next((n for n in names if f"{imported}.{n}" == module), None)
            if local is not None:  # `from a import b`: what `b.f` spells, unless renamed
                text = self.texts[path]
                if _renamed(text, local):
                    return None
                found += _attributes(text, local)
                continue
            if imported != module:
                continue
            if not names or "*" in names:
                return None
            found += names
        return tuple(found)

    def _from_imports(self, path: str) -> list[tuple[str, tuple[str, ...]]]:
        """(module, the names listed: () when unknown) for each `from` import of a file."""
        found = self._froms.get(path)
        if found is None:
            file = self.by_path[path]
            found = self._froms[path] = [
                (module_of_import(file.module, file.is_package, level, name), names)
                for level, name, names in self._import_lines(path) if names is not None]
        return found

    def _may_bind(self, path: str, name: str) -> bool:
        """Whether the module `path` may bind `name` (define, import or assign it): only if
        its text spells it, or through a star import (`from .x import *`)."""
        found = self._binds.get((path, name))
        if found is None:
            text = self.texts[path]
            found = self._binds[(path, name)] = "import *" in text or spells_word(text, name)
        return found

    def _imported_by(self, path: str) -> set[str]:
        """The modules a file imports: those its import lines name, and the modules a `from`
        line imports by name (`from . import readers`: `pkg.readers`)."""
        if path not in self._imports:
            if self._modules is None:
                known = {f.module for f in self.by_path.values() if f.module}
                self._modules = known | self._aliases().keys()
            file = self.by_path[path]
            found = set()
            for level, name, names in self._import_lines(path):
                module = module_of_import(file.module, file.is_package, level, name)
                found.add(module)
                if names:
                    found.update(below for n in names
                                 if (below := f"{module}.{n}" if module else n) in self._modules)
            self._imports[path] = found
        return self._imports[path]

    def _aliases(self) -> dict[str, str]:
        """The other spellings of the files' modules (`discovery.module_aliases`), found once."""
        if self._spelled is None:
            self._spelled = module_aliases((f.path, f.module) for f in self.by_path.values())
        return self._spelled

    def _class_bases(self, path: str) -> ClassBases:
        """The `class X(...)` lines of a file read, found once (several class graphs ask)."""
        found = self._bases.get(path)
        if found is None:
            found = self._bases[path] = class_bases(self.texts[path])
        return found

    def _import_lines(self, path: str) -> ImportLines:
        """The import lines of a file read, found once (the prefilter and the rounds ask)."""
        found = self._lines.get(path)
        if found is None:
            found = self._lines[path] = import_lines(self.texts[path])
        return found


def _attributes(text: str, local: str) -> list[str]:
    """The names `text` spells as attributes of `local` (`fs.open`: `open`)."""
    after = len(local) + 1
    return [word.group() for start in word_starts(text, local + ".")
            if (word := _WORD_AT.match(text, start + after)) is not None]


_WORD_AT = re.compile(r"\w+")


def _renamed(text: str, name: str) -> bool:
    r"""Whether `text` spells `name as` (`\bname\s+as\b`): each whole-word occurrence found
    by `str.find` (a regex starting with `\b` tries every position of the text)."""
    for start in whole_words(text, name):
        after = at = start + len(name)
        while at < len(text) and text[at].isspace():
            at += 1
        if at > after and text.startswith("as", at) and not is_word_char(text[at + 2:at + 3]):
            return True
    return False


def _module_attribute(text: str, start: int, stem: str) -> bool:
    """Whether the word at `start` is an attribute of what may be a module named `stem`:
    `stem.name` (`import a.b.stem`, `from a.b import stem`), or of a name an import binds
    with `as` (`import a.b.stem as m`: `m.name`); not `self.name` or `args.name`."""
    at = start - 1
    while at >= 0 and text[at] in " \t\\\r\n":
        at -= 1
    if at < 0 or text[at] != ".":
        return False
    end = at
    while end > 0 and text[end - 1] in " \t\\\r\n":
        end -= 1
    begin = end
    while begin > 0 and is_word_char(text[begin - 1]):
        begin -= 1
    qualifier = text[begin:end]
    if not qualifier:
        return False
    return qualifier == stem or _imported_as(text, qualifier)


def _imported_as(text: str, name: str) -> bool:
    r"""Whether an import line of `text` binds `name` with `as` (`\bimport\b[^\n]*\bas[ \t]+
    name\b`): the rest of each line from a whole word `import` (found by `str.find`) searched."""
    pattern = re.compile(rf"\bas[ \t]+{re.escape(name)}\b")
    for start in whole_words(text, "import"):
        end = text.find("\n", start)
        if pattern.search(text, start + 6, len(text) if end == -1 else end):
            return True
    return False


def _called(text: str, name: str) -> bool:
    """Whether `text` spells `name` as a call (`Name(`, `Name.from_config(`), not only in an
    import or an annotation."""
    return any(re.match(r"\s*[(.]", text[start + len(name):start + len(name) + 40])
               for start in word_starts(text, name))


def _may_call(text: str, name: str) -> bool:
    """Whether `text` may hold a call site the linker ties to the function or method `name`,
    or a re-export of it: the name then comes before a call's parenthesis (`name(`,
    `obj.name (`, `(name)(`, `name  # note` then `(` on the next line) or in an import list
    (`from m import name as n`, `name,`, `name)`, `name` ending the line). A name only
    mentioned (`for each file`, `"select"`, `getattr(o, "name")`, `name.__doc__`) ties nothing:
    the linker follows call sites of functions, not values of them (a class is followed as
    a value: `run(Trainer)`; a dunder is called without its name: `Cls(ds)`)."""
    if name.startswith("__") and name.endswith("__"):
        return True
    after = _call_or_import()
    return any(after.match(text, start + len(name)) for start in word_starts(text, name))


@lru_cache(maxsize=1)
def _call_or_import() -> re.Pattern[str]:
    """What follows a name in a call or an import list (`_may_call`), matched where it ends."""
    return re.compile(r"[ \t\r\f]*(?:[(),;#\\]|as(?!\w)|$)", re.M)


def _needed_modules(all_facts: Iterable[FileFacts], by_module: dict[str, str],
                    dataset_words: set[str], handle_files: set[str],
                    may_bind: Optional[Callable[[str, str], bool]] = None,
                    loader_words: Optional[set[str]] = None,
                    arg_callees: Optional[set[str]] = None,
                    demands: Optional[list[_Demands]] = None,
                    files: Optional[dict[tuple[str, str], Optional[str]]] = None) -> set[str]:
    """Files defining names that dataset-relevant facts refer to: the bases of classes that
    hold handles or may be datasets, what loaders construct (through factories and module
    variables, followed on demand), worker_init_fns. A module found for a name only as a
    package above it (`pkg` for `pkg.self.config.get`, a script's sibling spelling of a
    local's attribute, or of `os.path.join`) is parsed only if it may bind the next part
    (`may_bind`): the linker resolves the name through that binding, or not at all.
    `demands`: each file's `_Demands` (in the order of `all_facts`), when kept from a round
    before; `files`: (name, package) → `_demanded_file`, kept across the rounds (the same
    arguments each round)."""
    every = list(all_facts)
    demanded: set[str] = set()
    sources: dict[str, FileFacts] = {}

    def demand(names: Iterable[str], facts: FileFacts) -> None:
        for name in names:
            if name and name not in demanded:
                demanded.add(name)
                sources[name] = facts

    naming = _BaseWords(dataset_words)
    for at, facts in enumerate(every):
        index = demands[at] if demands is not None else None
        own = index.own if index is not None else None
        if own is None:
            own = _own_demands(facts, naming, by_module, handle_files)
            if index is not None:  # the same each round: the arguments are the run's
                index.own = own
        demand(own, facts)
    if arg_callees is not None:
        _demand_dataset_calls(every, demand, dataset_words, arg_callees, demands,
                              lambda name: _module_file(name, by_module) in handle_files)
    _demand_loader_classes(every, demand, dataset_words if loader_words is None else loader_words)
    _follow_factories(every, demand, demanded,
                      [d.factories for d in demands] if demands is not None else None)
    wanted: set[str] = set()
    for name in demanded:
        package = sources[name].module.rpartition(".")[0]
        key = (name, package)
        path = files.get(key, "") if files is not None else ""
        if path == "":
            path = _demanded_file(name, package, by_module, may_bind)
            if files is not None:
                files[key] = path
        if path is not None:
            wanted.add(path)
    return wanted


def _demanded_file(name: str, package: str, by_module: dict[str, str],
                   may_bind: Optional[Callable[[str, str], bool]]) -> Optional[str]:
    """The file `_needed_modules` parses for a demanded `name` (demanded first by a module of
    `package`), or None. A name the project does not define may be a script's sibling module
    (`utils.f` beside examples/train.py), never an attribute of the package itself: `import
    typing` or `torch.utils.data.Dataset` in pkg/data/db.py does not reach pkg/data/__init__.py
    (that it spells `typing` made it parsed)."""
    found = _module_part(name, by_module)
    if found is None and package:  # a sibling module of a script
        found = _module_part(f"{package}.{name}", by_module)
        if found is not None and found[0] == by_module.get(package):
            found = None
    if found is not None:
        path, part = found
        if not part or may_bind is None or may_bind(path, part):
            return path
    return None


def _own_demands(facts: FileFacts, naming: Callable[[str], bool], by_module: dict[str, str],
                 handle_files: set[str]) -> list[str]:
    """The names `_needed_modules` demands for `facts` itself, in order (`naming`: whether a
    base names a dataset word)."""
    out: list[str] = []
    imports = facts.import_map()
    relevant = [c for c in facts.classes if c.held or c.class_held
                or any(naming(base) for base in c.bases)]
    if relevant or facts.loaders:
        out.extend(facts.star_imports)
    for cls in relevant:
        out.extend(cls.bases)
        # (a module's attribute read, `clients.SESSION`, is qualified already)
        for name in {imports.get(g) or (g if "." in g else "")
                     for m in cls.methods for g in m.globals_read}:
            path = _module_file(name, by_module) if name else None
            if path in handle_files:  # a module-level handle may live there
                out.append(name)
        out.extend(r.target for _, refs in cls.attr_refs for r in refs)
        out.extend(t for _, t in cls.param_types)  # `reader: FeatureReader`
        out.extend(c.callee for c in cls.held_calls if not c.callee.startswith("self."))
        # the registry a decorator puts it in (`@register("h5")`): its module tells the
        # linker which lookups (`build_dataset("h5")`) build it
        out.extend(callee for callee, _ in cls.registered)
    for loader in facts.loaders:
        out.extend(r.target for r in loader.datasets)
        out.extend(r.target for d in loader.datasets for a in d.arg_refs for r in a.refs)
        out.extend(loader.worker_inits)
    return out


def _module_part(name: str, by_module: dict[str, str]) -> Optional[tuple[str, str]]:
    """`_module_file`'s module for `name`, and the part of `name` after it ("" when `name`
    is the module): what that module must bind for the name to resolve through it."""
    parts = name.split(".") if name else []
    for cut in range(len(parts), 0, -1):
        path = by_module.get(".".join(parts[:cut]))
        if path is not None:
            return path, parts[cut] if cut < len(parts) else ""
    return None


def _demand_dataset_calls(every: list[FileFacts], demand: Demand, class_names: set[str],
                          arg_callees: set[str], demands: Optional[list[_Demands]] = None,
                          in_handle_file: Callable[[str], bool] = lambda name: False
                          ) -> None:
    """The classes the class graph says may be datasets (`class_names`) built where a loader
    may get them: in an argument of a callable that may hand it to one (`arg_callees`:
    `make_loader(Transformed(Remote(url)))`), with what the calls beside them build from a
    file naming a handle (`make_loader(Items(Catalog(url)))`: the dataset may keep it), or
    as an attribute a loader reads (`self.ds = Transformed(...)`, `DataLoader(self.ds)`; by
    the attribute's name, in any class); a loader's own dataset is demanded with its
    arguments already."""
    indexes = demands if demands is not None else [_Demands(f) for f in every]
    read: set[str] = set()  # attributes loaders read
    for facts, index in zip(every, indexes):
        for callee, built in index.site_calls:
            if callee in arg_callees:
                datasets = [t for t in built if _short(t) in class_names]
                demand(datasets, facts)
                if datasets:
                    demand((t for t in built if in_handle_file(t)), facts)
        read |= index.loader_attrs
    if read:
        for facts, index in zip(every, indexes):
            demand((t for attr, built in index.attr_calls if attr in read
                    for t in built if _short(t) in class_names), facts)


def _demand_loader_classes(every: list[FileFacts], demand: Demand, class_names: set[str]
                           ) -> None:
    """The classes called like DataLoaders with a dataset (`FastDataLoader(ds, ...)`) that
    the class graph says may subclass DataLoader (`class_names`), what re-exports them and
    their bases, as far as parsed so far: the linker needs the whole way up to torch's."""
    called: set[str] = set()
    for facts in every:
        for candidate in facts.loader_candidates:
            short = candidate.via.rpartition(".")[2]
            if short in class_names:
                demand([candidate.via], facts)
                called.add(short)
    grown = bool(called)  # (no class called so: none re-exported, no bases)
    while grown:
        grown = False
        for facts in every:
            # a re-export (`from .loader import LTRLoader` in a package) and the class's bases
            found = [q for local, q in facts.imports if local in called]
            found += [b for cls in facts.classes if cls.name in called for b in cls.bases]
            demand(found, facts)
            new = {q.rpartition(".")[2] for q in found} - called
            grown |= bool(new)
            called |= new


def _follow_factories(every: list[FileFacts], demand: Demand, demanded: set[str],
                      factories: Optional[list[_Factories]] = None) -> None:
    """What demanded factories return, demanded module variables hold and demanded classes
    derive from is demanded too, and what a demanded name of a package re-exports (`from .wrap
    import X` in utils/__init__.py for `utils.X`; `from .wrap import *` for `utils.X` or a star
    import of `utils`). `factories`: each file's `_Factories` (in the order of `every`), when
    kept from a round before."""
    indexes = factories if factories is not None else [_Factories(f) for f in every]
    changed = True
    while changed:
        before = len(demanded)
        by_module: dict[str, list[str]] = {}  # `utils.X` → utils: [X]
        for name in demanded:
            module, _, attr = name.rpartition(".")
            by_module.setdefault(module, []).append(attr)
        for facts, index in zip(every, indexes):
            if facts.module:
                _follow_reexports(facts, by_module.get(facts.module, ()), demand, demanded)
            for qualname, name, targets in index.functions:
                if qualname in demanded or name in demanded:
                    demand(targets, facts)
            for qualname, name, targets in index.variables:
                if qualname in demanded or name in demanded:
                    demand(targets, facts)
            for qualname, bases, methods in index.classes:
                if qualname in demanded:  # a class built: its bases (a handle's subclass)
                    demand(bases, facts)
                for method, targets in methods:  # `Frames.from_config(cfg)`: what it returns
                    if method in demanded:
                        demand(targets, facts)
        changed = len(demanded) != before


class _Factories:
    """What `_follow_factories` reads of a file, found once (the rounds ask again of every file
    parsed), in the file's order: (qualified name, name, what it returns) of each function
    returning something, (qualified name, name, what it holds) of each module variable
    holding something, (qualified name, bases, (qualified name, what it returns) of each
    method returning something) of each class."""

    def __init__(self, facts: FileFacts) -> None:
        self.functions = tuple((func.qualname, func.name, tuple(r.target for r in func.returns))
                               for func in facts.functions if func.returns)
        self.variables = tuple((f"{facts.module}.{name}", name, tuple(r.target for r in refs))
                               for name, refs in facts.module_vars if refs)
        self.classes = tuple(
            (cls.qualname, cls.bases,
             tuple((f"{cls.qualname}.{m.name}", tuple(r.target for r in m.returns))
                   for m in cls.methods if m.returns))
            for cls in facts.classes)


def _follow_reexports(facts: FileFacts, names: Iterable[str], demand: Demand,
                      demanded: set[str]) -> None:
    """The definitions behind the demanded `names` of `facts`'s module (`utils.X`: X) that it
    imports, and what a demanded star import of it (`from utils import *`) star-imports."""
    if facts.module in demanded:
        demand(facts.star_imports, facts)
    if not names:
        return
    imports = facts.import_map()
    for name in names:
        if name in imports:
            demand([imports[name]], facts)
        else:
            demand((f"{star}.{name}" for star in facts.star_imports), facts)


# (these patterns are compiled by `re` when first used, not at import: a run of files without
# a dataset, `check`'s start-up, needs none of them)
_LOADER_FIRST_ARG = r"DataLoader\(\s*(?:dataset\s*=\s*)?(\w+)\s*[,)]"


_LOADER_SELF_ARG = r"DataLoader\(\s*(?:dataset\s*=\s*)?self\.(\w+)\s*[,)]"


def _loader_of_parameter(text: str) -> bool:
    """A text test: a DataLoader whose dataset is a parameter of a function defined there
    (`def val(net, dataset): DataLoader(dataset, ...)`, or a loop variable over one), or an
    attribute set from a name (`self.train_set = train_set`, a constructor's parameter); its
    callers say what it is. (Patterns of their own, not one compiled per name: on
    pytorch_geometric those cost 2 ms of a check.)"""
    if "DataLoader(" not in text:
        return False
    names = dict.fromkeys(match.group(1) for match in re.finditer(_LOADER_FIRST_ARG, text))
    if names:
        params = _parameter_words(text)
        if not params.isdisjoint(names):
            return True
        # a loop variable over a parameter: `for ds in datasets:`, `for k, ds in d.items()`
        if any(loop.group(1) in names and loop.group(2) in params
               for loop in _matches_after(text, "for", _LOOP_OVER)):
            return True
    attrs = {match.group(1) for match in re.finditer(_LOADER_SELF_ARG, text)}
    return bool(attrs) and any(match.group(1) in attrs
                               for match in re.finditer(_SELF_SET_FROM_NAME, text, re.M))


# `for [k, ]v in xs`: the loop variable, what it loops over (`_loader_of_parameter`)
_LOOP_OVER = r"\s+(?:\w+\s*,\s*)?(\w+)\s+in\s+(\w+)"
# `self.x = name` ending its line: the attribute
_SELF_SET_FROM_NAME = r"self\.(\w+)\s*=\s*\w+\s*$"
# a function's parameter list, up to its first `)`
_PARAMETER_LIST = r"def \w+\(([^)]*)"


def _parameter_words(text: str) -> set[str]:
    """The words of the parameter lists of the functions `text` defines, up to each list's
    first `)`: a name is one of them when it is a whole word after `def f(`, annotations
    and defaults included."""
    return {word for match in re.finditer(_PARAMETER_LIST, text)
            for word in re.findall(r"\w+", match.group(1))}


def _caller_names(facts: dict[str, FileFacts], loader_names: set[str],
                  calls: Optional[dict[str, _Calls]] = None,
                  keeping: Optional[set[str]] = None) -> set[tuple[str, str, bool]]:
    """(name, the file defining it, only returned) for the callables whose callers the linker
    needs: the functions (and methods: "" for the file, they are called on objects from
    anywhere) whose parameter reaches a loader's dataset or is returned (then True), and the
    classes keeping one (`keeping`: `_keeping_classes` of these facts, if known)."""
    found: set[tuple[str, str, bool]] = set()
    for path, f in facts.items():
        functions = {func.qualname for func in f.functions}
        refs = [(r, False) for loader in f.loaders for r in loader.datasets]
        refs += [(r, True) for func in f.functions for r in func.returns]
        for ref, returned in refs:
            if ref.kind in ("param", "built"):
                qualname = ref.target.split("#")[0]
                home = path if qualname in functions else ""
                found.add((_short(qualname), home, returned))
    homes: dict[str, set[str]] = {}
    for path, f in facts.items():
        for cls in f.classes:
            homes.setdefault(cls.qualname, set()).add(path)
    calls = {} if calls is None else calls
    for path, f in facts.items():
        if path not in calls:
            calls[path] = _Calls(f)
    indexes = [calls[path] for path in facts]
    if keeping is None:
        keeping = _keeping_classes(facts.values(), loader_names, indexes)
    found |= {(_short(name), home, False) for name in keeping for home in homes[name]}
    return found


def _keeping_classes(all_facts: Iterable[FileFacts], loader_names: set[str],
                     calls: Optional[Iterable[_Calls]] = None,
                     callables: Optional[set[str]] = None) -> set[str]:
    """Qualified names of the classes whose `__init__` keeps a parameter as an attribute that
    reaches a loader's dataset: the dataset itself or an argument inside it, or an argument
    of a callable that may hand it to a loader (`_loader_callables`, this round's keeping
    classes included). Their constructions pass the dataset (`Trainer(ds)` for
    `DataLoader(self.train_set)` or `make_loader(wrap(self.train_set))`). `calls`: each
    file's `_Calls`, when kept from a round before; `callables`: `_loader_callables` of the
    same facts, when known (a set this function may add to)."""
    every = list(all_facts)
    indexes = list(calls) if calls is not None else [_Calls(f) for f in every]
    kept = {f"{c.qualname}.{attr}" for f in every for c in f.classes for _, attr in c.param_attrs}
    loaders = [loader for f in every for loader in _loaders(f, loader_names)]
    direct = _kept_refs((r for loader in loaders for r in loader.datasets), kept)
    # a call of a project DataLoader subclass (`FastLoader(self.train_set)`): each argument
    direct |= _kept_refs((r for loader in loaders for a in loader.args for r in a.refs), kept)
    sites = [(callee, found) for index in indexes for callee, attrs in index.attr_sites
             for found in [attrs & kept] if found]
    if callables is None:
        callables = _loader_callables(every, loader_names, indexes)
    while True:
        passed = {t for callee, found in sites if callee in callables for t in found}
        classes = {target.rpartition(".")[0] for target in direct | passed}
        new = {_short(c) for c in classes} - callables
        if not new:
            return classes
        callables |= new  # `Outer(self.train_set)` where Outer keeps it in turn


class _Calls:
    """What the callers' round reads of a file's call sites, found once (the rounds ask again
    of every file parsed): (the callee's short name, the attributes its arguments read,
    nested calls' arguments included) for each call reading one, and (callee, caller) for
    each argument that is a parameter of the function making the call."""

    def __init__(self, facts: FileFacts) -> None:
        self.attr_sites = tuple((_short(site.target), attrs) for site in facts.calls
                                for attrs in [_attr_refs(r for a in site.args for r in a.refs)]
                                if attrs)
        self.passing = tuple((_short(site.target), _short(r.target.split("#")[0]))
                             for site in facts.calls for a in site.args for r in a.refs
                             if r.kind == "param")


class _Demands:
    """What `_demand_dataset_calls` reads of a file, found once (the rounds ask again of every
    file parsed): the calls (their targets) nested in each call site's arguments, by the
    callee's short name; the attributes its loaders read (short names); the calls nested in
    what each class attribute is set to, by the attribute's name. Each file's demands go to
    a set, so their order within the file does not matter."""

    def __init__(self, facts: FileFacts) -> None:
        self.site_calls = tuple((_short(site.target), built) for site in facts.calls
                                for built in [_call_targets(r for a in site.args for r in a.refs)]
                                if built)
        loaders = [*facts.loaders, *facts.loader_candidates]
        self.loader_attrs = frozenset(_short(r.target) for r in _nested_refs(
            r for loader in loaders for refs in ([*loader.datasets],
                                                 [r for a in loader.args for r in a.refs])
            for r in refs) if r.kind == "attr")
        self.attr_calls = tuple((attr, built) for cls in facts.classes
                                for attr, refs in cls.attr_refs
                                for built in [_call_targets(refs)] if built)
        # the names `_needed_modules` demands for the file itself (`_own_demands`), once asked
        self.own: Optional[list[str]] = None
        self.factories = _Factories(facts)


def _call_targets(refs: Iterable[DatasetRef]) -> tuple[str, ...]:
    """The targets of the calls among `refs` and the arguments inside them."""
    return tuple(r.target for r in _nested_refs(refs) if r.kind == "call")


def _attr_refs(refs: Iterable[DatasetRef]) -> frozenset[str]:
    """The attributes (`<class>.<attr>`) among `refs` and the arguments inside them."""
    return frozenset(r.target for r in _nested_refs(refs) if r.kind == "attr")


def _registry_lookups(callee: str, facts: dict[str, FileFacts], by_module: dict[str, str]
                      ) -> Optional[set[str]]:
    """The names a lookup of the registry a decorator (`callee`) fills is spelled with, as
    the linker reads lookups: an object's or class's (`registry` for `registry.get_task(n)`,
    `DATASETS` for `DATASETS.build(cfg)`), or a module's lookup functions (`build_dataset`,
    `get_reader` of the module defining `register_reader`); None for a module not parsed.
    The module by any spelling of it (`speechbrain.utils.checkpoints` for the package
    below a folder of its name)."""
    owner = callee.rpartition(".")[0]
    path = by_module.get(owner)
    if path is None:
        return {_short(owner)} if owner else None
    home = facts.get(path)
    if home is None:
        return None
    registering = callee.rpartition(".")[2]
    return {fn.name for fn in home.functions if looks_up(fn.name, registering)}


def _bound_in_file(text: str, name: str) -> bool:
    """Whether every `class name` line of `text` binds the name in the file's own namespace
    or a function's: at its top level, or inside a `def` (a test's local class), not inside
    another class (`Outer.Inner`, which code elsewhere may name through `Outer`). The blocks
    around an indented one are read upwards from it, line by line."""
    needle = f"class {name}"
    at = text.find(needle)
    while at != -1:
        following = text[at + len(needle):at + len(needle) + 1]
        end = text.rfind("\n", 0, at) + 1  # (the start of the class line)
        indent = at - end
        at = text.find(needle, at + 1)
        if is_word_char(following) or text[end:end + indent].strip(" \t"):
            continue  # (`class Names`, `# a class Name`)
        while indent and end > 0:  # (the lines above end before it)
            start = text.rfind("\n", 0, end - 1) + 1
            line = text[start:end - 1]
            end = start
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#") or len(line) - len(stripped) >= indent:
                continue
            if stripped.startswith(("def ", "async def ")):
                break
            if stripped.startswith("class") and stripped[5:6] in (" ", "\t"):
                return False
            indent = len(line) - len(stripped)
    return True


def _lead_edges(f: FileFacts, path: str) -> list[_LeadEdge]:
    """(a name, where it is bound, the names whose objects it may give) for
    `Selection._leading_names`: a class keeps what a call of one gives (`self.db =
    Database(p)`, `self.env = open_env(p)`), or one annotated so (`reader: Reader`), or what
    a method of it returns (`corpus.get_dataset()`); a function or method returns one (a call
    of one, or of a function returning one); a module variable is bound to one. Bound in
    `path`: a module's class, function or variable, or a class or function defined inside a
    function; anywhere (""): a class's nested class (`Outer.Inner`); `_ON_OBJECTS`: a
    method."""
    edges: list[_LeadEdge] = []
    classes = {c.qualname for c in f.classes}
    for cls in f.classes:
        kept = {_short(r.target) for _, refs in cls.attr_refs for r in _nested_refs(refs)}
        kept.update(_short(c.callee) for c in cls.held_calls)
        kept.update(_short(t) for _, t in cls.param_types)
        for method in cls.methods:
            shorts = _returned(method.returns, method.returns_call)
            if shorts:
                edges.append((method.name, _ON_OBJECTS, shorts))
                kept |= shorts
        if kept:
            nested = cls.qualname.rpartition(".")[0] in classes
            edges.append((cls.name, "" if nested else path, frozenset(kept)))
    edges += [(fn.name, path, shorts) for fn in f.functions
              if (shorts := _returned(fn.returns, fn.returns_call))]
    edges += [(name, path, frozenset(_short(r.target) for r in _nested_refs(refs)))
              for name, refs in f.module_vars if refs]
    return edges


def _returned(returns: tuple[DatasetRef, ...], call: str) -> frozenset[str]:
    """The names whose objects a function's or method's returns give."""
    found = {_short(r.target) for r in _nested_refs(returns)}
    if call:
        found.add(_short(call))
    return frozenset(found)


def _nested_refs(refs: Iterable[DatasetRef]) -> list[DatasetRef]:
    """`refs` and the references inside their arguments, transitively, each object once: a
    pipeline of wrappers shares its stages (`apo = Normalize(ds)`, then `apo` given to ten
    more), and reading every path through them doubled with each stage."""
    found: list[DatasetRef] = []
    seen: set[int] = set()
    stack = list(refs)
    while stack:
        ref = stack.pop()
        if id(ref) in seen:
            continue
        seen.add(id(ref))
        found.append(ref)
        stack.extend(r for a in ref.arg_refs for r in a.refs)
    return found


def _kept_refs(refs: Iterable[DatasetRef], kept: set[str]) -> set[str]:
    """The kept attributes (`<class>.<attr>`) among `refs` and the arguments inside them
    (`wrap(self.train_set)`, `ConcatDataset([self.a, self.b])`)."""
    return set(_attr_refs(refs) & kept)


def _loader_callables(every: list[FileFacts], loader_names: set[str],
                      calls: list[_Calls]) -> set[str]:
    """Short names of the callables that may hand an argument to a loader: the functions and
    methods with a parameter that a loader's dataset is (or builds), and the functions
    passing a parameter of theirs on to one of those, transitively."""
    names = {_short(r.target.split("#")[0]) for f in every for loader in _loaders(f, loader_names)
             for r in loader.datasets if r.kind in ("param", "built")}
    passing = [pair for index in calls for pair in index.passing]
    changed = True
    while changed:
        before = len(names)
        names |= {caller for callee, caller in passing if callee in names}
        changed = len(names) != before
    return names


def _loaders(facts: FileFacts, loader_names: set[str]) -> list[LoaderCall]:
    """The loaders of `facts` and the calls of classes that the class graph says may derive
    from DataLoader (`loader_names`: `FastLoader(ds)`; the linker decides)."""
    return [*facts.loaders,
            *(c for c in facts.loader_candidates if _short(c.via) in loader_names)]


def _short(name: str) -> str:
    return name.rpartition(".")[2]


class _BaseWords:
    """base → whether it contains one of `words` (a substring test), each base tested once:
    the words include every dataset-like class name of the project (often thousands), and the
    same few bases recur in every file."""

    def __init__(self, words: set[str]) -> None:
        self.words = words
        self.known: dict[str, bool] = {}

    def __call__(self, base: str) -> bool:
        found = self.known.get(base)
        if found is None:
            found = self.known[base] = any(word in base for word in self.words)
        return found


def _dataset_class_names(bases_of: BasesOf, paths: set[str], words: tuple[str, ...]
                         ) -> set[str]:
    """Class names that may be datasets, from `class X(Base)` lines (`bases_of` a file's):
    a base naming a dataset word, or a base that is such a class (by name, transitively)."""
    graph = [(name, bases) for p in paths for name, bases in bases_of(p)]
    names = {name for name, bases in graph if any(w in b for b in bases for w in words)}
    return _subclass_names(graph, names)


# what follows `DataLoader` in an import under another name (`_loader_aliases`)
_AS_ALIAS = r"[ \t]+as[ \t]+(\w+)"  # (compiled by `_matches_after`)


def _loader_aliases(texts: dict[str, str], paths: set[str]) -> tuple[str, ...]:
    """The names DataLoader is imported as (`from torch.utils.data import DataLoader as
    TorchLoader`), in the files naming it."""
    return tuple(sorted({found.group(1) for p in paths if "DataLoader" in texts[p]
                         for found in _matches_after(texts[p], "DataLoader", _AS_ALIAS)}))


def _matches_after(text: str, word: str, rest: "re.Pattern[str] | str") -> Iterator[re.Match[str]]:
    r"""`re.finditer` of `\b<word><rest>` in `text` (`word` an identifier), each occurrence of
    `word` found by `str.find`: the regex would try every position of the text."""
    after = re.compile(rest) if isinstance(rest, str) else rest
    end = 0
    for start in word_starts(text, word):
        if start < end:  # inside the match before (`DataLoader as DataLoader as x`)
            continue
        found = after.match(text, start + len(word))
        if found is not None:
            end = found.end()
            yield found


def _handle_subclass_files(texts: dict[str, str], bases_of: BasesOf, handle_files: set[str],
                           shorts: frozenset[str]) -> set[str]:
    """Files defining a subclass of a handle constructor (`class ApiSession(requests.Session)`
    in a handle file), or a subclass of one by name, transitively, in any file: building one
    creates the handle."""
    seeds = {name for p in handle_files for name, bases in bases_of(p)
             if set(bases) & shorts}
    if not seeds:
        return set()
    by_path = {p: bases_of(p) for p, t in texts.items() if "class" in t}
    names = _subclass_names([c for classes in by_path.values() for c in classes], seeds)
    return {p for p, classes in by_path.items() if any(name in names for name, _ in classes)}


def _subclass_names(graph: list[tuple[str, list[str]]], names: set[str]) -> set[str]:
    """`names` and the classes of `graph` deriving from one of them (by name, transitively)."""
    names = set(names)
    changed = True
    while changed:
        changed = False
        for name, bases in graph:
            if name not in names and set(bases) & names:
                names.add(name)
                changed = True
    return names


def _module_file(name: str, by_module: dict[str, str]) -> Optional[str]:
    if not name:
        return None
    path = by_module.get(name)  # (most names asked are modules)
    if path is not None:
        return path
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = by_module.get(".".join(parts[:cut]))
        if path is not None:
            return path
    return None


def _a_lookup(qualified: str, local: str, registering: set[str]) -> bool:
    """A module's function (`qualified`, bound as `local`) looks up a registry one of the
    decorators `registering` fills (`facts.looks_up`): of its module, the same kind."""
    owner = qualified.rpartition(".")[0]
    return local.startswith(LOOKUP_VERBS) and any(
        callee.rpartition(".")[0] == owner
        and looks_up(qualified.rpartition(".")[2], callee.rpartition(".")[2])
        for callee in registering)


def _interesting_names(all_facts: Iterable[FileFacts],
                       anywhere: Optional[set[str]] = None) -> set[str]:
    """Names whose mention makes another file worth parsing: classes holding handles and their
    subclasses, module-level handles, and factories or variables that build such classes, and
    the registries such classes are registered in. `anywhere`, when given, receives the names
    not bound to one module's definitions (the registries and their lookup functions)."""
    anywhere = set() if anywhere is None else anywhere
    every = list(all_facts)
    module_handles = _cache_reaching_names(every)
    openers = _openers(every)
    holders = {c.name for f in every for c in f.classes if c.held or c.class_held
               or (module_handles and any(
                   not module_handles.isdisjoint(last_parts(m.globals_read))
                   for m in c.methods))
               or (openers and any(h.callee.rpartition(".")[2] in openers
                                   for h in c.held_calls))}
    changed = bool(holders)  # (subclasses of none: none)
    while changed:
        before = len(holders)
        holders |= {c.name for f in every for c in f.classes
                    if {b.rsplit(".", 1)[-1] for b in c.bases} & holders}
        changed = len(holders) != before
    names = set(holders)
    registering = {callee for f in every for c in f.classes if c.name in holders
                   for callee, _ in c.registered}
    owners = {callee.rpartition(".")[0] for callee in registering}
    # `DATASETS`, `registry`: a lookup by name may build a registered one
    names |= {owner.rpartition(".")[2] for owner in owners}
    anywhere |= names - holders
    for facts in every:
        # a lookup function of a registering module (`build_dataset` beside `register`),
        # defined or imported (`from .registry import build_dataset` in a package)
        if owners:
            lookups = {local for local, qualified in facts.imports
                       if _a_lookup(qualified, local, registering)}
            if facts.module in owners:
                lookups |= {f.name for f in facts.functions
                            if _a_lookup(f"{facts.module}.{f.name}", f.name, registering)}
            names |= lookups
            anywhere |= lookups
        names |= {h.name for h in facts.module_handles}
        if holders:  # (what builds one of none: nothing)
            names |= {f.name for f in facts.functions
                      if any(r.target.rsplit(".", 1)[-1] in holders for r in f.returns)}
            names |= {n for n, refs in facts.module_vars
                      if any(r.target.rsplit(".", 1)[-1] in holders for r in refs)}
    return {n for n in names if len(n) > 2}


def _builders(every: Iterable[FileFacts], interesting: set[str], datasets: set[str]
              ) -> set[str]:
    """The names whose call may build a dataset (`Selection._may_hand_on`): the class graph's
    dataset classes (`datasets`), and those of `interesting` (`_interesting_names`) that are
    not a class of the parsed files that is no dataset, nor a module handle (a factory, a
    module variable, a registry or its lookup)."""
    plain = {c.name for f in every for c in f.classes} - datasets
    plain |= {h.name for f in every for h in f.module_handles}
    return datasets | (interesting - plain)


def _handle_carriers(facts: FileFacts) -> set[str]:
    """The names of one file whose call gives a handle: its classes holding one, its
    functions returning one or such an object, its module handles (`_interesting_names`)."""
    return _interesting_names([facts]) | {fn.name for fn in facts.functions
                                          if fn.returns_handle is not None}


def _openers(every: list[FileFacts]) -> set[str]:
    """Short names of the functions returning a handle (`def open_env(p): return
    lmdb.open(p)`), or what one of those returns (`return open_env(p)`): a class keeping
    what one returns (`self.env = store.open_env(p)`, a held call) holds a handle."""
    found = {fn.name for f in every for fn in f.functions if fn.returns_handle is not None}
    relaying = [(fn.name, fn.returns_call.rpartition(".")[2]) for f in every
                for fn in f.functions if fn.returns_call] if found else []
    changed = bool(relaying)
    while changed:
        before = len(found)
        found |= {name for name, callee in relaying if callee in found}
        changed = len(found) != before
    return found


def _cache_reaching_names(every: list[FileFacts]) -> set[str]:
    """Module handles, the functions filling a process-global handle cache, and the functions
    calling those (`read_member` → `get_zip` → `_CACHE`): a class reading one may hold it."""
    names = {h.name for f in every for h in f.module_handles}
    names |= {h.filled_by.rpartition(".")[2] for f in every for h in f.module_handles
              if h.filled_by}
    # a helper class keeping one in a class-level cache (`ZipReader.zip_bank`) is read by name,
    # or through a variable or function naming it (`_READERS = {"zip": ZipReader}`)
    caching = {c.name for f in every for c in f.classes if c.class_caches}
    if caching:
        names |= caching
        names |= {n for f in every for n, refs in f.module_vars
                  if any(r.target.rsplit(".", 1)[-1] in caching for r in refs)}
        names |= {fn.name for f in every for fn in f.functions
                  if any(r.kind == "name" and r.target.rsplit(".", 1)[-1] in caching
                         for r in fn.returns)}
    functions = [fn for f in every for fn in f.functions if fn.globals_read]
    changed = bool(functions)
    while changed:
        before = len(names)
        names |= {fn.name for fn in functions
                  if not names.isdisjoint(last_parts(fn.globals_read))}
        changed = len(names) != before
    return names


def _interesting_modules(all_facts: Iterable[FileFacts],
                         alone: Optional[dict[int, bool]] = None,
                         interesting: Optional[set[str]] = None,
                         aliases: Optional[dict[str, str]] = None,
                         texts: Optional[dict[str, str]] = None) -> tuple[set[str], set[str]]:
    """Modules defining a handle holder, a module handle or a factory, and modules that
    re-export one of those names (`from .remote import RemoteImages as Images`); and the
    names an importer can use them by: those names, their aliases (`Images`) and what those
    modules define (an importer naming none of them cannot use one: on pytorch_geometric,
    `torch_geometric.data` re-exports `SQLiteDatabase`, and most files import it for `Data`).
    `interesting`: `_interesting_names` of the same facts, when the caller has them. A module
    importing such a module itself (`import readers as rd`, `from src import readers`: `rd.
    ShardReader(path)`) is one too, when its text (in `texts`) spells one of the names as an
    attribute of it. `aliases`: other spellings of modules (`src.readers`)."""
    every = list(all_facts)
    names = set(_interesting_names(every) if interesting is None else interesting)
    alone = {} if alone is None else alone  # a file's own verdict: asked again every round
    for facts in every:
        if id(facts) not in alone:
            alone[id(facts)] = bool(_interesting_names([facts]))
    modules = {f.module for f in every if f.module and alone[id(f)]}
    # (module, local name, the module imported from, the name imported) of each import
    spelled = aliases or {}
    imports = [(f.module, local, spelled.get(source, source), imported,
                spelled.get(qualified, qualified), f.path)
               for f in every if f.module for local, qualified in f.imports
               for source, _, imported in [qualified.rpartition(".")]] if modules else []
    changed = bool(imports)  # (nothing re-exports from no module)
    while changed:
        changed = False
        for module, local, source, imported, whole, path in imports:
            if imported in names and source in modules and \
                    (module not in modules or local not in names):
                modules.add(module)
                names.add(local)
                changed = True
            elif whole in modules and module not in modules and texts is not None \
                    and not names.isdisjoint(_attributes(texts[path], local)):  # `rd.X`
                modules.add(module)
                changed = True
    # what such a module defines may use the names (`RetrievalDataset(entries, reader)`)
    for facts in every:
        if facts.module in modules:
            names |= {c.name for c in facts.classes} | {f.name for f in facts.functions}
            names |= {name for name, _ in facts.module_vars}
    modules |= {alias for alias, module in spelled.items() if module in modules}
    return modules, names


# names a file imports from a module (`Selection._imported_names`; None: any of them)
ImportedNames = Callable[[str, str], Optional[tuple[str, ...]]]


def _dataset_files_importing_handles(dataset_only: set[str], handle_only: set[str],
                                     by_module: dict[str, str], imported_by: ImportedBy,
                                     dataset_files: Iterable[str] = (),
                                     texts: Optional[dict[str, str]] = None,
                                     imported_names: Optional[ImportedNames] = None,
                                     pending: Optional[Pending] = None) -> set[str]:
    """A dataset file importing from a handle file: the handle may be a module-level one.
    With `imported_names` and `pending`, a file importing names from a handle module (not
    the module itself) waits in `pending` until the handle file is parsed (`carry.offered`): only
    the handle file is returned.
    Also through one plain module between them (neither a dataset nor a handle file, nor a
    package) keeping an instance of a class the handle file defines (`self.dbContext =
    dbContext.DbContext()`): a holder the dataset keeps (`RecordService`) keeping another
    (`DbContext`) that holds the handle (all three files then). A handle file a package of
    its folder re-exports (`from .file_readers import build_file_reader` in datasets/,
    file_readers/__init__.py importing `.zip_reader`) may hold a helper class's cache: it and
    the package, whose names then decide (not the importer itself: it may name only what
    holds nothing)."""
    handle_modules = {m: p for m, p in by_module.items() if p in handle_only}
    if not handle_modules:
        return set()
    loud = set(dataset_files) | handle_only
    plain_modules = {m: p for m, p in by_module.items() if p not in loud}
    found: set[str] = set()
    kept_by: dict[str, Optional[re.Pattern[str]]] = {}  # `_keeps_instance_of`, by handle file
    for path in dataset_only:
        folder = os.path.dirname(path)
        for imported in imported_by(path):
            target = _module_file(imported, handle_modules)
            if target is not None:
                found.add(target)
                names = None if imported_names is None or pending is None \
                    or by_module.get(imported) != target else imported_names(path, imported)
                if names is None or pending is None:
                    found.add(path)
                else:
                    pending.setdefault(path, []).append((target, names))
                continue
            between = _module_file(imported, plain_modules)
            if texts is not None and between is not None and between != path \
                    and os.path.basename(between) != "__init__.py":  # a package: below
                taken = imported_names(path, imported) if imported_names else None
                if taken is None:  # `import common as net`: what `net.X` spells, if so
                    taken = _whole_module_attributes(texts[path], imported)
                targets = {t for inner in imported_by(between)
                           if (t := _module_file(inner, handle_modules)) is not None
                           and (_keeps_instance_of(texts[between], texts[t], kept_by)
                                or _relays(taken, imported_names, between, inner))}
                if targets:
                    found |= {path, between, *targets}
                    continue
            package = by_module.get(imported, "")
            if not folder or os.path.basename(package) != "__init__.py" \
                    or os.path.dirname(os.path.dirname(package)) != folder:
                continue
            for inner in imported_by(package):
                target = _module_file(inner, handle_modules)
                if target is not None:
                    found |= {package, target}
    return found


def _relays(taken: Optional[tuple[str, ...]], imported_names: Optional[ImportedNames],
            between: str, inner: str) -> bool:
    """Whether a plain module passes on a name it imports from a handle module to a file
    importing it from there by name (`taken`): `from clients import SESSION` in tools.py, `from
    tools import SESSION` in the dataset's file. Only names on both lines count: a module using
    the handle module (`import clients`) or a file taking anything of it is left to the
    other rounds (on fairseq they would parse four times the files, for no finding)."""
    if imported_names is None or taken is None:
        return False
    relayed = imported_names(between, inner)  # (None, any: `import clients` passes none on)
    return relayed is not None and not set(taken).isdisjoint(relayed)


def _whole_module_attributes(text: str, module: str) -> Optional[tuple[str, ...]]:
    """The names `text` spells on `module` imported whole, on a line of its own (`import
    common as net`: each `net.X`; `import common`: each `common.X`); None when it imports it
    no such way (then it may take any of them)."""
    if module not in text:
        return None
    lines = re.finditer(rf"(?m)^[ \t]*import[ \t]+{re.escape(module)}(?:[ \t]+as[ \t]+(\w+))?"
                        r"[ \t]*(?:#.*)?$", text)
    found: Optional[list[str]] = None
    for line in lines:
        found = (found or []) + _attributes(text, line.group(1) or module)
    return None if found is None else tuple(found)


_CLASS_LINE = r"(?m)^class\s+(\w+)"  # (compiled by `re` when first used)


def _keeps_instance_of(text: str, defining: str,
                       patterns: Optional[dict[str, Optional[re.Pattern[str]]]] = None) -> bool:
    """Whether `text` keeps on self an instance of a class `defining` defines
    (`self.db = dbcontext.DbContext()`, `self.db = DbContext(path)`). `patterns`: the search
    for each `defining` text made so far (one handle file is imported by many)."""
    if "self." not in text:
        return False
    patterns = {} if patterns is None else patterns
    if defining not in patterns:
        names = re.findall(_CLASS_LINE, defining)
        alternatives = "|".join(map(re.escape, names))
        patterns[defining] = re.compile(r"self\.\w+\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?(?:"
                                        + alternatives + r")\s*\(") if names else None
    pattern = patterns[defining]
    return pattern is not None and pattern.search(text) is not None


def _import_chains(starts: set[str], targets: set[str], imported_by: ImportedBy,
                   by_module: dict[str, str]) -> set[str]:
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


def _importers(seeds: set[str], by_path: dict[str, SourceFile], texts: dict[str, str],
               imported_by: ImportedBy, by_module: dict[str, str]) -> set[str]:
    """Files that import a file of `seeds`, directly or through others: an import of a module
    names its last part, so only files containing one are tested."""
    # Each round adds the files importing a file of the closure whose text names a module of
    # the last round's. The files importing each file are found once, from every file's
    # import lines (a pass over the imports, not one over every text per round: on a tree of
    # 2,600 files with hundreds of files in a round, that was a million substring searches).
    importing: dict[str, list[str]] = {}
    for path in by_path:
        for module in imported_by(path):
            imported = _module_file(module, by_module)
            if imported is not None:
                importing.setdefault(imported, []).append(path)
    closure = set(seeds)
    frontier = set(seeds)
    # files importing one in the closure, not in it: their text did not name the round's
    # modules yet (a later round's may)
    waiting: set[str] = set()
    while frontier:
        names = {by_path[p].module.rpartition(".")[2] for p in frontier if by_path[p].module}
        for added in frontier:
            waiting.update(importing.get(added, ()))
        waiting -= closure
        frontier = {path for path in waiting if any(n in texts[path] for n in names)}
        closure |= frontier
    return closure - seeds
