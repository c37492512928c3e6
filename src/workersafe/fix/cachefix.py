"""Process-global handle caches (WS102/WS103 "cache" plans): a container in a class body or a
module (`zip_bank = dict()`) that a function fills with handles (`zip_bank[path] =
zipfile.ZipFile(path)`). Filled while the parent builds the dataset, forked workers inherit
and share those handles. The fix keys the container by the process: the filling function
reads this process's own cache, `ZipReader.zip_bank.setdefault(os.getpid(), dict())`, so a
worker (forked, spawned or from a forkserver) fills its own and never touches the parent's.

Only the filling function may use the container (it now maps a process id to a cache):
any other use, here or in another module, is refused."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from .cstutil import ReplaceNodes, bound_names, dotted, single, statements, walk
from .plan import Unfixable
from .style import max_line

# Empty containers a cache starts as (the per-process cache starts the same); the outer
# container must have `setdefault` (else it becomes a dict).
_EMPTY_CALLS = frozenset({"dict", "list", "set", "OrderedDict", "collections.OrderedDict",
                          "defaultdict", "collections.defaultdict"})
_DICT_LIKE = frozenset({"dict", "OrderedDict", "collections.OrderedDict", "defaultdict",
                        "collections.defaultdict"})
COMMENT = "# one cache per process"
KEYED_COMMENT = "# a cache per process id"
DROP_COMMENT = "# one open per process: drop the parent's first"


@dataclass
class CacheFix:
    """The edits keying one container by the process."""

    scope: Union[cst.Module, cst.ClassDef]  # the module, or the class (as rewritten so far)
    replacements: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)  # in `scope`


def plan_cache_fix(module: cst.Module, scope: Union[cst.Module, cst.ClassDef],
                   container: str, filler: str, drop_first: bool = False) -> CacheFix:
    """The edits in `scope` (the module, or the class owning the container) that key
    `container` by the process in the function `filler`. `drop_first`: the library opens a
    file once per process (lmdb): a new process first drops what it inherited (the parent's
    entry), before it opens its own. Raises Unfixable with the reason."""
    owner = scope.name.value if isinstance(scope, cst.ClassDef) else ""
    label = f"{owner}.{container}" if owner else container
    body = statements(scope.body.body if isinstance(scope, cst.ClassDef) else scope.body)
    definition = next((s for s in body if _binds(s, container)), None)
    if definition is None:
        raise Unfixable(f"{label} is not bound by a plain `{container} = dict()` in the "
                        f"{'class body' if owner else 'module'}: key it by os.getpid() by hand")
    value = _value(definition)
    if not _empty(value):
        raise Unfixable(f"{label} does not start empty: key it by os.getpid() by hand")
    function = next((s for s in body if isinstance(s, cst.FunctionDef)
                     and s.name.value == filler), None)
    if function is None:
        raise Unfixable(f"{filler}(), which fills {label}, is not defined next to it: key "
                        "the cache by os.getpid() by hand")
    if not isinstance(function.body, cst.IndentedBlock):
        raise Unfixable(f"{filler}() is written on one line: key {label} by os.getpid() by "
                        "hand")
    spellings = _spellings(function, owner)
    refs = [n for n in walk(function) if _is_ref(n, container, spellings)]
    if not refs:
        raise Unfixable(f"{filler}() fills {label} through another name: key it by "
                        "os.getpid() by hand")
    others = [s for s in module.body
              if not (isinstance(s, cst.ClassDef) and s.name.value == owner)] if owner else []
    # a subclass names it through `self` and `cls` too
    subclasses = [s for s in others if isinstance(s, cst.ClassDef) and any(
        dotted(b.value).rpartition(".")[2] == owner for b in s.bases)]
    # the class's methods name it through the class, `self` or `cls`; other code through
    # the class
    inside = {owner, "self", "cls"} | {p for s in body if isinstance(s, cst.FunctionDef)
                                       for p in _spellings(s, owner)} if owner else set()
    outside = [n for tree, names in ((scope, inside), *((o, {owner, "self", "cls"}
                                                         if o in subclasses else {owner})
                                                        for o in others))
               for n in walk(tree) if _mentions(n, container, names)
               and not _within(n, function) and not _within(n, definition)]
    if outside:
        raise Unfixable(f"{label} is also used outside {filler}(): keyed by the process it "
                        "would change for them too, key it by os.getpid() by hand")
    if _rebinds(function, container, owner):
        raise Unfixable(f"{filler}() rebinds {label}: key it by os.getpid() by hand")
    code = cst.Module([]).code_for_node
    spelled = code(refs[0])
    if any(code(r) != spelled for r in refs):
        raise Unfixable(f"{filler}() names {label} in more than one way: key it by "
                        "os.getpid() by hand")
    keyed = cst.parse_expression(f"{spelled}.setdefault(os.getpid(), {code(value)})")
    original = function
    fix = CacheFix(scope)
    inner = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    start = 1 if inner and _is_docstring(inner[0]) else 0
    # `zip_bank = ZipReader.zip_bank` in the function's body, its one use of the container:
    # that local reads this process's cache instead
    line = next((n for n in walk(function) if len(refs) == 1 and isinstance(
        n, cst.SimpleStatementLine) and _alias(n) is not None and _value(n) is refs[0]), None)
    if line is not None:
        small = line.body[0]
        assert isinstance(small, cst.Assign)
        new_line = _commented(line.with_changes(body=[small.with_changes(value=keyed)]),
                              (4 if owner else 0) + 4 * _depth(function, line))
        changed = function.visit(ReplaceNodes({line: new_line}))
        assert isinstance(changed, cst.FunctionDef)
        function = changed
        new_body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) \
            else []
    else:
        local = _local_name(container, function, bool(owner))
        new_line = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(local))],
                                                       keyed)])
        swapped = function.visit(ReplaceNodes({r: cst.Name(local) for r in refs}))
        assert isinstance(swapped, cst.FunctionDef)
        rest = list(swapped.body.body) if isinstance(swapped.body, cst.IndentedBlock) else []
        new_body = [*rest[:start], _commented(new_line, 8 if owner else 4), *rest[start:]]
        function = swapped
    if drop_first:  # before any use of the container: at the top
        new_body[start:start] = _drop_inherited(spelled, 8 if owner else 4)
    assert isinstance(function.body, cst.IndentedBlock)
    new_function = function.with_changes(body=function.body.with_changes(body=new_body))
    fix.replacements[original] = new_function
    new_definition = _keyed_annotation(definition)
    if not _dict_like(value):  # a list or set cannot be keyed: the container becomes a dict
        new_definition = _with_value(new_definition, cst.Dict([]))
    fix.replacements[definition] = _commented(new_definition, 4 if owner else 0,
                                              KEYED_COMMENT)
    return fix


def apply_cache_fix(fix: CacheFix) -> Union[cst.Module, cst.ClassDef]:
    new = fix.scope.visit(ReplaceNodes(fix.replacements))
    assert isinstance(new, (cst.Module, cst.ClassDef))
    return new


def _drop_inherited(spelled: str, indent: int) -> list[cst.BaseStatement]:
    """`if os.getpid() not in <container>: <container>.clear()`: a new process drops the
    entries it inherited (never closing them in the parent), so that it may open the same
    file again."""
    test = f"if os.getpid() not in {spelled}:"
    comment = f"  {DROP_COMMENT}" if indent + len(test) + 2 + len(DROP_COMMENT) <= max_line() \
        else ""
    return [cst.parse_statement(f"{test}{comment}\n    {spelled}.clear()\n")]


def cache_lines(statement: cst.BaseStatement, container: str, filler: str) -> bool:
    """The statement is the container's definition or the filling function (in the original
    tree, whose lines the fix may change)."""
    return _binds(statement, container) or (isinstance(statement, cst.FunctionDef)
                                            and statement.name.value == filler)


def _binds(statement: cst.BaseStatement, name: str) -> bool:
    small = single(statement)
    if isinstance(small, cst.Assign):
        return len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and small.targets[0].target.value == name
    return isinstance(small, cst.AnnAssign) and small.value is not None \
        and isinstance(small.target, cst.Name) and small.target.value == name


def _value(statement: cst.BaseStatement) -> cst.BaseExpression:
    small = single(statement)
    assert isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None
    return small.value


def _keyed_annotation(statement: cst.BaseStatement) -> cst.BaseStatement:
    """An annotated container (`_envs: dict[str, Environment] = {}`) maps process ids to what
    it held: `dict[int, dict[str, Environment]]` (`Dict[int, ...]` when it is spelled with
    typing's `Dict`; inside a `ClassVar[...]` when it is one)."""
    small = single(statement)
    if not isinstance(small, cst.AnnAssign):
        return statement
    code = cst.Module([]).code_for_node
    annotation = small.annotation.annotation
    wrapper = ""
    if isinstance(annotation, cst.Subscript) and dotted(annotation.value).rpartition(".")[2] \
            == "ClassVar" and len(annotation.slice) == 1:
        element = annotation.slice[0].slice
        if isinstance(element, cst.Index):
            wrapper, annotation = code(annotation.value), element.value
    inner = code(annotation)
    outer = "Dict" if re.match(r"(typing\.)?Dict\b", inner) else "dict"
    if outer == "Dict" and inner.startswith("typing."):
        outer = "typing.Dict"
    keyed = f"{outer}[int, {inner}]"
    text = f"{wrapper}[{keyed}]" if wrapper else keyed
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement.with_changes(body=[small.with_changes(
        annotation=cst.Annotation(cst.parse_expression(text)))])


def _with_value(statement: cst.BaseStatement, value: cst.BaseExpression
                ) -> cst.BaseStatement:
    assert isinstance(statement, cst.SimpleStatementLine)
    small = statement.body[0]
    assert isinstance(small, (cst.Assign, cst.AnnAssign))
    return statement.with_changes(body=[small.with_changes(value=value)])


def _empty(value: cst.BaseExpression) -> bool:
    """`{}`, `[]`, `dict()`, `set()`, `OrderedDict()`, `defaultdict(list)`."""
    if isinstance(value, (cst.Dict, cst.List)):
        return not value.elements
    if not isinstance(value, cst.Call) or dotted(value.func) not in _EMPTY_CALLS:
        return False
    if not value.args:
        return True
    return dotted(value.func).endswith("defaultdict") and len(value.args) == 1 \
        and value.args[0].keyword is None and not value.args[0].star \
        and isinstance(value.args[0].value, cst.Name)


def _dict_like(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Dict) or (isinstance(value, cst.Call)
                                           and dotted(value.func) in _DICT_LIKE)


def _spellings(function: cst.FunctionDef, owner: str) -> set[str]:
    """How the function names the class owning the container: its name, and `cls` / `self`
    (the first parameter of a classmethod or plain method)."""
    if not owner:
        return set()
    out = {owner}
    decorators = {dotted(d.decorator) for d in function.decorators}
    params = function.params.params
    if "staticmethod" not in decorators and params:
        out.add(params[0].name.value)
    return out


def _is_ref(node: cst.CSTNode, container: str, spellings: set[str]) -> bool:
    if not spellings:
        return isinstance(node, cst.Name) and node.value == container
    return isinstance(node, cst.Attribute) and node.attr.value == container \
        and isinstance(node.value, cst.Name) and node.value.value in spellings


def _mentions(node: cst.CSTNode, container: str, names: set[str]) -> bool:
    """A use of the container: `<one of names>.zip_bank` for a class attribute, the bare
    name for a module variable (`names` empty)."""
    if names - {""}:
        return _is_ref(node, container, names)
    return isinstance(node, cst.Name) and node.value == container


def _within(node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return any(n is node for n in walk(outer))


def _rebinds(function: cst.FunctionDef, container: str, owner: str) -> bool:
    for node in walk(function):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(
                n.name.value == container for n in node.names):
            return True
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            target = node.target
            if owner and isinstance(target, cst.Attribute) and target.attr.value == container:
                return True
            if not owner and isinstance(target, cst.Name) and target.value == container:
                return True
        if isinstance(node, cst.Del) and _mentions(node.target, container, {owner}):
            return True
    if not owner:  # a parameter or local of the same name
        params = {p.name.value for p in function.params.params}
        return container in params
    return False


def _alias(statement: cst.BaseStatement) -> Optional[str]:
    """`zip_bank = ZipReader.zip_bank`: the local's name."""
    small = single(statement)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 \
            and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _depth(outer: cst.CSTNode, node: cst.CSTNode) -> int:
    """How many indented blocks of `outer` hold `node`."""
    for child in outer.children:
        if child is node:
            return 1 if isinstance(outer, cst.IndentedBlock) else 0
        if _within(node, child):
            return _depth(child, node) + (1 if isinstance(outer, cst.IndentedBlock) else 0)
    return 0


def _is_docstring(statement: cst.BaseStatement) -> bool:
    small = single(statement)
    return isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                    cst.ConcatenatedString))


