"""Small libcst helpers for the fixer: positions, name scans, node lookups."""

from __future__ import annotations

import builtins
import difflib
import io
import re
import tokenize
from typing import Iterable, Iterator, Mapping, Optional, Sequence, TypeVar, Union, cast

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .nodememo import NodeMemo

BUILTIN_NAMES = frozenset(dir(builtins)) | {"__file__", "__name__", "__class__"}


class Located:
    """A parsed module with the position of every node."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.positions: dict[cst.CSTNode, CodeRange] = dict(
            MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))

    def lines_of(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.positions[node]
        return pos.start.line, pos.end.line

    def call_at(self, line: int, col: int) -> Optional[cst.Call]:
        for node, pos in self.positions.items():
            if isinstance(node, cst.Call) and (pos.start.line, pos.start.column) == (line, col):
                return node
        return None


def self_attr(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
            and node.value.value == "self":
        return node.attr.value
    return None


def root_self_attr(node: cst.BaseExpression) -> Optional[str]:
    """`self.a.b[c].d(...)` → "a" (the attribute of self the chain starts from)."""
    while True:
        attr = self_attr(node)
        if attr is not None:
            return attr
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return None


def _children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    return tuple(node.children)  # libcst runs a visitor over the node's fields for these


_child_nodes = NodeMemo(_children)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(_child_nodes(current))


def loaded_names(node: cst.CSTNode) -> set[str]:
    """Bare names an expression or statement reads (attribute names and keywords excluded)."""
    return set(_loaded_names(node))


def _names_read(node: cst.CSTNode) -> frozenset[str]:
    skip: set[int] = set()
    names: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, cst.Attribute):
            skip.add(id(sub.attr))
        elif isinstance(sub, cst.Arg) and sub.keyword is not None:
            skip.add(id(sub.keyword))
        elif isinstance(sub, (cst.Lambda,)):
            skip.update(id(p.name) for p in sub.params.params)
    for sub in walk(node):
        if isinstance(sub, cst.Name) and id(sub) not in skip:
            names.add(sub.value)
    return frozenset(names)


_loaded_names = NodeMemo(_names_read)


def bound_names(statements: Iterable[cst.CSTNode]) -> set[str]:
    """Names a block binds at its own level (assignments, imports, defs, loops, with)."""
    bound: set[str] = set()
    for statement in statements:
        bound |= _bound_names(statement)
    return bound


def _names_bound(statement: cst.CSTNode) -> frozenset[str]:
    bound: set[str] = set()
    for node in walk(statement):
        if isinstance(node, (cst.AssignTarget,)):
            bound |= target_names(node.target)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            bound |= target_names(node.target)
        elif isinstance(node, (cst.For, cst.CompFor)):
            bound |= target_names(node.target)
        elif isinstance(node, cst.AsName):
            bound |= target_names(node.name)
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            bound.add(dotted(node.name).split(".", 1)[0])
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            bound.add(node.name.value)
        elif isinstance(node, cst.NamedExpr):
            bound |= target_names(node.target)
    return frozenset(bound)


_bound_names = NodeMemo(_names_bound)


def shadowed_at(module: cst.Module, node: cst.CSTNode, name: str) -> bool:
    """Whether a function (or lambda) around `node` binds `name` itself (a parameter, an
    assignment), so that `name` there is not the module-level binding."""
    for scope in walk(module):
        if isinstance(scope, cst.FunctionDef):
            local = set(function_params(scope)) | bound_names(scope.body.children)
        elif isinstance(scope, cst.Lambda):
            local = {p.name.value for p in scope.params.params}
        else:
            continue
        if name in local and any(sub is node for sub in walk(scope)):
            return True
    return False


def target_names(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List)):
        return {n for e in node.elements for n in target_names(e.value)}
    if isinstance(node, cst.StarredElement):
        return target_names(node.value)
    return set()


def is_none(node: Optional[cst.CSTNode]) -> bool:
    """The expression `None` (not a missing node)."""
    return isinstance(node, cst.Name) and node.value == "None"


def dotted(node: cst.CSTNode) -> str:
    """`a.b.c` → "a.b.c"; "" for anything but a dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def single(statement: cst.BaseStatement) -> Optional[cst.BaseSmallStatement]:
    """The only small statement of a one-statement line, else None."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def small_statements(node: cst.CSTNode) -> list[cst.BaseSmallStatement]:
    """The simple statements inside a statement or block, in source order (not those of
    nested functions and classes)."""
    if isinstance(node, cst.BaseSmallStatement):
        return [node]
    found: list[cst.BaseSmallStatement] = []
    for child in node.children:
        if isinstance(child, (cst.BaseExpression, cst.FunctionDef, cst.ClassDef)):
            continue
        found += small_statements(child)
    return found


def function_params(func: cst.FunctionDef) -> list[str]:
    params = func.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    names = [p.name.value for p in every]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


class RenameSelfAttrs(cst.CSTTransformer):
    """`self.a` → `self.<new>` for the attributes in `mapping`."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute
                        ) -> cst.BaseExpression:
        attr = self_attr(original)
        if attr in self.mapping:
            return updated.with_changes(attr=cst.Name(self.mapping[attr]))
        return updated


