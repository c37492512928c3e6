"""Value flow: which dataset classes a value may be, solved once for the whole program.

One graph over the whole program, solved once. A node stands for a value the program
names: what a function returns ("func", qualname, its file), a factory method of a class
("method", class, name), a module variable ("var", file, name), an attribute of a class's
instances ("attr", class, name), a parameter ("param", "<function>#<index>#<name>") and the
classes passed for a parameter that is called ("types", the parameter: `ds_type(p)` reads
them through an edge that builds each with the call's arguments). A node's inputs are the
references that flow into it (`_inputs`); a parameter's come from every call site of its
function, and the call sites of a method depend on what its receiver may be, so the graph
grows while it is solved. The worklist adds each (class, constructing reference) to a node
at most once and sends it along each edge once: the work is linear in the edges times the
classes flowing, whatever the number of paths, and cycles end when nothing is new (no depth
cut-off decides an answer). Answers are then read depth-first over the solved graph, each
node once, so they come in the order the references give them.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..facts import (
    LOOKUP_VERBS, OWN_CLASS, ArgRef, CallSite, ClassFacts, DatasetRef, FileFacts, FunctionFacts,
    registry_kind,
)
from ..records import field, record, replace
from .classes import Hierarchy

# The value flow (`Project.classes_of_ref`): a class with the reference constructing it; a
# node of the graph (kind, name, detail); a call site (file index, call index, file, call).
Item = tuple[ClassFacts, DatasetRef]
Node = tuple[str, str, str]
_Where = tuple[int, int, FileFacts, CallSite]
# A factory's parameter tested against constants: the returns under each, the returns under none
_Choice = tuple[dict[str, list[DatasetRef]], list[DatasetRef]]
# what a dict or list of classes answers itself: never a method of the classes it holds
_CONTAINER_METHODS = frozenset((
    "get", "pop", "popitem", "setdefault", "items", "keys", "values", "copy", "update",
    "fromkeys", "clear", "index", "count", "append", "extend", "insert", "remove", "reverse",
    "sort"))


@record(frozen=True)
class _In:
    """One input of a node: a constant (a class constructed there), or another node's value,
    each class of which is built with the arguments of `built` when given (`ds_type(p)`)."""

    node: Optional[Node] = None
    item: Optional[Item] = None
    built: Optional[DatasetRef] = None


@record()
class _Registry:
    """Classes a decorator registered (`@DATASETS.register_module()`), by the name each is
    looked up by; `name` for messages; `noted`: a lookup by a name no constant gives was met
    (its classes are in `ValueFlow.named_by`)."""

    name: str
    members: list[ClassFacts] = field(default_factory=list)
    by_name: dict[str, list[ClassFacts]] = field(default_factory=dict)
    noted: bool = False


class ValueFlow(Hierarchy):
    def __post_init__(self) -> None:
        super().__post_init__()
        # each node's solved value, its users, the call sites each receiver node decides,
        # parameter nodes waiting for call sites
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
        self._equal_refs: dict[int, list[tuple[DatasetRef, int]]] = {}  # by shape hash
        self._ref_count = 0
        self._refs_numbered: list[DatasetRef] = []
        # (owner, what it registers: "task" for `register_task`) → the registry
        self._registries: Optional[dict[tuple[str, str], _Registry]] = None
        # a factory's returns by the constant its parameter is tested against (`_chosen`)
        self._choices: dict[str, dict[str, _Choice]] = {}
        # the returns passing a parameter on to a lookup (`_passed_on`), per function; the
        # functions whose returns are being read for one call
        self._passing: dict[str, list[tuple[int, tuple[tuple[int, str, str], ...]]]] = {}
        self._expanding: set[str] = set()
        # a class registered by a decorator that a lookup by a name no constant gives may
        # build → the registry (`DATASETS`): it stays latent, and a message says why
        self.named_by: dict[str, str] = {}

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
            if cls is None or ref.result_called:
                looked = self._looked_up(ref, target, facts)
                if looked is None and ref.result_called:
                    looked = self._classes_returned(ref, target, facts)
                if looked is not None or ref.result_called:
                    return looked or []
            if cls is not None:
                self._read_in(ref, facts)
                return [_In(item=(cls, ref))]
            if target in self.functions:
                home = self.by_module.get(target.rpartition(".")[0], facts)
                function = self.functions[target]
                # `get_dataset("lmdb", p)`: the returns the constant chooses, or the lookups
                # it decides (`build_dataset(dict(type="X"))`); read as they are for this call
                # (a function met again inside its own expansion: as any factory)
                chosen = None
                if target not in self._expanding:
                    chosen = self._chosen(function, ref)
                    if chosen is None:
                        chosen = self._passed_on(function, ref)
                if chosen is not None:
                    self._expanding.add(target)
                    try:
                        return [i for r in chosen for i in self._ref_inputs(r, home)]
                    finally:
                        self._expanding.discard(target)
                return [_In(node=("func", target, home.path))]
            owner_name, _, method = target.rpartition(".")
            if owner_name in self.classes:  # `Frames.from_config(cfg)`, `self._build(s)`
                return [_In(node=("method", owner_name, method))]
            through = self._var_classes_method(owner_name, method)
            if through:
                return through
            return self._var_classes_called(ref, target, facts)
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

    def _var_classes_called(self, ref: DatasetRef, target: str, facts: FileFacts) -> list[_In]:
        """A call of a module variable another module defines as classes (`DatasetMapTrain =
        {"VQA": VQADataset, ...}`, then `DatasetMapTrain[name](reader=r)`; an alias `Data =
        VQADataset`): each class it names, built with this call's arguments. Only names the
        variable is bound to, one level: what else it holds decides nothing."""
        found = self._module_attr(target)
        if found is None:
            return []
        home, name = found
        out: list[_In] = []
        for each in dict(home.module_vars).get(name, ()):
            self._work += 1
            cls = self.classes.get(self.resolve(each.target, home)) \
                if each.kind == "name" else None
            if cls is not None:
                made = replace(ref, target=cls.qualname)
                self._read_in(made, facts)
                out.append(_In(item=(cls, made)))
        return out

    def _var_classes_method(self, owner: str, method: str) -> list[_In]:
        """A method of a class another module's variable names (`classname_map[name]
        .create_dataset(p)` with `classname_map = {"s3": S3Dataset}` imported; read in the
        module defining it, the lookup is bound and named directly): that method of each class
        the variable is bound to, one level, as `_var_classes_called` reads them. Never a
        method of the container itself (`classname_map.get(name)`)."""
        if method in _CONTAINER_METHODS:
            return []
        found = self._module_attr(owner)
        if found is None:
            return []
        home, name = found
        out: list[_In] = []
        for each in dict(home.module_vars).get(name, ()):
            self._work += 1
            cls = self.classes.get(self.resolve(each.target, home)) \
                if each.kind == "name" else None
            if cls is not None:
                out.append(_In(node=("method", cls.qualname, method)))
        return out

    def _classes_returned(self, ref: DatasetRef, target: str, facts: FileFacts
                          ) -> Optional[list[_In]]:
        """A project function or method returning classes, its result called
        (`get_dataset(name)(root)` for `return LmdbImages`, or `return DATASETS[name]` with a
        module dict of classes; `DatasetFactory().create(name)(root)`): each class it may return
        (those a constant argument chooses, `get_dataset("lmdb")(root)`), built with the outer
        call's arguments, or the value of the class method called on each
        (`get_dataset_cls(name).from_config(cfg)`). None: no project function or method."""
        function = self.functions.get(target)
        returns: tuple[DatasetRef, ...] | list[DatasetRef]
        if function is not None:
            home = self.by_module.get(target.rpartition(".")[0], facts)
            chosen = self._chosen(function, ref)
            returns = function.returns if chosen is None else chosen
        else:
            owner_name, _, name = target.rpartition(".")
            owner = self.classes.get(owner_name)
            found = next(((m, member) for member in self.mro(owner)
                          for m in [member.method(name)] if m is not None), None) \
                if owner is not None else None
            if found is None:
                return None
            returns = found[0].returns
            home = self.class_file[found[1].qualname]
        if ref.then in _CONTAINER_METHODS:
            return []
        out: list[_In] = []
        for each in returns:
            self._work += 1
            cls = self.classes.get(self.resolve(each.target, home)) \
                if each.kind == "name" else None
            if cls is None:
                continue
            if ref.then:
                out.append(_In(node=("method", cls.qualname, ref.then)))
                continue
            made = DatasetRef("call", cls.qualname, ref.handle_args, ref.arg_refs,
                              ref.positional, ref.keywords)
            self._read_in(made, facts)
            out.append(_In(item=(cls, made)))
        return out

    def _chosen(self, function: FunctionFacts, ref: DatasetRef
                ) -> Optional[list[DatasetRef]]:
        """The returns of a factory a call's string constant chooses (`get_dataset("lmdb")`
        for `if name == "lmdb": return LMDB(p)`): those under that test, or, when it names
        none of them, the returns no test on that parameter guards; None when no constant
        given decides (then every return)."""
        if not function.chosen or not ref.texts:
            return None
        choices = self._choices.get(function.qualname)
        if choices is None:  # per parameter tested: the returns under each constant, the rest
            choices = self._choices[function.qualname] = {}
            for param in dict.fromkeys(p for _, p, _ in function.chosen):
                by_text: dict[str, list[DatasetRef]] = {}
                for index, tested, text in function.chosen:
                    if tested == param:
                        by_text.setdefault(text, []).append(function.returns[index])
                guarded = {i for i, tested, _ in function.chosen if tested == param}
                self._work += len(function.returns)
                choices[param] = (by_text, [r for i, r in enumerate(function.returns)
                                            if i not in guarded])
        for param, (by_text, unguarded) in choices.items():
            given = _text_for(ref.texts, param)
            if given is not None:
                picked = by_text.get(given, unguarded)
                self._work += len(picked)
                return picked
        return None

    def _passed_on(self, function: FunctionFacts, ref: DatasetRef
                   ) -> Optional[list[DatasetRef]]:
        """The returns of a function that passes a parameter on to a lookup by name
        (`return build_from_cfg(cfg, DATASETS)`), with the constant this call gives for it
        (`build_dataset(dict(type="X"))`): the lookup then picks its class; None when the call
        gives none (the function's value, as for any call)."""
        if not ref.texts:
            return None
        passing = self._passing.get(function.qualname)
        if passing is None:
            own = f"{function.qualname}#"
            passing = self._passing[function.qualname] = [
                (i, tuple(k for k in r.key_params if k[2].startswith(own)))
                for i, r in enumerate(function.returns)
                if any(k[2].startswith(own) for k in r.key_params)]
        if not passing:
            return None
        returns = list(function.returns)
        for index, keys in passing:
            self._work += 1
            given = tuple((position, keyword, text) for position, keyword, param in keys
                          for text in [_text_for(ref.texts, param, True)] if text is not None)
            if given:
                returns[index] = replace(returns[index], texts=returns[index].texts + given)
        return returns if returns != list(function.returns) else None

    def _looked_up(self, ref: DatasetRef, target: str, facts: FileFacts
                   ) -> Optional[list[_In]]:
        """A class looked up by name in a registry its decorator put it in
        (`DATASETS.build(dict(type="X"))`, `registry.get_task("x")(cfg)`,
        `get_dataset_class("x")(cfg)`): the class the constant name chooses, built with the
        outer call's arguments. A name that is no constant decides nothing: the classes stay
        unlinked, each noted in `named_by` (why it stays latent). None: no registry, or a
        project function choosing no class by a constant (then read as any factory)."""
        registry = self._registry_of(target)
        if registry is None:
            return None
        self._work += 1
        key = next((text for position, keyword, text in ref.texts
                    if (position == 0 and keyword in ("", "type", "name"))
                    or keyword in ("name", "type")), None)
        # a project function (`build_dataset(cfg)`) not found to pick a class by a constant:
        # what it returns, as any factory's
        fallback: Optional[list[_In]] = \
            None if target in self.functions and not ref.result_called else []
        if key is None:
            if not registry.noted:  # once per registry, however many lookups
                registry.noted = True
                for cls in registry.members:
                    self._work += 1
                    self.named_by.setdefault(cls.qualname, registry.name)
            return fallback
        out = []
        for cls in registry.by_name.get(key, ()):
            self._work += 1
            if ref.then:  # `DATASETS.get("x").from_config(cfg)`
                out.append(_In(node=("method", cls.qualname, ref.then)))
                continue
            made = DatasetRef("call", cls.qualname, ref.handle_args, ref.arg_refs,
                              ref.positional, ref.keywords) if ref.result_called \
                else DatasetRef("call", cls.qualname)
            self._read_in(made, facts)
            out.append(_In(item=(cls, made)))
        return out or fallback

    def _registry_of(self, target: str) -> Optional[_Registry]:
        """The registry a lookup (`<owner>.get_<what>`, `<owner>.build`) reads, None when
        none is (a module's lookup function `build_<what>` also reads the module's plain
        `register`); the registries are gathered once, from the classes' decorators."""
        if self._registries is None:
            self._registries = {}
            for cls in self.classes.values():
                home = self.class_file[cls.qualname]
                for callee, name in cls.registered:
                    self._work += 1
                    owner, _, method = self.resolve(callee, home).rpartition(".")
                    key = (owner, registry_kind(method, "register"))
                    registry = self._registries.get(key)
                    if registry is None:
                        registry = self._registries[key] = _Registry(_registry_name(
                            owner, method, key[1], owner in self.by_module))
                    registry.members.append(cls)
                    registry.by_name.setdefault(name or cls.name, []).append(cls)
        if not self._registries:
            return None
        owner, _, method = target.rpartition(".")
        verb = next((v for v in LOOKUP_VERBS if method.startswith(v)), None)
        if verb is None:
            return None
        what = registry_kind(method, verb)
        found = self._registries.get((owner, what))
        if found is None and what and owner in self.by_module:
            # a module's plain `register(name)` decorator filling its dict (`DATASETS[name] =
            # cls`) is the registry every lookup function of that module reads
            # (`build_dataset(name)`)
            found = self._registries.get((owner, ""))
        return found

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
                        made = replace(ref, target=cls.qualname)
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
        """An item's identity: its class and its reference up to equality."""
        return item[0].qualname, self.ref_number(item[1])

    def ref_number(self, ref: DatasetRef) -> int:
        """One number per reference up to equality. A reference nests the references its
        arguments may be, shared, not copied (`x = Wrap(x)` repeated keeps every earlier `x`
        as an alternative): hashing it as a tree costs 2**depth, so it is hashed once per
        object from its parts' numbers, and only equal hashes are compared."""
        number = self._ref_numbers.get(id(ref))
        if number is not None:
            return number
        stack = [ref]
        while stack:
            top = stack[-1]
            if id(top) in self._ref_numbers:
                stack.pop()
                continue
            parts = [r for a in top.arg_refs for r in a.refs if id(r) not in self._ref_numbers]
            if parts:
                stack.extend(parts)
                continue
            stack.pop()
            shape = hash((top.kind, top.target, top.handle_args, top.positional, top.keywords,
                          tuple((a.position, a.keyword, a.int_value, a.none,
                                 tuple(self._ref_numbers[id(r)] for r in a.refs))
                                for a in top.arg_refs)))
            bucket = self._equal_refs.setdefault(shape, [])
            found = next((n for other, n in bucket if other is top or other == top), None)
            if found is None:
                found = self._ref_count
                self._ref_count += 1
                bucket.append((top, found))
            self._ref_numbers[id(top)] = found
            self._refs_numbered.append(top)  # alive, so its id is never reused
        return self._ref_numbers[id(ref)]

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

    def calls_of(self, function: str) -> list[tuple[FileFacts, CallSite]]:
        """The call sites of a function or method ("<class>.<method>", the class defining
        it), once the receivers of method calls are solved."""
        self._solve()
        return self._sites_of(function)

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

    @staticmethod
    def _is_arg_for(arg: ArgRef, param: str) -> bool:
        _, index_text, name = param.split("#")
        return arg.keyword == name if arg.keyword else arg.position == int(index_text) >= 0


def _text_for(texts: tuple[tuple[int, str, str], ...], param: str, dicts: bool = False
              ) -> Optional[str]:
    """The string constant a call passes for a parameter "<function>#<index>#<name>";
    `dicts`: also the "type" or "name" of a dict it passes there (`dict(type="X")`)."""
    _, index_text, name = param.split("#")
    index = int(index_text)
    return next((text for position, keyword, text in texts
                 if keyword == name or (position == index >= 0 and (
                     not keyword or (dicts and keyword in ("type", "name"))))), None)


def _registry_name(owner: str, method: str, what: str, module: bool) -> str:
    """A registry as messages name it: `DATASETS` (`@DATASETS.register_module()`),
    `registry.register_builder`, `register_dataset` (a function of a module)."""
    if module:
        return method
    short = owner.rpartition(".")[2]
    return f"{short}.{method}" if what else short
