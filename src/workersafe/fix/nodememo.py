"""Facts about libcst nodes computed once per node while a rewrite is planned.

libcst nodes are immutable and compared by identity, so what a node's subtree holds (its
children, the names it binds or reads, a module's imports) never changes while the node lives.
Planning asks the same questions of the same nodes many times (every method, every finding,
the whole module for its names); inside `memo_scope()` each answer is computed once. The
memos hold their nodes, so an answer is never given for another node that reused an id, and
everything is dropped when the outermost scope ends (a long-lived language server keeps no
trees). Outside a scope the answers are computed afresh each time."""

from __future__ import annotations

import contextlib
from typing import Callable, Generic, Iterator, TypeVar

import libcst as cst

_T = TypeVar("_T")
_N = TypeVar("_N", bound=cst.CSTNode)

_clears: list[Callable[[], None]] = []  # every memo's `values.clear`
_depth = 0


class NodeMemo(Generic[_T, _N]):
    """`compute(node)`, once per node inside `memo_scope()`. The answer is shared: callers
    must not change it (memoise immutable values, or copy)."""

    def __init__(self, compute: Callable[[_N], _T]) -> None:
        self.compute = compute
        self.values: dict[int, tuple[_N, _T]] = {}
        _clears.append(self.values.clear)

    def __call__(self, node: _N) -> _T:
        if not _depth:
            return self.compute(node)
        entry = self.values.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        value = self.compute(node)
        self.values[id(node)] = (node, value)
        return value


@contextlib.contextmanager
def memo_scope() -> Iterator[None]:
    """Remember node facts until the outermost scope ends (scopes nest)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            for clear in _clears:
                clear()