class ReplaceNames(cst.CSTTransformer):
    """Bare name loads → an expression (e.g. `token` → `self.token`)."""

    def __init__(self, mapping: Mapping[str, cst.BaseExpression]) -> None:
        self.mapping = mapping
        self.skip: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.skip or original.value not in self.mapping:
            return updated
        return self.mapping[original.value]


_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


class ReplaceNodes(cst.CSTTransformer):
    """Replace nodes by identity (several at once, in one pass)."""

    def __init__(self, replacements: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
        self.replacements = replacements

    def on_leave(self, original_node: _NodeT, updated_node: _NodeT
                 ) -> Union[_NodeT, cst.RemovalSentinel, cst.FlattenSentinel[_NodeT]]:
        replacement = self.replacements.get(original_node)
        if replacement is None:
            return updated_node
        # a replacement may be of another node type (a call for a name): libcst accepts it
        return cast(_NodeT, replacement)


StatementLine = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


def as_statement(node: object) -> StatementLine:
    """A node known to be a whole statement (a class/function body member, a transformed
    statement), narrowed for the type checker."""
    if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        raise TypeError(f"expected a statement, got {type(node).__name__}")
    return node


def statements(nodes: Iterable[object]) -> list[cst.BaseStatement]:
    return [as_statement(node) for node in nodes]


def transform(statement: cst.BaseStatement, transformer: cst.CSTTransformer
              ) -> cst.BaseStatement:
    """`statement.visit(transformer)` for transformers that replace, never remove."""
    return as_statement(statement.visit(transformer))


def leading_lines(statement: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    """The blank and comment lines above a statement."""
    return as_statement(statement).leading_lines


def with_leading_lines(statement: cst.BaseStatement, lines: Sequence[cst.EmptyLine]
                       ) -> StatementLine:
    return as_statement(statement).with_changes(leading_lines=lines)


def module_bindings(module: cst.Module) -> set[str]:
    """Names bound at module level on every path through it: an import under
    `if __name__ == "__main__":` does not count, one in both branches of an if/else or in a
    `try` and each of its handlers (or a handler that raises) does."""
    return _block_bindings(list(module.body))


def _block_bindings(statements: list[cst.BaseStatement]) -> set[str]:
    bound: set[str] = set()
    for statement in statements:
        if isinstance(statement, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)):
            bound |= bound_names([statement]) if not isinstance(
                statement, (cst.FunctionDef, cst.ClassDef)) else {statement.name.value}
        elif isinstance(statement, cst.If):
            if statement.orelse is None:
                continue
            orelse = statement.orelse
            other = _suite_bindings(orelse) if isinstance(orelse, cst.Else) \
                else _block_bindings([orelse])
            bound |= _suite_bindings(statement) & other
        elif isinstance(statement, cst.Try):
            names = _suite_bindings(statement)
            if statement.orelse is not None:
                names |= _suite_bindings(statement.orelse)
            for handler in statement.handlers:
                if not _raises(handler):
                    names &= _suite_bindings(handler)
            bound |= names
        elif isinstance(statement, cst.With):
            bound |= _suite_bindings(statement)
    return bound


def _suite_bindings(node: cst.CSTNode) -> set[str]:
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return _block_bindings(list(body.body))
    if isinstance(body, cst.SimpleStatementSuite):
        return bound_names([cst.SimpleStatementLine(body=list(body.body))])
    return set()


def _raises(handler: cst.ExceptHandler) -> bool:
    body = handler.body
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else []
    return bool(statements) and isinstance(single(statements[-1]), cst.Raise)


# the lines holding only spaces (or nothing) that end a file
_BLANK_TAIL = re.compile(rb"(?:(?<=\n)|(?<=\r)(?!\n))(?:[ \t\f]*(?:\r\n|\n|\r))+\Z")
_BLANK_LINE = re.compile(rb"([ \t\f]*)(\r\n|\n|\r)")


def parse_raw(raw: bytes) -> cst.Module:
    """libcst's parse of a file's bytes, with the blank lines ending the file kept as they
    were: libcst drops the empty lines above a last line holding only spaces (`x = 1\n\n \n`
    prints as `x = 1\n \n`), which a fix anywhere in the file would then seem to change."""
    module = cst.parse_module(raw)
    if module.bytes == raw:
        return module
    tail = _BLANK_TAIL.search(raw)
    if tail is None or tail.start() == 0:
        return module
    code = cst.parse_module(raw[:tail.start()])
    if code.bytes != raw[:tail.start()]:
        return module
    lines = [cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(space.decode("ascii")),
                           newline=cst.Newline(None if end.decode("ascii") == code.default_newline
                                               else end.decode("ascii")))
             for space, end in _BLANK_LINE.findall(tail.group())]
    kept = code.with_changes(footer=[*code.footer, *lines])
    return kept if kept.bytes == raw else module