def _local_name(container: str, function: cst.FunctionDef, attribute: bool) -> str:
    """The local the function reads its process's cache through: the container's name,
    lower case, without leading underscores (`_ARCHIVES` → `archives`); never a module
    container's own name (`attribute` False), which the local would hide."""
    base = re.sub(r"\W", "", container.lstrip("_").lower()) or "cache"
    attrs = {id(n.attr) for n in walk(function) if isinstance(n, cst.Attribute)}
    taken = bound_names([function]) | {n.value for n in walk(function)
                                       if isinstance(n, cst.Name) and id(n) not in attrs}
    for name in (base, f"{base}_here", f"this_process_{base}"):
        if name not in taken and (attribute or name != container):
            return name
    raise Unfixable(f"{function.name.value}() already uses the names a local for its "
                    f"process's {container} would take: key it by os.getpid() by hand")


def _commented(line: cst.BaseStatement, indent: int, comment: str = COMMENT
               ) -> cst.BaseStatement:
    """`line` with `comment` at its end, when it has none and the line stays short enough."""
    if not isinstance(line, cst.SimpleStatementLine) or line.trailing_whitespace.comment:
        return line
    code = cst.Module([]).code_for_node(line.with_changes(leading_lines=[])).splitlines()
    if len(code) != 1 or indent + len(code[0]) + 2 + len(comment) > max_line():
        return line
    return line.with_changes(trailing_whitespace=cst.TrailingWhitespace(
        whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment)))
