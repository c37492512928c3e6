"""How a `DataLoader(...)` call is read: its dataset, `num_workers`, `persistent_workers`,
`multiprocessing_context` and `worker_init_fn` — passed by position, by keyword, through
`**kwargs` (a dict literal, or a name bound to one), or through a variable. A call of a
framework function that builds DataLoaders (`DataBunch.create(train_ds, valid_ds,
num_workers=4)`, see `frameworks.FRAMEWORK_LOADERS`) is read as one such loader of all its
datasets, with the framework's default worker count when none is given."""

from __future__ import annotations

import ast
from typing import Optional

from . import syntax
from ..facts import ArgRef, DatasetRef, LoaderCall
from ..frameworks import FrameworkLoader
from ..torchnames import PARTIAL
from .values import (
    Evaluator, bool_value, dict_literal, int_value, is_name, is_none, self_attr,
    string,
)

# DataLoader's parameters in order, as far as a positional argument can reach one we read.
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")


def read_loader(call: ast.Call, ev: Evaluator, function: str = "", star_name: str = "",
                via: str = "", every_arg: tuple[ArgRef, ...] = ()) -> LoaderCall:
    """`function`: the function holding the call (LoaderCall.function); `star_name`, `via`,
    `every_arg`: LoaderCall.star_name, .via and .args."""
    args = loader_arguments(call, ev)
    dataset = args.get("dataset")
    refs = ev.refs_of(dataset) if dataset is not None else []
    workers = _unpacked(call, args.get("num_workers"), ev)
    return _loader_call(call, args, refs, workers,
                        args.get("num_workers"), ev, function=function, star_name=star_name,
                        via=via, every_arg=every_arg)


def read_candidate_loader(call: ast.Call, name: str, ev: Evaluator, function: str = ""
                          ) -> LoaderCall:
    """A call of a project class read as a DataLoader call (`FastDataLoader(ds, num_workers=4)`),
    with every argument kept: the linker keeps it if the class subclasses torch's DataLoader,
    mapping the arguments through its `__init__`."""
    return read_loader(call, ev, function, via=name,
                       every_arg=tuple(ev.arg_refs(call, every=True)))


def read_framework_loader(call: ast.Call, row: FrameworkLoader, ev: Evaluator,
                          function: str = "") -> LoaderCall:
    """A framework call read as a DataLoader of each dataset it is given; the loader keywords
    it passes on (`persistent_workers`, `multiprocessing_context`, `worker_init_fn`) as such."""
    args = loader_arguments(call, ev, row.positional, row.workers,
                            "*" if row.variadic_datasets else "")
    refs = [ref for param, node in args.items()
            if param in row.datasets or param.startswith("*#")
            for ref in ev.refs_of(node)]
    node = args.get(row.workers)
    workers = _unpacked(call, node, ev) if node is not None \
        else (row.default_workers, row.default_text)
    return _loader_call(call, args, refs, workers, node, ev, framework=row.name,
                        function=function)


def _loader_call(call: ast.Call, args: dict[str, ast.expr], refs: list[DatasetRef],
                 workers: tuple[Optional[int], str], workers_node: Optional[ast.expr],
                 ev: Evaluator, framework: str = "", function: str = "", star_name: str = "",
                 via: str = "", every_arg: tuple[ArgRef, ...] = ()) -> LoaderCall:
    persistent_node = args.get("persistent_workers")
    persistent = bool_value(persistent_node) if persistent_node is not None else False
    context = read_context(args.get("multiprocessing_context"), ev)
    init_node = args.get("worker_init_fn")
    worker_inits = worker_init_names(init_node, ev) if init_node is not None else ()
    return LoaderCall(ev.positions.span(call), tuple(refs), workers[0], workers[1], persistent,
                      context, worker_inits, num_workers_param=_param_of(workers_node, ev),
                      num_workers_attr=_attr_of(workers_node, ev), framework=framework,
                      function=function, star_name=star_name, via=via, args=every_arg)