def with_dominant_newline(module: cst.Module) -> cst.Module:
    """The module with the line ending most of its lines use as the one new lines get. libcst
    takes it from the first line alone: in a file whose first line ends in `\n` and the rest in
    `\r`, an inserted line would end in `\n` right after a `\r` (a `\r\n` the file never had)."""
    code = module.code
    crlf = code.count("\r\n")
    counts = {"\r\n": crlf, "\n": code.count("\n") - crlf, "\r": code.count("\r") - crlf}
    dominant = max(counts, key=lambda ending: counts[ending])
    if counts[dominant] == 0 or dominant == module.default_newline:
        return module
    # the lines that took the old default keep it: only new lines get the dominant one
    kept = module.visit(_ExplicitNewlines(module.default_newline))
    assert isinstance(kept, cst.Module)
    return kept.with_changes(default_newline=dominant)


class _ExplicitNewlines(cst.CSTTransformer):
    """Every line ending that says "the module's default" (libcst's `Newline(None)`) spelled
    out, so that changing the default changes no existing line."""

    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value

    def leave_Newline(self, original_node: cst.Newline, updated_node: cst.Newline) -> cst.Newline:
        return updated_node.with_changes(value=self.value) if updated_node.value is None \
            else updated_node


def realigned(original: cst.BaseStatement, renamed: cst.BaseStatement) -> StatementLine:
    """`renamed` (`original` with names changed: `self.x` → `self._x`, `SESSION` →
    `get_session()`) with every continuation line that was aligned under the first element
    after an opening bracket aligned under it again. libcst keeps the whitespace inside
    brackets as written and indents it with the block (so a hanging indent follows the
    statement to any depth), but a longer or shorter name before a bracket moves the bracket."""
    new = as_statement(renamed)
    old_code, new_code = _standalone_code(original), _standalone_code(new)
    if old_code == new_code or old_code.count("\n") != new_code.count("\n"):
        return new
    try:
        old_tokens, new_tokens = _tokens(old_code), _tokens(new_code)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return new
    old_opens, old_lines = _bracket_layout(old_tokens)
    new_opens, new_lines = _bracket_layout(new_tokens)
    same = difflib.SequenceMatcher(None, [t.string for t in old_tokens],
                                   [t.string for t in new_tokens], autojunk=False)
    token_map = {a + k: b + k for a, b, size in same.get_matching_blocks() for k in range(size)}
    shifts: dict[int, int] = {}
    for row in sorted(old_lines):
        bracket, column = old_lines[row]
        new_bracket = token_map.get(bracket)
        if old_opens[bracket][1] != column or new_bracket is None \
                or new_lines.get(row, (-1, 0))[0] != new_bracket:
            continue
        new_row, new_first = new_opens[new_bracket]
        if new_first is not None:
            shift = new_first + shifts.get(new_row, 0) - new_lines[row][1]
            if shift:
                shifts[row] = shift
    return _shift_lines(new, shifts) if shifts else new


