"""Which expressions of one module create a handle, derive an object from one (a cursor, a
transaction, a child dataset, a stub) or only configure one, read from the registry. The
planner uses it to choose what moves into the opener; verification uses it to check, on the
rewritten code, that nothing of the kind was left behind."""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

import libcst as cst

from ..registry import DERIVED_CALLABLE_SUFFIXES, GENERIC_CONFIG_CALLS, GENERIC_DERIVED_METHODS
from ..registry import (
    CONFIGURING_SQL, ELEMENT_KEEPERS, PAIR_KEEPERS, HandleType, Registry,
)
from .cstutil import dotted, root_self_attr, self_attr, single, walk
from .nodememo import NodeMemo


class HandleNames:
    """Handle creation and derivation in one module, through the module's imports."""

    def __init__(self, module: cst.Module, registry: Registry,
                 handles: Iterable[str] = (),
                 factories: Optional[Mapping[str, str]] = None) -> None:
        """`handles`: the constructors whose derived objects to follow (`session.get(...)`
        is a response, `h5file.get(...)` a dataset); all of the registry's when empty.
        `factories`: calls of the project's code that make a handle, as the module spells
        them (`self._open_env`, `FeatureReader`) → the handle's constructor (a holder counts
        as the handle it keeps; see fix/factories.py)."""
        self.registry = registry
        self.factories = dict(factories or {})
        self.imports = dict(module_imports(module))
        types = [t for t in (registry.lookup(h) for h in handles) if t is not None] \
            or list(registry.types.values())
        derived, configuring = set(GENERIC_DERIVED_METHODS), set(GENERIC_CONFIG_CALLS)
        sql: set[str] = set()
        listing: set[str] = set()
        pairing: set[str] = set()
        nodes: set[str] = set()
        for htype in types:
            nodes.update(htype.node_attrs)
            derived.update(htype.derived_methods)
            listing.update(htype.iterable_methods)
            pairing.update(htype.pair_methods)
            configuring.update(htype.config_calls)
            sql.update(htype.sql_config_calls)
        self.derived_methods = frozenset(derived)
        # methods listing objects that each keep the handle (`f.values()`, `c.list_blobs()`)
        self.iterable_methods = frozenset(listing)
        # methods listing (name, object) pairs, each object keeping the handle (`f.items()`)
        self.pair_methods = frozenset(pairing)
        # a builtin keeping what it is given → the methods whose listings it then keeps
        # (a list of pairs keeps their objects too: `sorted(f.items())`)
        self._keepers = {
            **dict.fromkeys(ELEMENT_KEEPERS, self.iterable_methods | self.pair_methods),
            **dict.fromkeys(PAIR_KEEPERS, self.pair_methods)}
        # methods that only configure the handle they are called on (`session.mount(...)`)
        self.config_calls = frozenset(configuring)
        self.sql_config_calls = frozenset(sql)  # `conn.execute("PRAGMA ...")`
        self.subscript_types = any(t.derived_subscript for t in types)
        self.node_attrs = frozenset(nodes)  # `f.root`: its children keep the file

    def qualified(self, func: cst.BaseExpression) -> str:
        return in_full(dotted(func), self.imports)

    def creation(self, node: cst.CSTNode) -> Optional[HandleType]:
        """The handle type a call creates (`sqlite3.connect(p)`), else None."""
        if isinstance(node, cst.Call):
            made = self.factories.get(dotted(node.func))
            htype = self.registry.lookup(made or self.qualified(node.func))
            if htype is not None and not made and htype.selector_values \
                    and not htype.selects(_selector(node, htype.selector_keyword)):
                return None  # `fsspec.filesystem("file")`: not the handle (registry.py)
            return htype
        return None

    def derives(self, expr: cst.BaseExpression, attrs: set[str], names: set[str]) -> bool:
        """Is `expr` a tracked handle, or an object derived from one (kept alive by it)?
        `attrs`: tracked attributes of self; `names`: tracked locals."""
        if self.creation(expr) is not None:
            return True
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            loop = expr.for_in
            if isinstance(expr.elt, cst.Name) and isinstance(loop.target, cst.Name) \
                    and expr.elt.value == loop.target.value and loop.inner_for_in is None \
                    and self._listing(loop.iter, self._keepers["list"], attrs, names):
                return True  # `[g for g in f.values()]`: the objects the handle lists
            return self.derives(expr.elt, attrs, names)
        if isinstance(expr, cst.DictComp):
            loop, target = expr.for_in, expr.for_in.target
            if isinstance(expr.value, cst.Name) and isinstance(target, cst.Tuple) \
                    and len(target.elements) == 2 and loop.inner_for_in is None:
                name, obj = (e.value for e in target.elements)
                if isinstance(name, cst.Name) and isinstance(obj, cst.Name) \
                        and obj.value == expr.value.value != name.value \
                        and self._listing(loop.iter, self.pair_methods, attrs, names):
                    return True  # `{k: g for k, g in f.items()}`: the objects the handle lists
            return self.derives(expr.value, attrs, names)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)) and expr.elements:
            return any(self.derives(e.value, attrs, names) for e in expr.elements)
        if isinstance(expr, cst.Dict) and expr.elements:
            return any(isinstance(e, cst.DictElement) and self.derives(e.value, attrs, names)
                       for e in expr.elements)
        if isinstance(expr, cst.BooleanOperation):  # `session or requests.Session()`
            return self.derives(expr.left, attrs, names) or self.derives(expr.right, attrs, names)
        if isinstance(expr, cst.IfExp):
            return self.derives(expr.body, attrs, names) \
                or self.derives(expr.orelse, attrs, names)
        if isinstance(expr, cst.Name):
            return expr.value in names
        attr = self_attr(expr)
        if attr is not None:
            return attr in attrs
        if isinstance(expr, cst.Call):
            func = expr.func
            kept = self._keepers.get(dotted(func))
            if kept is not None and len(expr.args) == 1 and not expr.args[0].star \
                    and expr.args[0].keyword is None \
                    and self._listing(expr.args[0].value, kept, attrs, names):
                return True  # `list(f.values())`, `dict(f.items())`: the same objects
            if isinstance(func, cst.Attribute) and func.attr.value in self.derived_methods:
                return self.derives(func.value, attrs, names)
            callee = dotted(func).rsplit(".", 1)[-1]
            if callee.endswith(DERIVED_CALLABLE_SUFFIXES):
                return any(self.derives(arg.value, attrs, names) for arg in expr.args)
            return False
        if isinstance(expr, cst.Attribute) and self.node_attrs:
            # `f.root`, and a child named on it (`f.root.images`): nodes keeping the file
            return self._root(expr, attrs, names) or not expr.attr.value.startswith("_") \
                and self._root(expr.value, attrs, names)
        if isinstance(expr, cst.Subscript) and self._root(expr.value, attrs, names):
            return all(isinstance(e.slice, cst.Index) and _is_key(e.slice.value)
                       for e in expr.slice)  # `f.root[name]`: a member of the root node
        if isinstance(expr, cst.Subscript) and self.subscript_types:
            return all(isinstance(e.slice, cst.Index) and _is_key(e.slice.value)
                       for e in expr.slice) and self.derives(expr.value, attrs, names)
        return False

    def _root(self, expr: cst.BaseExpression, attrs: set[str], names: set[str]) -> bool:
        """`f.root` of a tracked handle (a registry row's `node_attrs`)."""
        return isinstance(expr, cst.Attribute) and expr.attr.value in self.node_attrs \
            and self.derives(expr.value, attrs, names)

    def _listing(self, expr: cst.BaseExpression, methods: frozenset[str], attrs: set[str],
                 names: set[str]) -> bool:
        """A call of one of `methods` on a tracked handle: its iterable methods
        (`f.values()`, `c.list_blobs(b)`) or its pair methods (`f.items()`)."""
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in methods and self.derives(expr.func.value, attrs, names)

    def configures(self, statement: cst.BaseStatement, attrs: set[str], names: set[str]
                   ) -> bool:
        """`s.headers.update(...)`, `s.mount(...)`, `s.auth = ...`, `conn.execute("PRAGMA
        ...")`, or an `if` whose branches only do that, for a tracked `s`."""
        if isinstance(statement, cst.If):
            branches: list[cst.BaseSuite] = [statement.body]
            orelse = statement.orelse
            while orelse is not None:
                branches.append(orelse.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
            return all(isinstance(b, cst.IndentedBlock) and b.body
                       and all(self.configures(s, attrs, names) for s in b.body)
                       for b in branches)
        small = single(statement)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if not (isinstance(func, cst.Attribute) and _rooted(func.value, attrs, names)):
                return False
            method = func.attr.value
            if method in self.sql_config_calls:
                return _configuring_sql(small.value)
            return method in self.config_calls
        if isinstance(small, cst.Assign):
            return all(_rooted(t.target, attrs, names) and not _is_tracked(t.target)
                       for t in small.targets)
        if isinstance(small, cst.AugAssign):
            return _rooted(small.target, attrs, names) and not _is_tracked(small.target)
        return False


def _is_tracked(target: cst.BaseExpression) -> bool:
    """A bare tracked name or `self.x` (rebinding it is not configuration)."""
    return isinstance(target, cst.Name) or self_attr(target) is not None


def _rooted(expr: cst.BaseExpression, attrs: set[str], names: set[str]) -> bool:
    """`self.a.b[c].d` with a tracked `a`, or `n.b[c]` with a tracked local `n`."""
    attr = root_self_attr(expr)
    if attr is not None:
        return attr in attrs
    node = expr
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return isinstance(node, cst.Name) and node.value in names


def _configuring_sql(call: cst.Call) -> bool:
    if not call.args or not isinstance(call.args[0].value, cst.SimpleString):
        return False
    text = call.args[0].value.evaluated_value
    text = text.decode("latin-1") if isinstance(text, bytes) else text
    return (" ".join(text.split()) + " ").upper().startswith(CONFIGURING_SQL)


def import_map(module: cst.CSTNode, top_level: bool = False) -> dict[str, str]:
    """Local name → qualified name for every import in the module (functions included: a
    handle module imported inside `__init__` is still that module), or in any node; only the
    module's own statements if `top_level` (the names its annotations can use)."""
    found: dict[str, str] = {}
    nodes = [small for s in module.body if isinstance(s, cst.SimpleStatementLine)
             for small in s.body] if top_level and isinstance(module, cst.Module) \
        else walk(module)
    for node in nodes:
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found[alias.asname.name.value] = name
                else:
                    head = name.split(".", 1)[0]
                    found.setdefault(head, head)
        elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None \
                and not isinstance(node.names, cst.ImportStar):
            base = dotted(node.module)
            for alias in node.names:
                name = dotted(alias.name)
                local = alias.asname.name.value if alias.asname is not None and isinstance(
                    alias.asname.name, cst.Name) else name
                found[local] = f"{base}.{name}"
    return found


module_imports = NodeMemo(import_map)  # one walk per module, however many findings it has


def in_full(name: str, imports: Mapping[str, str]) -> str:
    """A dotted `name` (`choice`, `rnd.random`, `gopen`) as the module's imports (`import_map`)
    spell it in full (`random.choice`, `random.random`, `gzip.open`)."""
    head, dot, rest = name.partition(".")
    return imports[head] + dot + rest if head in imports else name


# Expressions that compute a member's name (`f[name]`, `f[self.opt["mode"]]`,
# `f[key.format(i)]`, `f[f"{split}/x"]`, either of two: `f["a" if c else "b"]`), as
# analysis/values.py reads them; a number, a slice
# or an ellipsis selects data instead (`[0]`, `[:]`, `[...]`).
_KEY_EXPRESSIONS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Name,
                    cst.Attribute, cst.Call, cst.BinaryOperation)


def _is_key(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Subscript):
        return not any(isinstance(e.slice, cst.Slice) for e in node.slice)
    if isinstance(node, cst.IfExp):  # `f["train" if train else "test"]`
        return _is_key(node.body) and _is_key(node.orelse)
    return isinstance(node, _KEY_EXPRESSIONS)


def _selector(call: cst.Call, keyword: str) -> Optional[str]:
    """The string literal a call gives first, or by `keyword` (a registry row's selecting
    argument, as `analysis/values.py` reads it); None when it gives none."""
    args = list(call.args)
    if args and args[0].keyword is None:
        first = args[0]
        value = first.value.evaluated_value \
            if not first.star and isinstance(first.value, cst.SimpleString) else None
        return value if isinstance(value, str) else None
    for arg in args:
        if arg.keyword is not None and arg.keyword.value == keyword \
                and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            return value if isinstance(value, str) else None
    return None
