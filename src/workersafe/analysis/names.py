"""Qualified names through a file's own imports, on Python's `ast`."""

from __future__ import annotations

import ast
from typing import Iterable, Optional

from . import syntax
from ..discovery import module_of_import
from ..torchnames import TORCH_DATA, TORCH_STAR_NAMES


def dotted(node: ast.AST) -> Optional[str]:
    """`a.b.c` → "a.b.c"; `Dataset[int]` → "Dataset"; anything else → None."""
    kind = type(node)
    if kind is syntax.Name:  # (most callees: `f`, `mod.f`)
        return node.id  # type: ignore[attr-defined, no-any-return]
    if kind is syntax.Attribute and type(node.value) is syntax.Name:  # type: ignore[attr-defined]
        return f"{node.value.id}.{node.attr}"  # type: ignore[attr-defined]
    parts: list[str] = []
    while type(node) is syntax.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is syntax.Subscript:
        return dotted(node.value) if not parts else None
    if type(node) is not syntax.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def annotated_class(node: ast.expr) -> Optional[ast.expr]:
    """The one class an annotation names, unwrapped: `Reader`, `"Reader"`,
    `Optional[Reader]`, `Union[Reader, None]`, `Reader | None`; None for anything else (a
    container of readers, a union of two classes)."""
    if type(node) is syntax.Constant and type(node.value) is str:
        try:
            parsed = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
        return annotated_class(parsed) if type(parsed) is not syntax.Constant else None
    if type(node) is syntax.BinOp and type(node.op) is syntax.BitOr:
        return _one_class([node.left, node.right])
    if isinstance(node, syntax.Subscript):
        wrapper = dotted(node.value)
        last = wrapper.rpartition(".")[2] if wrapper else ""
        if last == "Optional":
            return annotated_class(node.slice)
        if last == "Union":
            parts = node.slice.elts if type(node.slice) is syntax.Tuple else [node.slice]
            return _one_class(parts)
        return None
    return node if type(node) in (syntax.Name, syntax.Attribute) else None


def _one_class(parts: list[ast.expr]) -> Optional[ast.expr]:
    """The one part that is not None, unwrapped."""
    rest = [p for p in parts if not (type(p) is syntax.Constant and p.value is None)]
    return annotated_class(rest[0]) if len(rest) == 1 else None


class Scope:
    """Local name → qualified name, with a parent (function-local imports shadow module ones)."""

    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self.parent = parent
        self.names: dict[str, str] = {}
        self.star_modules: list[str] = []

    def bind(self, local: str, qualified: str) -> None:
        self.names[local] = qualified

    def lookup(self, local: str) -> Optional[str]:
        scope: Optional[Scope] = self
        while scope is not None:
            if local in scope.names:
                return scope.names[local]
            scope = scope.parent
        return None

    def all_star_modules(self) -> Iterable[str]:
        scope: Optional[Scope] = self
        while scope is not None:
            yield from scope.star_modules
            scope = scope.parent


def bind_import(scope: Scope, node: ast.Import) -> None:
    for alias in node.names:
        if alias.asname is not None:
            scope.bind(alias.asname, alias.name)
        else:
            head = alias.name.split(".", 1)[0]
            scope.bind(head, head)


def bind_import_from(scope: Scope, node: ast.ImportFrom, module: str, is_package: bool,
                     libraries: frozenset[str] = frozenset()) -> None:
    """`libraries`: handle libraries' top-level modules; one imported by its own name from a
    module of the project (`from .compat import lmdb`, a relative import; not `from . import
    lmdb`, a submodule) is that library re-exported (the `try: import lmdb` shim)."""
    source = module_of_import(module, is_package, node.level or 0, node.module or "")
    for alias in node.names:
        if alias.name == "*":
            scope.star_modules.append(source)
            continue
        local = alias.asname or alias.name
        if node.level and node.module and alias.name in libraries:
            scope.bind(local, alias.name)
            continue
        scope.bind(local, f"{source}.{alias.name}" if source else alias.name)


def imported_by_call(node: ast.AST) -> Optional[str]:
    """The module an import call evaluates to: `importlib.import_module("h5py")`,
    `optional_import("lmdb")` (a callee whose name contains "import", given the module name
    as a string, as the prefilter reads it), `[0]` of one (MONAI's `lmdb, _ =` pair), the
    `name=` it picks (`optional_import("h5py", name="File")`); `__import__("a.b")` is `a`."""
    if type(node) is syntax.Subscript and type(node.slice) is syntax.Constant \
            and node.slice.value == 0:
        node = node.value
    if type(node) is not syntax.Call or not node.args:
        return None
    first = node.args[0]
    if type(first) is not syntax.Constant or type(first.value) is not str:
        return None  # (most calls: before the callee's name is built)
    callee = dotted(node.func)
    last = callee.rpartition(".")[2] if callee else ""
    if "import" not in last:
        return None
    module = first.value
    if not all(part.isidentifier() for part in module.split(".")):
        return None
    if last == "__import__":
        return module.partition(".")[0]
    picked = next((k.value for k in node.keywords if k.arg == "name"), None)
    if type(picked) is syntax.Constant and type(picked.value) is str \
            and picked.value.isidentifier():
        return f"{module}.{picked.value}"
    return module


def qualify(name: str, scope: Scope, known: frozenset[str]) -> str:
    """Qualify a dotted name. Unresolvable heads stay bare (the linker may resolve them)."""
    head, _, rest = name.partition(".")
    target = scope.lookup(head)
    if target is None:
        for star in scope.all_star_modules():
            candidate = f"{star}.{head}"
            if candidate in known or (star == TORCH_DATA and head in TORCH_STAR_NAMES):
                target = candidate
                break
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target
