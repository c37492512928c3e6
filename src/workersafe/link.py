"""Linking: the facts of many files seen as one program.

Resolves names across modules (imports, re-exports, star imports), the class hierarchy, and
which DataLoader calls use which dataset class (through factories, module variables and
attributes). With one file it degrades to same-file knowledge."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from .discovery import module_aliases
from .facts import (
    OWN_CLASS, ArgRef, CallSite, ClassFacts, DatasetRef, FileFacts, FunctionFacts, HandleSite,
    LoaderCall, MethodFacts, ModuleHandle,
)
from .frameworks import star_reexport
from .loadermap import Passed, given, is_pure_forward, loader_argument, pass_through
from .registry import DEFAULT_REGISTRY, Registry
from .torchnames import DATASET_BASES, LOADERS

# The start method a target platform gives a loader that names none (see config.Config).
DEFAULT_START_METHODS = ("fork",)
SPAWN_LIKE = ("spawn", "forkserver")

# Re-exports followed for one name, at most: real chains are a handful long.
_MAX_RESOLVE_DEPTH = 64
# Functions followed from an entry for the start method it sets, at most.
_MAX_REACHED = 256
# Calls followed for what a function returns (`open_env` → `_open` → `lmdb.open`), at most.
_MAX_RETURN_DEPTH = 4


class _AsGiven:
    """The arguments of a DataLoader subclass's call reach torch's DataLoader unchanged."""


_AS_GIVEN = _AsGiven()

# (file, loader, the reference that constructs the class) for each loader reaching a class
LoaderUse = tuple[FileFacts, LoaderCall, DatasetRef]

# The value flow (`Project.classes_of_ref`): a class with the reference constructing it; a
# node of the graph (kind, name, detail); a call site (file index, call index, file, call).
Item = tuple[ClassFacts, DatasetRef]
Node = tuple[str, str, str]
_Where = tuple[int, int, FileFacts, CallSite]


@dataclass(frozen=True)
class _In:
    """One input of a node: a constant (a class constructed there), or another node's value,
    each class of which is built with the arguments of `built` when given (`ds_type(p)`)."""

    node: Optional[Node] = None
    item: Optional[Item] = None
    built: Optional[DatasetRef] = None


@dataclass(frozen=True)
class Reach:
    """How a class that no loader names directly is reached: kept by `outer` in `attr`
    (a holder object or sub-dataset built in its `__init__`), or `passed` to its
    constructor (`param`)."""

    outer: str  # the class name of the outer dataset (or holder)
    attr: str
    passed: bool = False
    param: str = ""

    def describe(self) -> str:
        if self.passed:
            return f"(passed to {self.outer}({self.param}) as self.{self.attr})"
        return f"(held by {self.outer}.{self.attr})"


@dataclass
class Project:
    files: list[FileFacts]
    dataset_bases: frozenset[str] = DATASET_BASES
    # start methods of a loader that names none and whose entry scripts set none: one per
    # platform the code targets (config `platform`, `target-version`)
    default_start: tuple[str, ...] = DEFAULT_START_METHODS
    # the handle constructors: a project class deriving from one builds that handle
    registry: Registry = DEFAULT_REGISTRY
    by_module: dict[str, FileFacts] = field(init=False)
    classes: dict[str, ClassFacts] = field(init=False)
    functions: dict[str, FunctionFacts] = field(init=False)
    class_file: dict[str, FileFacts] = field(init=False)

    def __post_init__(self) -> None:
        self.by_module = {f.module: f for f in self.files}
        self.classes, self.functions, self.class_file = {}, {}, {}
        for facts in self.files:
            for cls in facts.classes:
                self.classes[cls.qualname] = cls
                self.class_file[cls.qualname] = facts
            for func in facts.functions:
                self.functions[func.qualname] = func
        self._resolve_cache: dict[str, str] = {}
        self._resolved_in: dict[tuple[str, str], str] = {}  # (name, file) → resolved
        self._canonicals: dict[str, str] = {}
        self._resolve_depth = 0
        # `mylib.ds` for helpers/mylib/ds.py, `src.data` for src/data.py: → the module name
        self.aliases = module_aliases((f.path, f.module) for f in self.files)
        self._entries: Optional[dict[str, list[Optional[FileFacts]]]] = None
        self._by_path = {f.path: f for f in self.files}
        # the value flow (see `classes_of_ref`): each node's solved value, its users, the
        # call sites each receiver node decides, parameter nodes waiting for call sites
        self._values: dict[Node, dict[tuple[str, int], Item]] = {}
        self._users: dict[Node, list[tuple[Node, Optional[DatasetRef]]]] = {}
        self._receivers: dict[Node, list[_Where]] = {}
        self._watchers: dict[str, list[Node]] = {}
        self._unwired: list[Node] = []
        self._pending: list[tuple[Node, Item]] = []
        self._sites: Optional[dict[str, list[_Where]]] = None
        self._sites_sorted: dict[str, list[tuple[FileFacts, CallSite]]] = {}
        self._order: dict[Node, list[Item]] = {}
        self._work = 0
        self._homes: dict[int, FileFacts] = {}  # id of a constructing ref → where it is read
        self._homed: list[DatasetRef] = []
        self._ref_numbers: dict[int, int] = {}
        self._equal_refs: dict[DatasetRef, int] = {}
        self._refs_numbered: list[DatasetRef] = []
        self._reads: dict[str, set[str]] = {}
        self._by_class: Optional[dict[str, list[LoaderUse]]] = None
        self._scoped_starts: Optional[dict[str, str]] = None
        self._reached_starts: dict[tuple[tuple[str, ...], str], tuple[str, str]] = {}
        self._mros: dict[str, tuple[ClassFacts, list[ClassFacts]]] = {}
        self._file_loaders: dict[str, list[LoaderCall]] = {}
        # class qualname → how it is reached through another class (see `loaders_by_class`)
        self.reached: dict[str, list[Reach]] = {}
        self.has_caches = any(h.filled_by for f in self.files for h in f.module_handles) \
            or any(c.class_caches for c in self.classes.values())

    # --- names ----------------------------------------------------------------------------

    def resolve(self, name: str, context: Optional[FileFacts] = None) -> str:
        """Follow re-exports until a defined class/function/variable, or the name as given."""
        if context is None:
            return self._resolve_absolute(name)
        key = (name, context.path)
        found = self._resolved_in.get(key)
        if found is None:
            found = self._resolved_in[key] = self._resolve_in(name, context)
        return found

    def _resolve_in(self, name: str, context: Optional[FileFacts]) -> str:
        if context is not None and "." not in name:
            for star in context.star_imports:
                found = self._through_star(star, name)
                if found:
                    return found
            if context.module:
                local = f"{context.module}.{name}"
                if self._defined(local):
                    return local
        resolved = self._resolve_absolute(name)
        if context is not None and not self._defined(resolved) and "." in context.module:
            # `python train.py` puts the script's directory on sys.path: `from data import X`
            # in pkg/train.py may mean pkg/data.py even where pkg is not a package.
            sibling = self._resolve_absolute(f"{context.module.rpartition('.')[0]}.{name}")
            if self._defined(sibling):
                return sibling
        return resolved

    def _through_star(self, star: str, name: str) -> str:
        """What `from <star> import *` binds to `name`: a project definition, a name the star
        module itself imports (`from torch.utils.data import Dataset` in a project module), or
        a torch class a framework re-exports; "" when unknown."""
        candidate = f"{star}.{name}"
        found = self.resolve(candidate)
        if self._defined(found):
            return found
        if found != self._canonical(candidate) and self._canonical(star) in self.by_module:
            return found  # re-exported through an import of the star module
        return star_reexport(star, name)

    def _canonical(self, name: str) -> str:
        """`name` with an alias spelling of its module replaced by the module's name."""
        if not self.aliases:
            return name
        found = self._canonicals.get(name)
        if found is None:
            found = self._canonicals[name] = self._canonical_uncached(name)
        return found

    def _canonical_uncached(self, name: str) -> str:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.aliases.get(".".join(parts[:cut]))
            if module is not None:
                return ".".join([module, *parts[cut:]])
        return name

    def _resolve_absolute(self, name: str) -> str:
        name = self._canonical(name)
        if name in self._resolve_cache:
            return self._resolve_cache[name]
        if self._resolve_depth >= _MAX_RESOLVE_DEPTH:
            # Not a cycle but an ever longer name (`from p.missing import missing` in
            # p/__init__.py turns `p.missing.X` into `p.missing.missing.X`, ...): give up.
            return name
        self._resolve_cache[name] = name  # cycle guard
        self._resolve_depth += 1
        try:
            resolved = self._resolve_uncached(name)
        finally:
            self._resolve_depth -= 1
        self._resolve_cache[name] = resolved
        return resolved

    def _defined(self, name: str) -> bool:
        return name in self.classes or name in self.functions or self._module_attr(name) is not None

    def _module_attr(self, name: str) -> Optional[tuple[FileFacts, str]]:
        module, _, attr = name.rpartition(".")
        facts = self.by_module.get(module)
        if facts is None:
            return None
        if any(n == attr for n, _ in facts.module_vars) or \
                any(h.name == attr for h in facts.module_handles):
            return facts, attr
        return None

    def _resolve_uncached(self, name: str) -> str:
        if self._defined(name):
            return name
        module, attr = self._split_module(name)
        if module is None:
            return name
        facts = self.by_module[module]
        head, _, rest = attr.partition(".")
        imported = facts.import_map().get(head)
        if imported is not None:
            return self.resolve(f"{imported}.{rest}" if rest else imported)
        for star in facts.star_imports:
            if star not in self.by_module:
                # Its names are unknown. Following it anyway turns `p.X` into `p.missing.X`
                # (`p` is then the longest known module), `p.missing.missing.X`, ... and with
                # two such star imports the names branch: no end in sight.
                continue
            found = self._through_star(star, attr)
            if found:
                return found
        return name

    def _split_module(self, name: str) -> tuple[Optional[str], str]:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.by_module:
                return module, ".".join(parts[cut:])
        return None, name

    # --- classes --------------------------------------------------------------------------

    def base_classes(self, cls: ClassFacts) -> list[ClassFacts]:
        facts = self.class_file[cls.qualname]
        out = []
        for base in cls.bases:
            found = self.classes.get(self.resolve(base, facts))
            if found is not None and found.qualname != cls.qualname:
                out.append(found)
        return out

    def mro(self, cls: ClassFacts) -> list[ClassFacts]:
        """The class and its project bases, nearest first (depth-first, no repeats)."""
        cached = self._mros.get(cls.qualname)
        if cached is not None and cached[0] is cls:
            return list(cached[1])
        seen: dict[str, ClassFacts] = {}
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current.qualname in seen:
                continue
            seen[current.qualname] = current
            stack.extend(self.base_classes(current))
        found = list(seen.values())
        self._mros[cls.qualname] = (cls, found)
        return list(found)

    def handle_base(self, cls: ClassFacts) -> str:
        """The handle constructor (a registry key) a project class derives from, through
        its project bases (`class ApiSession(requests.Session)`, `class Mine(ApiSession)`):
        its instances are handles of that kind. "" when none."""
        for member in self.mro(cls):
            facts = self.class_file[member.qualname]
            for base in member.bases:
                resolved = self.resolve(base, facts)
                if resolved not in self.classes and self.registry.lookup(resolved) is not None:
                    return resolved
        return ""

    def is_torch_dataset(self, cls: ClassFacts) -> bool:
        for member in self.mro(cls):
            facts = self.class_file[member.qualname]
            if any(self._is_dataset_base(b, facts) for b in member.bases):
                return True
        return False

    def _is_dataset_base(self, base: str, facts: FileFacts) -> bool:
        resolved = self.resolve(base, facts)
        if resolved in self.dataset_bases or base in self.dataset_bases:
            return True
        if "." in base or resolved in self.classes:
            return False
        # A bare name from a star import of a module outside the checked files: a configured
        # (or torch) base of that module or of a module below that package.
        return any(short == base and (module == star or module.startswith(star + "."))
                   for star in facts.star_imports
                   for module, _, short in (b.rpartition(".") for b in self.dataset_bases))

    # --- loaders → classes ---------------------------------------------------------------------

    def loaders(self) -> Iterator[tuple[FileFacts, LoaderCall]]:
        for facts in self.files:
            for loader in self.file_loaders(facts):
                yield facts, loader

    def is_star_loader(self, name: str, facts: FileFacts) -> bool:
        """Whether the bare `name` a star import of `facts` brings in is torch's DataLoader
        (`from utils import *`, utils/__init__.py `from .data import *`, `from torch.utils.data
        import DataLoader` there)."""
        return any(self._through_star(star, name) in LOADERS for star in facts.star_imports)

    def file_loaders(self, facts: FileFacts) -> list[LoaderCall]:
        """The file's DataLoader calls: torch's and framework ones, and calls of the project's
        DataLoader subclasses (`FastDataLoader(ds, num_workers=4)`) read through them."""
        found = self._file_loaders.get(facts.path)
        if found is None:
            # a bare name from a star import of a project module counts once it resolves
            found = [loader for loader in facts.loaders
                     if not loader.star_name or self.is_star_loader(loader.star_name, facts)]
            for candidate in facts.loader_candidates:
                loader = self._subclass_loader(candidate, facts)
                if loader is not None:
                    found.append(loader)
            self._file_loaders[facts.path] = found
        return found

    def is_loader_class(self, cls: ClassFacts) -> bool:
        """A project class whose bases lead to torch's DataLoader."""
        return any(self.resolve(b, self.class_file[m.qualname]) in LOADERS
                   for m in self.mro(cls) for b in m.bases)

    def _subclass_loader(self, call: LoaderCall, facts: FileFacts) -> Optional[LoaderCall]:
        """The DataLoader a call of a DataLoader subclass makes; None when the class is none,
        or when what its `__init__` passes on cannot be read (kept latent, not guessed)."""
        cls = self.classes.get(self.resolve(call.via, facts))
        if cls is None or not self.is_loader_class(cls):
            return None
        mapped = self._through_inits(cls, given(call.args))
        if mapped is None:
            return None
        as_read = dataclasses.replace(call, via=cls.qualname, args=())
        if isinstance(mapped, _AsGiven):
            return as_read
        dataset = loader_argument(mapped, "dataset")
        if dataset is None or dataset.given is None:
            return None
        workers = loader_argument(mapped, "num_workers")
        if workers is None:
            count: tuple[Optional[int], str] = (0, "0")
        elif workers.given is not None and workers.given.keyword == "num_workers":
            count = (call.num_workers, call.num_workers_text)
        elif workers.arg.int_value is not None:
            count = (workers.arg.int_value, str(workers.arg.int_value))
        elif workers.given is not None:
            count = (None, "?")
        else:
            return None
        kept = {name for name in ("num_workers", "persistent_workers", "multiprocessing_context",
                                  "worker_init_fn")
                if (p := loader_argument(mapped, name)) is not None and p.given is not None
                and p.given.keyword == name}
        probe = self._through_inits(cls, given((*call.args, ArgRef(-1, "worker_init_fn"))))
        reached = loader_argument(probe, "worker_init_fn") \
            if isinstance(probe, list) else None
        return dataclasses.replace(
            as_read, datasets=dataset.given.refs, num_workers=count[0], num_workers_text=count[1],
            persistent=call.persistent if "persistent_workers" in kept else False,
            context=call.context if "multiprocessing_context" in kept else "",
            worker_inits=call.worker_inits if "worker_init_fn" in kept else (),
            num_workers_param=call.num_workers_param if "num_workers" in kept else "",
            num_workers_attr=call.num_workers_attr if "num_workers" in kept else "",
            wires_init=probe is _AS_GIVEN or (reached is not None and reached.given is not None
                                              and reached.given.keyword == "worker_init_fn"))

    def _through_inits(self, cls: ClassFacts, args: list[Passed]
                       ) -> Optional[list[Passed] | _AsGiven]:
        """The arguments torch's DataLoader gets when `cls` is called with `args`, following
        each `__init__` on the way up; `_AS_GIVEN` when every one passes them on unchanged."""
        current: Optional[ClassFacts] = cls
        mapped: Optional[list[Passed]] = None
        for _ in range(_MAX_RESOLVE_DEPTH):
            if current is None:
                return None
            if current.method("__init__") is not None \
                    and not is_pure_forward(current.base_init, current):
                mapped = pass_through(args if mapped is None else mapped, current)
                if mapped is None:
                    return None
            home = self.class_file[current.qualname]
            if any(self.resolve(b, home) in LOADERS for b in current.bases):
                return _AS_GIVEN if mapped is None else mapped
            current = next((b for b in self.base_classes(current) if self.is_loader_class(b)),
                           None)
        return None

    def _kept_param(self, cls: ClassFacts, attr: str) -> Optional[tuple[ClassFacts, str]]:
        """The class whose `__init__` `cls` runs and its parameter ("<class>.__init__#<index>#
        <name>") kept as `self.<attr>`; None when no parameter is kept there."""
        init_owner = next((m for m in self.mro(cls) if m.method("__init__") is not None), None)
        if init_owner is None:
            return None
        params = init_owner.init_params
        param = next((p for p, a in init_owner.param_attrs if a == attr and p in params), None)
        if param is None:
            return None
        return init_owner, f"{init_owner.qualname}.__init__#{params.index(param)}#{param}"

    def _kept_workers(self, loader: LoaderCall) -> LoaderCall:
        """The loader with `num_workers=self.<attr>` made constant when every construction
        of the class gives that `__init__` parameter a constant (passed, or its default):
        the largest; unchanged (workers) when one does not."""
        owner_name, _, attr = loader.num_workers_attr.rpartition(".")
        owner = self.classes.get(owner_name)
        kept = self._kept_param(owner, attr) if owner is not None else None
        if loader.num_workers is not None or kept is None:
            return loader
        init_owner, param = kept
        default = dict(init_owner.init_int_defaults).get(param.rpartition("#")[2])
        sites = self.calls_of(f"{init_owner.qualname}.__init__")
        counts = []
        for _, site in sites:
            passed = [a for a in site.args if self._is_arg_for(a, param)]
            counts.append(passed[0].int_value if passed else default)
        if not counts or None in counts:
            return loader
        most = max(c for c in counts if c is not None)
        return dataclasses.replace(loader, num_workers=most, num_workers_text=str(most))

    # --- value flow: which dataset classes a value may be ----------------------------------
    #
    # One graph over the whole program, solved once. A node stands for a value the program
    # names: what a function returns ("func", qualname, its file), a factory method of a class
    # ("method", class, name), a module variable ("var", file, name), an attribute of a class's
    # instances ("attr", class, name), a parameter ("param", "<function>#<index>#<name>"), the
    # classes passed for a parameter that is called (`ds_type(p)`: "types", the parameter) and
    # such a call ("built", its index in `_built_refs`). A node's inputs are the references
    # that flow into it (`_inputs`); a parameter's come from every call site of its function,
    # and the call sites of a method depend on what its receiver may be, so the graph grows
    # while it is solved. The worklist adds each (class, constructing reference) to a node at
    # most once and sends it along each edge once: the work is linear in the edges times the
    # classes flowing, whatever the number of paths, and cycles end when nothing is new.

    def classes_of_ref(self, ref: DatasetRef, facts: FileFacts
                       ) -> list[tuple[ClassFacts, DatasetRef]]:
        """Dataset classes a reference may construct, with the ref that constructs them
        (each once; in the order the references lead to them)."""
        inputs = self._ref_inputs(ref, facts)
        for each in inputs:
            if each.node is not None:
                self._want(each.node)
        self._solve()
        out: dict[tuple[str, int], Item] = {}
        for each in inputs:
            if each.item is not None:
                out.setdefault(self._key(each.item), each.item)
            elif each.node is not None:
                for item in self._ordered(each.node):
                    out.setdefault(self._key(item), item)
        return list(out.values())

    @property
    def flow_work(self) -> int:
        """Steps the linking took so far: nodes of the value flow wired, edges, items sent
        along them, answers read; loader uses offered to a class. Linear in the program
        (tests/test_link_scale.py holds it to that)."""
        return self._work

    def _ref_inputs(self, ref: DatasetRef, facts: FileFacts) -> list[_In]:
        """What flows into a value from `ref`, read in `facts`: a class it constructs, or the
        node whose value it is."""
        kind = ref.kind
        if kind == "call":
            target = self.resolve(ref.target, facts)
            cls = self.classes.get(target)
            if cls is not None:
                self._read_in(ref, facts)
                return [_In(item=(cls, ref))]
            if target in self.functions:
                home = self.by_module.get(target.rpartition(".")[0], facts)
                return [_In(node=("func", target, home.path))]
            owner_name, _, method = target.rpartition(".")
            if owner_name in self.classes:  # `Frames.from_config(cfg)`, `self._build(s)`
                return [_In(node=("method", owner_name, method))]
            return []
        if kind == "name":
            found = self._module_attr(self.resolve(ref.target, facts))
            return [_In(node=("var", found[0].path, found[1]))] if found is not None else []
        if kind == "param":
            return [_In(node=("param", ref.target, ""))]
        if kind == "built":
            self._read_in(ref, facts)
            return [_In(node=("types", ref.target, ""), built=ref)]
        if kind == "attr":
            owner_name, _, attr = ref.target.rpartition(".")
            return [_In(node=("attr", owner_name, attr))] if owner_name in self.classes else []
        return []

    def _inputs(self, node: Node, ordered: bool = False) -> list[_In]:
        """What flows into `node`; `ordered`: its call sites in the order of the program
        (for answers), else as found (while solving)."""
        kind, name, detail = node
        if kind == "func":
            home = self._by_path[detail]
            return [i for r in self.functions[name].returns for i in self._ref_inputs(r, home)]
        if kind == "method":
            cls = self.classes[name]
            for member in self.mro(cls):
                method = member.method(detail)
                if method is None:
                    continue
                home = self.class_file[member.qualname]
                out: list[_In] = []
                for ref in method.returns:
                    if ref.kind == "call" and ref.target == OWN_CLASS:  # `cls(...)`
                        made = dataclasses.replace(ref, target=cls.qualname)
                        self._read_in(made, home)
                        out.append(_In(item=(cls, made)))
                    else:
                        out.extend(self._ref_inputs(ref, home))
                return out
            return []
        if kind == "var":
            home = self._by_path[name]
            refs = dict(home.module_vars).get(detail, ())
            return [i for r in refs for i in self._ref_inputs(r, home)]
        if kind == "attr":
            owner = self.classes[name]
            home = self.class_file[name]
            out = [i for member in self.mro(owner) for a, rs in member.attr_refs if a == detail
                   for r in rs for i in self._ref_inputs(r, home)]
            kept = self._kept_param(owner, detail)  # `Trainer(ds)` for `self.ds = ds`
            if kept is not None:
                out.append(_In(node=("param", kept[1], "")))
            return out
        # "param", "types": from every call site of the function
        assert self._sites is not None
        function = name.split("#")[0]
        sites = self._sites_of(function) if ordered else \
            [(w[2], w[3]) for w in self._sites.get(function, ())]
        return [i for facts, site in sites for i in self._site_inputs(node, facts, site)]

    def _site_inputs(self, node: Node, facts: FileFacts, site: CallSite) -> list[_In]:
        """What one call site passes into a parameter node: the values of its argument, or
        for "types" the classes it names (`get_dataset(LMDBDataset, p)`)."""
        kind, param, _ = node
        out: list[_In] = []
        for arg in site.args:
            if not self._is_arg_for(arg, param):
                continue
            for ref in arg.refs:
                if kind == "param":
                    out.extend(self._ref_inputs(ref, facts))
                elif ref.kind == "param":  # passed on: `make(ds_type)`
                    out.append(_In(node=("types", ref.target, "")))
                elif ref.kind == "name":
                    cls = self.classes.get(self.resolve(ref.target, facts))
                    if cls is not None:
                        out.append(_In(item=(cls, ref)))
        return out

    def _through(self, item: Item, built: Optional[DatasetRef]) -> Item:
        """`item` as it arrives along an edge: a class passed for `ds_type`, built by
        `ds_type(p)` (read where that call is)."""
        if built is None:
            return item
        cls = item[0]
        made = DatasetRef("call", cls.qualname, built.handle_args, built.arg_refs)
        home = self.home_of(built)
        if home is not None:
            self._read_in(made, home)
        return cls, made

    def _read_in(self, ref: DatasetRef, facts: FileFacts) -> None:
        if id(ref) not in self._homes:
            self._homes[id(ref)] = facts
            self._homed.append(ref)  # alive, so its id is never reused

    def home_of(self, ref: DatasetRef) -> Optional[FileFacts]:
        """The file a constructing reference the value flow gave was read in (where the
        names of its arguments resolve); None for one it did not give."""
        return self._homes.get(id(ref))

    def _key(self, item: Item) -> tuple[str, int]:
        """An item's identity: its class and its reference up to equality (equal references
        share one number; a reference is hashed once, not at every step)."""
        ref = item[1]
        number = self._ref_numbers.get(id(ref))
        if number is None:
            number = self._ref_numbers[id(ref)] = self._equal_refs.setdefault(
                ref, len(self._equal_refs))
            self._refs_numbered.append(ref)  # alive, so its id is never reused
        return item[0].qualname, number

    def _want(self, node: Node) -> None:
        if node not in self._values:
            self._values[node] = {}
            self._unwired.append(node)

    def _add(self, node: Node, item: Item) -> None:
        values = self._values[node]
        key = self._key(item)
        if key not in values:
            values[key] = item
            self._pending.append((node, item))
            if node in self._order:  # changed after it was answered: order answers again
                self._order.clear()

    def _connect(self, node: Node, each: _In) -> None:
        self._work += 1
        if each.item is not None:
            self._add(node, each.item)
            return
        source = each.node
        assert source is not None
        self._want(source)
        self._users.setdefault(source, []).append((node, each.built))
        for item in list(self._values[source].values()):
            self._add(node, self._through(item, each.built))

    def _solve(self) -> None:
        """Run the worklist until nothing is new: wire each new node to its inputs, send
        each new item to the node's users (and to the call sites it is the receiver of)."""
        if self._sites is None:
            self._sites = {}
            self._site_seen: set[tuple[str, int, int]] = set()
            for file_index, facts in enumerate(self.files):
                for site_index, site in enumerate(facts.calls):
                    where = (file_index, site_index, facts, site)
                    if not site.receiver:
                        for target in self._static_targets(site, facts):
                            self._add_site(target, where)
                        continue
                    for ref in site.receiver:
                        for each in self._ref_inputs(ref, facts):
                            self._work += 1
                            if each.item is not None:
                                self._receive(where, each.item)
                            elif each.node is not None:
                                self._want(each.node)
                                self._receivers.setdefault(each.node, []).append(where)
        while self._unwired or self._pending:
            if self._unwired:
                node = self._unwired.pop()
                self._work += 1
                if node[0] in ("param", "types"):
                    self._watchers.setdefault(node[1].split("#")[0], []).append(node)
                for each in self._inputs(node):
                    self._connect(node, each)
                continue
            node, item = self._pending.pop()
            for user, built in self._users.get(node, ()):
                self._work += 1
                self._add(user, self._through(item, built))
            for where in self._receivers.get(node, ()):
                self._work += 1
                self._receive(where, item)

    def _receive(self, where: _Where, item: Item) -> None:
        """A call site's receiver may be an instance of `item`'s class: the site calls that
        class's method."""
        key = self._method_key(item[0], where[3].target)
        if key:
            self._add_site(key, where)

    def _add_site(self, target: str, where: _Where) -> None:
        seen = (target, where[0], where[1])
        if seen in self._site_seen:
            return
        self._site_seen.add(seen)
        assert self._sites is not None
        self._sites.setdefault(target, []).append(where)
        self._sites_sorted.pop(target, None)
        for node in self._watchers.get(target, ()):
            for each in self._site_inputs(node, where[2], where[3]):
                self._connect(node, each)

    def _sites_of(self, target: str) -> list[tuple[FileFacts, CallSite]]:
        """The call sites of a function or method, in the order of the files and of the
        calls in each (the order answers are given in); sorted once it stops growing."""
        found = self._sites_sorted.get(target)
        if found is None:
            assert self._sites is not None
            found = self._sites_sorted[target] = [
                (w[2], w[3]) for w in sorted(self._sites.get(target, ()),
                                             key=lambda w: (w[0], w[1]))]
        return found

    def _ordered(self, root: Node) -> list[Item]:
        """A solved node's value in the order its inputs give it (a depth-first reading of
        the solved graph, each node read once; a node met again on the way, in a cycle,
        gives its whole solved value)."""
        done = self._order.get(root)
        if done is not None:
            return done
        found: dict[Node, dict[tuple[str, int], Item]] = {root: {}}
        stack: list[tuple[Node, Iterator[_In], Optional[DatasetRef]]] = [
            (root, iter(self._inputs(root, True)), None)]
        while stack:
            node, inputs, built = stack[-1]
            acc = found[node]
            for each in inputs:
                self._work += 1
                if each.item is not None:
                    acc.setdefault(self._key(each.item), each.item)
                    continue
                child = each.node
                assert child is not None
                ready = self._order.get(child)
                if ready is None and child in found:  # on the stack: a cycle
                    ready = list(self._values[child].values())
                if ready is not None:
                    for item in ready:
                        item = self._through(item, each.built)
                        acc.setdefault(self._key(item), item)
                    continue
                found[child] = {}
                stack.append((child, iter(self._inputs(child, True)), each.built))
                break
            else:
                stack.pop()
                result = self._order[node] = list(acc.values())
                if stack:
                    parent = found[stack[-1][0]]
                    for item in result:
                        item = self._through(item, built)
                        parent.setdefault(self._key(item), item)
        return self._order[root]

    def arguments_for(self, param: str) -> list[tuple[FileFacts, ArgRef]]:
        """What callers pass for a function parameter ("<function>#<index>#<name>")."""
        function = param.split("#")[0]
        return [(facts, arg) for facts, site in self.calls_of(function)
                for arg in site.args if self._is_arg_for(arg, param)]

    def calls_of(self, function: str) -> list[tuple[FileFacts, CallSite]]:
        """The call sites of a function or method ("<class>.<method>", the class defining
        it), once the receivers of method calls are solved."""
        self._solve()
        return self._sites_of(function)

    def _method_key(self, cls: ClassFacts, name: str) -> str:
        """"<defining class>.<name>" for the method `cls` has (its own or inherited)."""
        owner = next((m for m in self.mro(cls) if m.method(name) is not None), None)
        return f"{owner.qualname}.{name}" if owner is not None else ""

    def _static_targets(self, site: CallSite, facts: FileFacts) -> list[str]:
        """The function or method a call without a receiver calls: a function by name, a
        static or class method by its class (`Trainer.evaluate(ds)`), a class's `__init__`."""
        target = self.resolve(site.target, facts)
        if target in self.functions:
            return [target]
        built = self.classes.get(target)  # `Trainer(ds)`: a call of its `__init__`
        if built is not None:
            key = self._method_key(built, "__init__")
            return [key] if key else []
        owner_name, _, name = target.rpartition(".")
        owner = self.classes.get(owner_name)
        key = self._method_key(owner, name) if owner is not None else ""
        return [key] if key else []

    # --- loaders → classes ---------------------------------------------------------------------

    def loaders_by_class(self) -> dict[str, list[LoaderUse]]:
        """Loader uses per class: the classes a loader's dataset may be (through factories,
        containers, call sites), then what those keep — holders and sub-datasets built in
        `__init__` or passed to it — reached by the same loaders (see `reached`). Computed
        once; the rules read it, never change it."""
        if self._by_class is not None:
            return self._by_class
        out: dict[str, list[LoaderUse]] = {}
        seen: set[tuple[str, int, DatasetRef]] = set()  # (class, loader, constructing ref)

        def add(qualname: str, use: LoaderUse) -> bool:
            self._work += 1
            key = (qualname, id(use[1]), use[2])
            if key in seen:
                return False
            seen.add(key)
            out.setdefault(qualname, []).append(use)
            return True

        same: dict[LoaderCall, LoaderCall] = {}  # one object per loader as read
        for facts, loader in self.loaders():
            for ref in loader.datasets:
                for used, cls, constructing in self._loader_classes(facts, loader, ref):
                    add(cls.qualname, (facts, same.setdefault(used, used), constructing))
        self.reached = {}
        # Then what each class keeps, as a worklist over (class, loader): what a class keeps
        # is found once, when a loader first reaches it (the classes its constructions pass
        # to `__init__` from its direct uses, the only ones with arguments), and each loader
        # crosses each keeping once. The uses through keepings are written out at the end.
        loaders_of = {name: {id(u[1]): (u[0], u[1]) for u in uses} for name, uses in out.items()}
        keeps: dict[str, list[tuple[str, DatasetRef]]] = {}  # outer → (inner, kept ref)
        kept_in: dict[str, list[tuple[str, DatasetRef]]] = {}  # inner → (outer, kept ref)
        pending = [(name, key) for name, found in loaders_of.items() for key in found]
        while pending:
            name, key = pending.pop()
            self._work += 1
            edges = keeps.get(name)
            if edges is None:
                edges = keeps[name] = self._keepings(name, out.get(name, []), kept_in)
            for inner, _ in edges:
                reaching = loaders_of.setdefault(inner, {})
                if key not in reaching:
                    self._work += 1
                    reaching[key] = loaders_of[name][key]
                    pending.append((inner, key))
        for inner, edges in kept_in.items():
            uses = out.setdefault(inner, [])
            for outer, kept in edges:
                self._work += len(loaders_of[outer])
                uses += [(f, loader, kept) for f, loader in loaders_of[outer].values()]
        self._by_class = out
        return out

    def _loader_classes(self, facts: FileFacts, loader: LoaderCall, ref: DatasetRef
                        ) -> Iterator[tuple[LoaderCall, ClassFacts, DatasetRef]]:
        """The classes a loader's dataset argument may be; a parameter's through each call
        site, with `num_workers` from the same call when the loader takes it from a
        parameter of the same function (`make_loader(ds, 0)`)."""
        loader = self._kept_workers(loader)
        if ref.kind != "param":
            for cls, constructing in self.classes_of_ref(ref, facts):
                yield loader, cls, constructing
            return
        function = ref.target.split("#")[0]
        for home, site in self.calls_of(function):
            used = loader
            if loader.num_workers_param.split("#")[0] == function:
                workers = [a for a in site.args if self._is_arg_for(a, loader.num_workers_param)]
                if workers and workers[0].int_value is not None:
                    used = dataclasses.replace(loader, num_workers=workers[0].int_value,
                                               num_workers_text=str(workers[0].int_value))
            for arg in site.args:
                if self._is_arg_for(arg, ref.target):
                    for r in arg.refs:
                        for cls, constructing in self.classes_of_ref(r, home):
                            yield used, cls, constructing

    @staticmethod
    def _is_arg_for(arg: ArgRef, param: str) -> bool:
        _, index_text, name = param.split("#")
        return arg.keyword == name if arg.keyword else arg.position == int(index_text) >= 0

    def _keepings(self, name: str, uses: list[LoaderUse],
                  kept_in: dict[str, list[tuple[str, DatasetRef]]]
                  ) -> list[tuple[str, DatasetRef]]:
        """The classes an instance of class `name` keeps (`_kept_built`, and `_kept_passed`
        by each of its direct `uses`), each with the kept reference ("<class>.<attr>") its
        loaders reach it through; recorded in `reached` and `kept_in` (inner → outer)."""
        outer = self.classes[name]
        found = list(self._kept_built(outer))
        # each construction in the file it is read in (a loader's dataset may be built in the
        # caller of the function making the loader)
        constructions = dict.fromkeys(((self.home_of(ref) or f).path, ref) for f, _, ref in uses
                                      if ref.arg_refs)
        for path, ref in constructions:
            found.extend(self._kept_passed(outer, self._by_path[path], ref))
        edges: dict[tuple[str, str], DatasetRef] = {}
        for inner, reach in found:
            if (inner.qualname, reach.attr) not in edges:
                kept = edges[inner.qualname, reach.attr] = \
                    DatasetRef("kept", f"{name}.{reach.attr}")
                kept_in.setdefault(inner.qualname, []).append((name, kept))
            reaches = self.reached.setdefault(inner.qualname, [])
            if reach not in reaches:
                reaches.append(reach)
        return [(inner, kept) for (inner, _), kept in edges.items()]

    def _kept_built(self, outer: ClassFacts) -> Iterator[tuple[ClassFacts, Reach]]:
        """Project classes an instance of `outer` keeps and uses after construction, built in
        a method (`self.db = Reader(p)`, `self.dbs.append(Inner(p))`) or named by the type of
        an `__init__` parameter it keeps (`reader: Reader`, an isinstance assert)."""
        mro = self.mro(outer)
        read_later = self._read_later(outer)
        for member in mro:
            home = self.class_file[member.qualname]
            for attr, refs in member.attr_refs:
                if attr not in read_later:
                    continue
                for ref in refs:
                    for inner, _ in self.classes_of_ref(ref, home):
                        if inner.qualname != outer.qualname:
                            yield inner, Reach(outer.name, attr)
        init_owner = next((m for m in mro if m.method("__init__") is not None), None)
        if init_owner is None:
            return
        home = self.class_file[init_owner.qualname]
        attrs = dict(init_owner.param_attrs)
        for param, annotated in init_owner.param_types:
            typed = self.classes.get(self.resolve(annotated, home))
            kept_as = attrs.get(param)
            if typed is not None and kept_as in read_later and typed.qualname != outer.qualname:
                yield typed, Reach(outer.name, kept_as or "", True, param)

    def _kept_passed(self, outer: ClassFacts, facts: FileFacts, constructing: DatasetRef
                     ) -> Iterator[tuple[ClassFacts, Reach]]:
        """Project classes a construction of `outer` (`DS(Reader(p))`, read in `facts`)
        passes to `__init__`, which keeps them and uses them after construction."""
        if not constructing.arg_refs:
            return
        init_owner = next((m for m in self.mro(outer) if m.method("__init__") is not None),
                          None)
        if init_owner is None:
            return
        read_later = self._read_later(outer)
        attrs = dict(init_owner.param_attrs)
        params = init_owner.init_params
        for arg in constructing.arg_refs:
            param = arg.keyword or (params[arg.position]
                                    if 0 <= arg.position < len(params) else "")
            kept_as = attrs.get(param)
            if kept_as is None or kept_as not in read_later:
                continue
            for ref in arg.refs:
                for inner, _ in self.classes_of_ref(ref, facts):
                    if inner.qualname != outer.qualname:
                        yield inner, Reach(outer.name, kept_as, True, param)

    def _read_later(self, cls: ClassFacts) -> set[str]:
        """The attributes a class's methods other than `__init__` read (once per class)."""
        found = self._reads.get(cls.qualname)
        if found is None:
            found = self._reads[cls.qualname] = {
                a for member in self.mro(cls) for m in member.methods if m.name != "__init__"
                for a in m.attrs_read}
        return found

    # --- what calls return ---------------------------------------------------------------------

    def returned_handle(self, callee: str, cls: Optional[ClassFacts], facts: FileFacts,
                        depth: int = 0) -> Optional[tuple[HandleSite, bool, FileFacts]]:
        """The handle a call returns (`open_env(p)`, `self._connect(p)`), followed through
        further calls a few levels deep: its creating call, whether a cached function returns
        it (one object per process, shared: WS102), and the file creating it. None when it
        returns no handle we know."""
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
                return None
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
        return None

    # --- start methods ---------------------------------------------------------------------

    def start_methods(self, loader: LoaderCall, facts: FileFacts
                      ) -> tuple[tuple[str, str], ...]:
        """How the loader's workers may start, each with where that comes from (for
        messages; "" when named in the loader's file): its `multiprocessing_context`, else the
        `set_start_method` of its own file, else that of each entry script that imports the
        loader's module (directly or through other modules; an entry is a checked file no
        other checked file imports), an entry naming none giving the target's default. A
        start method that is not a constant counts as the default."""
        reached = self.reached_start([loader.function], facts)[0] if loader.function else ""
        for named in (loader.context, reached, facts.start_method):
            if named and named != "?":
                return ((named, ""),)
        methods: dict[str, str] = {}
        for entry in self.entries(facts) or [facts]:
            named, scope = self.program_start(entry)
            if named and named != "?":
                where = os.path.basename(entry.path) or entry.module
                run = f"in {scope.rpartition('.')[2]}(), run by {where}" if scope else f"in {where}"
                methods.setdefault(named, f"set_start_method {run}")
            else:
                for method in self.default_start:
                    methods.setdefault(method, "the target's default")
        return tuple(methods.items())

    def program_start(self, entry: FileFacts) -> tuple[str, str]:
        """The start method an entry script sets, and the function setting it: at module level
        (`if __name__ == "__main__":` included; function ""), else in the code its module
        level runs (`main()`, a function of another module, a class it builds); ("", "") when
        none. One set in a function no entry reaches changes nothing."""
        if entry.start_method:
            return entry.start_method, ""
        if entry.entry_calls:
            return self.reached_start(entry.entry_calls, entry)
        # Module-level code runs nothing (a console script's module, run by a launcher): any
        # function no other function here calls may be what the launcher runs.
        called = {c for func in entry.functions for c in func.calls}
        return self.reached_start([f.qualname for f in entry.functions
                                   if f.qualname not in called], entry)

    def reached_start(self, names: Iterable[str], facts: FileFacts) -> tuple[str, str]:
        """The start method set by the functions (or classes' methods) `names` run, following
        the project functions they call, and the one setting it; ("", "") when none does."""
        key = (tuple(names), facts.path)
        found = self._reached_starts.get(key)
        if found is None:
            found = self._reached_starts[key] = self._reach_start(key[0], facts)
        return found

    def _reach_start(self, names: tuple[str, ...], facts: FileFacts) -> tuple[str, str]:
        if self._scoped_starts is None:
            self._scoped_starts = {}
            for each in self.files:
                for scope, method in each.scoped_start_methods:
                    self._scoped_starts.setdefault(scope, method)
                    owner = scope.rpartition(".")[0]
                    if owner in self.classes:  # a method: counts when its class is built
                        self._scoped_starts.setdefault(owner, method)
        seen: set[str] = set()
        queue = [(name, facts) for name in names]
        while queue and len(seen) < _MAX_REACHED:
            name, home = queue.pop(0)
            target = self.resolve(name, home)
            if target in seen:
                continue
            seen.add(target)
            cls = self.classes.get(target)
            owners = [m.qualname for m in self.mro(cls)] if cls is not None else [target]
            found = next((o for o in owners if o in self._scoped_starts), "")
            if found:
                return self._scoped_starts[found], found
            func = self.functions.get(target)
            if func is not None:
                inside = self.by_module.get(target.rpartition(".")[0], home)
                queue.extend((called, inside) for called in func.calls)
        return "", ""

    def entries(self, facts: FileFacts) -> list[FileFacts]:
        """The entry files whose imports reach `facts` (itself, if no checked file imports
        it); empty inside an import cycle that no entry reaches."""
        if self._entries is None:
            self._entries = self._entries_by_module()
        found = self._entries.get(facts.module) if facts.module else None
        return [facts if f is None else f for f in found] if found is not None else [facts]

    def _entries_by_module(self) -> dict[str, list[Optional[FileFacts]]]:
        """Module → its entry files; None stands for the module's own file."""
        importers: dict[str, set[str]] = {}
        for facts in self.files:
            for module in self._imported_modules(facts):
                if module != facts.module:
                    importers.setdefault(module, set()).add(facts.module)
        out: dict[str, list[Optional[FileFacts]]] = {}
        for module in {f.module for f in self.files if f.module}:
            seen, stack, found = {module}, [module], []
            while stack:
                current = stack.pop()
                above = importers.get(current, set())
                if not above:
                    found.append(None if current == module else self.by_module[current])
                stack.extend(m for m in above if m not in seen)
                seen.update(above)
            out[module] = sorted(found, key=lambda f: f.path if f else "")
        return out

    def _imported_modules(self, facts: FileFacts) -> set[str]:
        """Checked modules `facts` imports at module level (`from a.b import X`: a.b and the
        packages above it)."""
        out: set[str] = set()
        package = facts.module.rpartition(".")[0]
        for target in [q for _, q in facts.imports] + list(facts.star_imports):
            name = self._canonical(target)
            module, _ = self._split_module(name) if name not in self.by_module else (name, "")
            if module is None and package:  # a script's sibling module
                sibling = self._canonical(f"{package}.{target}")
                module = sibling if sibling in self.by_module else self._split_module(sibling)[0]
            while module:
                if module in self.by_module:
                    out.add(module)
                module = module.rpartition(".")[0]
        return out

    def class_start_methods(self, facts: FileFacts) -> tuple[str, ...]:
        """How workers may start for code in `facts` that no loader was linked to: the
        start methods of the entry scripts whose imports reach it."""
        entries = self.entries(facts) or [facts]
        if entries == [facts] and not self.file_loaders(facts) and not facts.start_method:
            # Imported by no checked file: loaded by name (`construct_class_by_name`,
            # importlib), so by whichever entry builds loaders: the start methods of them all.
            found = [m for f, loader in self.loaders() for m, _ in self.start_methods(loader, f)]
            if found:
                return tuple(dict.fromkeys(found))
        methods: list[str] = []
        for entry in entries:
            named = self.program_start(entry)[0]
            found = [named] if named and named != "?" else list(self.default_start)
            methods.extend(m for m in found if m not in methods)
        return tuple(methods)

    def calls_through(self, names: Iterable[str], facts: FileFacts,
                      skip: frozenset[str] = frozenset()
                      ) -> tuple[list[tuple[str, FileFacts]], set[str]]:
        """Bare names read (with the file they are read in), and those read inside the
        project functions they call, a few calls deep; with those functions' names. A project
        class with a class-level cache (`ZipReader.read(p)`, `ZipReader.zip_bank`), not one of
        `skip`, read counts as calling each of its methods ("<class>.<method>")."""
        found = [(name, facts) for name in names]
        functions: set[str] = set()
        classes: set[str] = set()
        frontier = list(found)
        for _ in range(_MAX_RETURN_DEPTH):
            following: list[tuple[str, FileFacts]] = []
            for name, home in frontier:
                # a bare name read: through the reading file's imports (`get_zip` imported)
                resolved = self.resolve(dict(home.imports).get(name, name), home)
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

    def read_class(self, name: str, facts: FileFacts) -> Optional[ClassFacts]:
        """The project class a bare name read in `facts` is (through its imports)."""
        return self.classes.get(self.resolve(dict(facts.imports).get(name, name), facts))

    def worker_init_functions(self, loader: LoaderCall, facts: FileFacts) -> list[FunctionFacts]:
        found = (self.functions.get(self.resolve(name, facts)) for name in loader.worker_inits)
        return [f for f in found if f is not None]

    def module_handle(self, name: str, facts: FileFacts
                      ) -> Optional[tuple[FileFacts, ModuleHandle]]:
        """The module-level handle a bare name in `facts` refers to, if any."""
        for handle in facts.module_handles:
            if handle.name == name:
                return facts, handle
        imported = facts.import_map().get(name)
        candidates = [imported] if imported else [f"{s}.{name}" for s in facts.star_imports]
        for candidate in candidates:
            found = self._module_attr(self.resolve(candidate, facts))
            if found is not None:
                home, attr = found
                for handle in home.module_handles:
                    if handle.name == attr:
                        return home, handle
        return None


# A class's effective methods: name → (the class that defines it, the method).
Methods = dict[str, tuple[ClassFacts, MethodFacts]]


def method_closure(roots: Iterable[str], methods: Methods) -> set[str]:
    """The methods `roots` run: themselves and every `self.m()` they call, transitively."""
    seen: set[str] = set()
    stack = [r for r in roots if r in methods]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(c for c in methods[name][1].self_calls if c in methods)
    return seen