def _standalone_code(statement: cst.BaseStatement) -> str:
    return cst.Module([]).code_for_node(as_statement(statement).with_changes(leading_lines=[]))


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    """The tokens of `code` that are not line breaks, comments or indentation."""
    skipped = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
               tokenize.DEDENT, tokenize.ENDMARKER)
    return [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in skipped]


def _bracket_layout(tokens: list[tokenize.TokenInfo]
                    ) -> tuple[dict[int, tuple[int, Optional[int]]], dict[int, tuple[int, int]]]:
    """Each opening bracket (by token index): (its line, the column of the first element after
    it on that line, or None); and for each line that starts inside brackets: (the innermost
    open bracket's token index, the column the line starts at)."""
    opens: dict[int, tuple[int, Optional[int]]] = {}
    lines: dict[int, tuple[int, int]] = {}
    stack: list[int] = []
    last_row = 0
    for index, token in enumerate(tokens):
        row, column = token.start
        if index - 1 in opens and opens[index - 1] == (row, None):
            opens[index - 1] = (row, column)
        if row > last_row and stack:
            lines[row] = (stack[-1], column)
        last_row = token.end[0]
        if token.type == tokenize.OP and token.string in "([{":
            opens[index] = (row, None)
            stack.append(index)
        elif token.type == tokenize.OP and token.string in ")]}" and stack:
            stack.pop()
    return opens, lines


def _shift_lines(statement: StatementLine, shifts: Mapping[int, int]) -> StatementLine:
    """The statement with the whitespace starting each line in `shifts` (1-based lines of its
    standalone code) widened or narrowed by that many spaces."""
    module = cst.Module([statement.with_changes(leading_lines=[])])  # the same children
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    changes: dict[cst.CSTNode, cst.CSTNode] = {}
    for node, position in positions.items():
        if not isinstance(node, cst.ParenthesizedWhitespace):
            continue
        shift = shifts.get(position.end.line)
        value = node.last_line.value
        if shift is None or "\t" in value or len(value) + shift < 0:
            continue
        changes[node] = node.with_changes(
            last_line=cst.SimpleWhitespace(" " * (len(value) + shift)))
    return as_statement(statement.visit(ReplaceNodes(changes)))


def is_absolute_import(statement: cst.BaseStatement) -> bool:
    """An absolute `import x` / `from x import y` statement (nothing else on its line)."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import) or (isinstance(s, cst.ImportFrom) and not s.relative
                                      and not isinstance(s.names, cst.ImportStar))
        for s in statement.body)
