"""What calls return and read: the handle a call returns (followed a few calls deep), the
bare names project functions read, a loader's `worker_init_fn` functions."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from ..facts import (
    ClassFacts, DatasetRef, FileFacts, FunctionFacts, HandleArg, HandleSite, LoaderCall,
    last_parts,
)
from .starts import Starts

# `calls_through`: (each bare name read, with its file), the project functions called
_Through = tuple[list[tuple[str, FileFacts]], set[str]]
# Calls followed for what a function returns (`open_env` → `_open` → `lmdb.open`), at most.
_MAX_RETURN_DEPTH = 4


class Returns(Starts):
    def __post_init__(self) -> None:
        super().__post_init__()
        # `calls_through` by its arguments: every class inheriting a method asks for the same
        # names read in the same file (a resolved name is cached: the answer cannot change)
        self._through_known: dict[tuple[tuple[str, ...], str, frozenset[str]], _Through] = {}
        self._handle_readers: Optional[frozenset[str]] = None  # `module_handle_readers`
        self._reader_aliases: dict[str, frozenset[str]] = {}  # `reads_handle_reader`
        # the functions filling a process-global handle cache: a module's
        # (`_CACHE[p] = open(p)`) or a class's (`ZipReader.get_zipfile` filling `zip_bank`)
        self.cache_fillers = frozenset(
            {h.filled_by for f in self.files for h in f.module_handles if h.filled_by}
            | {f"{c.qualname}.{cache.method}" for c in self.classes.values()
               for cache in c.class_caches})
        self._filler_readers: Optional[frozenset[str]] = None  # `reads_cache_filler`
        self._filler_aliases: dict[str, frozenset[str]] = {}

    def module_handle_readers(self, known: Callable[[str], bool]) -> frozenset[str]:
        """The names (last parts) whose read may reach a module-level handle that is not a
        cache's (`known`: a handle's constructor the registry knows) through `calls_through`
        (`_readers_of`; asked once per project)."""
        if self._handle_readers is None:
            self._handle_readers = self._readers_of(
                {h.name for f in self.files for h in f.module_handles
                 if not h.filled_by and known(h.site.handle)})
        return self._handle_readers

    def reads_handle_reader(self, reads: tuple[str, ...], facts: FileFacts,
                            known: Callable[[str], bool]) -> bool:
        """Whether a name read in `facts` is one of `module_handle_readers`."""
        return self._reads_named(reads, facts, self.module_handle_readers(known),
                                 self._reader_aliases)

    def reads_cache_filler(self, reads: tuple[str, ...], facts: FileFacts) -> bool:
        """Whether a name read in `facts` may reach, through `calls_through`, a function
        filling a process-global handle cache (`cache_fillers`: a module function by its
        name, a class with a class-level cache by the class's: reading it counts as calling
        its methods). Asked of every method construction runs, of every class."""
        if self._filler_readers is None:
            self._filler_readers = self._readers_of(
                {q.rpartition(".")[2] for q in self.cache_fillers}
                | {c.name for c in self.classes.values() if c.class_caches})
        return self._reads_named(reads, facts, self._filler_readers, self._filler_aliases)

    def _readers_of(self, names: set[str]) -> frozenset[str]:
        """`names` (last parts), the project functions reading one of them, the classes with
        a class-level cache whose methods read one; transitively, by name (through the
        reading file's imports: `from m import load as get`). More than `calls_through`
        finds, never less: code reading none of them reaches none through it."""
        grown = bool(names)
        while grown:
            grown = False
            for func in self.functions.values():
                home = self.by_module.get(func.qualname.rpartition(".")[0])
                if func.name not in names and home is not None \
                        and self._reads_one_of(func.globals_read, home, names):
                    names.add(func.name)
                    grown = True
            for cls in self.classes.values():
                if cls.class_caches and cls.name not in names and any(
                        self._reads_one_of(m.globals_read, self.class_file[cls.qualname],
                                           names) for m in cls.methods):
                    names.add(cls.name)
                    grown = True
        return frozenset(names)

    @staticmethod
    def _reads_named(reads: tuple[str, ...], facts: FileFacts, names: frozenset[str],
                     aliases_of: dict[str, frozenset[str]]) -> bool:
        """Whether one of `reads` is one of `names`, by its last part or as the file imports
        it (the file's aliases of those names found once per file, kept in `aliases_of`)."""
        if not names.isdisjoint(last_parts(reads)):
            return True
        aliases = aliases_of.get(facts.path)
        if aliases is None:
            aliases = aliases_of[facts.path] = frozenset(
                local for local, target in facts.import_map().items()
                if target.rpartition(".")[2] in names)
        return not aliases.isdisjoint(reads)

    @staticmethod
    def _reads_one_of(reads: Iterable[str], facts: FileFacts, names: set[str]) -> bool:
        """Whether one of the names read in `facts` is one of `names` (by its last part, or
        the last part of what the file imports it as)."""
        reads = tuple(reads)
        if not names.isdisjoint(last_parts(reads)):
            return True
        imports = facts.import_map()
        return any(imports.get(read, "").rpartition(".")[2] in names for read in reads)

    def returned_handle(self, callee: str, cls: Optional[ClassFacts], facts: FileFacts,
                        depth: int = 0, given: tuple[HandleArg, ...] = ()
                        ) -> Optional[tuple[HandleSite, bool, FileFacts]]:
        """The handle a call returns (`open_env(p)`, `self._connect(p)`), followed through
        further calls a few levels deep: its creating call, whether a cached function returns
        it (one object per process, shared: WS102), and the file creating it. None when it
        returns no handle we know. `given`: the handles the call (in `facts`) is given, one
        of which a function or method returning its parameter gives back
        (`retryable(requests.Session())`, `def retryable(session): ...; return session`)."""
        if depth > _MAX_RETURN_DEPTH:
            return None
        if callee.startswith("self."):
            name = callee[len("self."):]
            for member in self.mro(cls) if cls is not None else ():
                method = member.method(name)
                if method is None:
                    continue
                home = self.class_file[member.qualname]
                if method.returns_handle is not None:
                    return method.returns_handle, False, home
                if method.returns_call:
                    return self.returned_handle(method.returns_call, cls, home, depth + 1)
                passed = passed_through(f"{member.qualname}.{name}", method.returns, given)
                return (passed, False, facts) if passed is not None else None
            return None
        resolved = self.resolve(callee, facts)
        built = self.classes.get(resolved)
        if built is not None:  # `ApiSession(url)`: a subclass of a handle constructor
            handle = self.handle_base(built)
            home = self.class_file[built.qualname]
            return (HandleSite(handle, built.span), False, home) if handle else None
        func = self.functions.get(resolved)
        if func is None:
            return None
        home = self.by_module.get(func.qualname.rpartition(".")[0], facts)
        if func.returns_handle is not None:
            return func.returns_handle, func.cached, home
        if func.returns_call and not func.returns_call.startswith("self."):
            found = self.returned_handle(func.returns_call, None, home, depth + 1)
            return (found[0], found[1] or func.cached, found[2]) if found else None
        passed = passed_through(func.qualname, func.returns, given)
        return (passed, False, facts) if passed is not None else None

    def calls_through(self, names: Iterable[str], facts: FileFacts,
                      skip: frozenset[str] = frozenset()) -> _Through:
        """Bare names read (with the file they are read in), and those read inside the
        project functions they call, a few calls deep; with those functions' names. A project
        class with a class-level cache (`ZipReader.read(p)`, `ZipReader.zip_bank`), not one of
        `skip`, read counts as calling each of its methods ("<class>.<method>"). The answer
        is shared between calls: not to be changed."""
        names = tuple(names)
        key = (names, facts.path, skip)
        known = self._through_known.get(key)
        if known is None:
            known = self._through_known[key] = self._calls_through(names, facts, skip)
        return known

    def _calls_through(self, names: tuple[str, ...], facts: FileFacts, skip: frozenset[str]
                       ) -> _Through:
        found = [(name, facts) for name in names]
        functions: set[str] = set()
        classes: set[str] = set()
        frontier = list(found)
        for _ in range(_MAX_RETURN_DEPTH):
            following: list[tuple[str, FileFacts]] = []
            for name, home in frontier:
                # a bare name read: through the reading file's imports (`get_zip` imported)
                resolved = self.resolve(home.import_map().get(name, name), home)
                func = self.functions.get(resolved)
                if func is not None and func.qualname not in functions:
                    functions.add(func.qualname)
                    inside = self.by_module.get(func.qualname.rpartition(".")[0], home)
                    following.extend((read, inside) for read in func.globals_read)
                cls = self.classes.get(resolved) if func is None else None
                if cls is not None and cls.class_caches and cls.qualname not in classes | skip:
                    classes.add(cls.qualname)
                    inside = self.class_file[cls.qualname]
                    functions.update(f"{cls.qualname}.{m.name}" for m in cls.methods)
                    following.extend((read, inside) for m in cls.methods
                                     for read in m.globals_read)
            found.extend(following)
            frontier = following
        return found, functions

    def worker_init_functions(self, loader: LoaderCall, facts: FileFacts) -> list[FunctionFacts]:
        found = (self.functions.get(self.resolve(name, facts)) for name in loader.worker_inits)
        return [f for f in found if f is not None]


def passed_through(qualname: str, returns: tuple[DatasetRef, ...],
                   given: tuple[HandleArg, ...]) -> Optional[HandleSite]:
    """The handle among `given` (a call's handle arguments) that the function or method
    `qualname` returns as its parameter (`return session`; `returns`: what it returns), or
    None. (A method's parameters are counted after `self`, as its call passes them.)"""
    for ref in returns:
        if ref.kind != "param" or not ref.target.startswith(qualname + "#"):
            continue
        index, _, name = ref.target[len(qualname) + 1:].partition("#")
        for arg in given:
            if (arg.keyword == name if arg.keyword else str(arg.position) == index):
                return arg.site
    return None