def _param_of(node: Optional[ast.expr], ev: Evaluator) -> str:
    """The function parameter `num_workers=n` passes on (the callers' arguments decide)."""
    node = _unwrap_int(node)
    if type(node) is not syntax.Name:
        return ""
    refs = ev.state.env.refs(node.id) or []
    return next((r.target for r in refs if r.kind == "param"), "")


def _unwrap_int(node: Optional[ast.expr]) -> Optional[ast.expr]:
    """`int(workers)` → `workers`."""
    if type(node) is syntax.Call and is_name(node.func, "int") and len(node.args) == 1:
        return node.args[0]
    return node


def _attr_of(node: Optional[ast.expr], ev: Evaluator) -> str:
    """`num_workers=self.workers` in a method: "<class>.workers" (its constructions decide)."""
    node = _unwrap_int(node)
    attr = self_attr(node) if node is not None else None
    cls = ev.state.current_class()
    return f"{cls.qualname}.{attr}" if attr and cls is not None else ""


def loader_arguments(call: ast.Call, ev: Evaluator,
                     positional: tuple[str, ...] = LOADER_POSITIONAL,
                     workers: str = "num_workers", rest: str = "") -> dict[str, ast.expr]:
    """Parameter name → the expression passed for it (later arguments win); positional
    arguments past `positional` are `<rest>#<index>` when `rest` names them."""
    args: dict[str, ast.expr] = {}
    position = 0
    for arg in ev.args(call):
        if arg.star == "**":
            args.update(_kwargs_of(arg.value, ev, workers))
        elif arg.star:
            args[workers] = arg.value  # *args: unknown, assume anything
            if rest:
                args[f"{rest}#*{position}"] = arg.value
        elif arg.keyword is not None:
            args[arg.keyword] = arg.value
        else:
            if position < len(positional):
                args[positional[position]] = arg.value
            elif rest:
                args[f"{rest}#{position}"] = arg.value
            position += 1
    return args


def _kwargs_of(expr: ast.expr, ev: Evaluator, workers: str) -> dict[str, ast.expr]:
    literal = dict_literal(expr)
    if literal is not None:
        return literal
    if type(expr) is syntax.Name:
        bound = ev.state.env.kwargs(expr.id)
        if bound is not None:
            return bound
    return {workers: expr}  # unknown **kwargs: may set num_workers


def _unpacked(call: ast.Call, node: Optional[ast.expr], ev: Evaluator
              ) -> tuple[Optional[int], str]:
    """`read_num_workers`, its text spelled as unpacked when the workers come from the call's
    own `*args`/`**kwargs` (`**cfg["train"]`, not `cfg["train"]`)."""
    value, text = read_num_workers(node, ev)
    star = next((arg.star for arg in ev.args(call) if arg.star and arg.value is node), "")
    return value, f"{star}{text}"


def read_num_workers(node: Optional[ast.expr], ev: Evaluator) -> tuple[Optional[int], str]:
    """(the constant number of workers or None if unknown, the argument's source text)."""
    if node is None:
        return 0, "0"
    value = int_value(node)
    if value is None and type(node) is syntax.Name:
        _, value = ev.state.env.int_value(node.id)
    return value, ev.positions.segment(node)


def read_context(node: Optional[ast.expr], ev: Evaluator) -> str:
    """The start method: "fork", "spawn", "forkserver", "" (platform default), "?" unknown."""
    if node is None or is_none(node):
        return ""
    literal = string(node)
    if literal is not None:
        return literal
    direct = ev.context_of_call(node)
    if direct:
        return direct
    if type(node) is syntax.Name:
        bound = ev.state.env.context(node.id)
        if bound:
            return bound
    return "?"


def worker_init_names(node: ast.expr, ev: Evaluator) -> tuple[str, ...]:
    """`fn`, or `partial(fn, ..., previous=other)` → every function that will run."""
    if type(node) is syntax.Call and ev.state.q(node.func) in PARTIAL:
        args = ev.args(node)
        if args:
            names = worker_init_names(args[0].value, ev)
            for arg in args[1:]:  # chained functions: partial(fn, previous=seed)
                names += worker_init_names(arg.value, ev)
            return names
    name = ev.state.q(node)
    return (name,) if name else ()
