"""The code the fixer adds, as text templates parsed into libcst nodes."""

from __future__ import annotations

import textwrap
from typing import Optional, Sequence

import libcst as cst

from .cstutil import as_statement, with_leading_lines
from .style import max_line

# The one opener of a class fixed with worker-init (all its handles), and the one worker init
# of a script building DataLoaders, which calls the opener of every dataset it finds.
OPENER_NAME = "open_handles"
WORKER_INIT_NAME = "open_worker_handles"
WORKER_INIT_DOC = "Reopen each dataset's handles in this worker (wrapped ones too)."
# what earlier versions wrote (still recognised, and extended)
OLD_WORKER_INIT_DOCS = (
    "Reopen each dataset's handles in this worker (through Subset/ConcatDataset).",
)
BLANK = cst.EmptyLine(indent=False)


def statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def docstring(text: str, indent: int = 8) -> str:
    """`text` as a docstring's contents at `indent` columns (a method's), wrapped to the
    run's line length (`style.max_line`) when one line would be too long."""
    if indent + len(text) + 6 <= max_line():
        return text
    lines = textwrap.wrap(text, width=max(max_line() - indent - 3, 20))
    return ("\n" + " " * indent).join(lines)


def _returning(returns: str) -> str:
    """` -> <returns>` (an annotated file: `fix/annotate.py`), or nothing."""
    return f" -> {returns}" if returns else ""


def open_method(name: str, body: Sequence[cst.BaseStatement],
                doc: str, returns: str = "") -> cst.FunctionDef:
    """A method `name` running `body`; `returns`: its return annotation ("" none)."""
    template = statement(f'def {name}(self){_returning(returns)}:\n'
                         f'    """{docstring(doc)}"""\n    pass\n')
    assert isinstance(template, cst.FunctionDef)
    first = template.body.body[0]
    return template.with_changes(body=template.body.with_changes(body=[first, *body]))


def drop_code(dropped: Sequence[str], state: str = "state", indent: str = "") -> str:
    """The statements that leave `dropped` out of the dict `state`."""
    if len(dropped) == 1:
        return f'{indent}{state}.pop("{dropped[0]}", None)\n'
    names = ", ".join(f'"{n}"' for n in dropped)
    return f"{indent}for name in ({names}):\n{indent}    {state}.pop(name, None)\n"


def getstate_method(dropped: Sequence[str], base: bool = False, reset: Sequence[str] = (),
                    opened: Sequence[tuple[str, Sequence[str]]] = (), returns: str = ""
                    ) -> cst.FunctionDef:
    """`__getstate__`: the instance's `__dict__` (its base class's state when `base`: a base
    fixed in the same run has its own) without `dropped`; `reset` are pickled as None instead
    (code tests them for None); each `(marker, names)` of `opened` leaves `names` out only
    when `marker` is set (the parent opened them; else `__init__` set them some other way, a
    None to test, which the pickle keeps); `returns`: its return annotation ("" none).
    Nothing reopens on unpickling: the worker init
    (worker-init) or the first use (lazy) opens the handles in each process."""
    source = "super().__getstate__()" if base else "self.__dict__"
    names = ", ".join(f'"{n}"' for n in dropped)
    test = f'k != "{dropped[0]}"' if len(dropped) == 1 else f"k not in ({names})"
    returned = [f"return {{k: v for k, v in {source}.items() if {test}}}",
                f"return {{k: v for k, v in {source}.items()\n        if {test}}}"]
    body = next((r for r in returned if not reset and not opened and dropped
                 and max(len(line) for line in r.splitlines()) <= max_line() - 8), "")
    if not body:  # state built statement by statement
        body = "".join([f"state = {source if base else 'self.__dict__.copy()'}\n",
                        *(f'state["{n}"] = None\n' for n in reset),
                        drop_code(dropped) if dropped else "",
                        *(f'if "{marker}" in state:  # opened by the parent\n'
                          + drop_code(kept, indent="    ") for marker, kept in opened),
                        "return state"])
    header = f"def __getstate__(self){_returning(returns)}:"
    comment = "  # pickled without its handles"
    if 4 + len(header) + len(comment) > max_line():  # a method: 4 columns of indent
        header = f"{comment.strip()}\n{header}"  # the comment above, in an annotated class
        comment = ""
    code = f"{header}{comment}\n" + "".join(
        f"    {line}\n" for line in body.splitlines())
    method = statement(code)
    assert isinstance(method, cst.FunctionDef)
    return method.with_changes(leading_lines=[BLANK, *method.leading_lines])


def lazy_property(attr: str, private: str, pid_attr: str, opener: str,
                  body: Optional[Sequence[cst.BaseStatement]] = None, returns: str = ""
                  ) -> cst.BaseStatement:
    """The property opening `attr` once per process: by calling `opener` (which opens every
    attribute of its group), or by running `body` itself. `returns`: its return annotation
    ("" none)."""
    property_doc = f"This process's {attr}, opened on first use."
    code = (
        "class _:\n"
        "    @property\n"
        f"    def {attr}(self){_returning(returns)}:\n"
        f'        """{docstring(property_doc)}"""\n'
        f'        if self.__dict__.get("{pid_attr}") != os.getpid():\n'
        f"            self.{opener}()\n"
        f"            self.{pid_attr} = os.getpid()\n"
        f"        return self.{private}\n"
    )
    cls = cst.parse_module(code).body[0]
    assert isinstance(cls, cst.ClassDef)
    prop = cls.body.body[0]
    assert isinstance(prop, cst.FunctionDef)
    if body is not None:
        guard = prop.body.body[1]
        assert isinstance(guard, cst.If)
        guard = guard.with_changes(body=guard.body.with_changes(
            body=[*body, guard.body.body[1]]))
        prop = prop.with_changes(body=prop.body.with_changes(
            body=[prop.body.body[0], guard, *prop.body.body[2:]]))
    return with_leading_lines(as_statement(prop), [BLANK])


# What the worker init reads from torch.utils.data (imported inside it unless the module
# imports them already).
WORKER_INIT_NEEDS = ("Dataset", "get_worker_info")


def worker_init_function(name: str, imported: Sequence[str] = (), chained: bool = False,
                         previous: str = "") -> cst.BaseStatement:
    """The generic worker init: walks the worker's dataset through wrappers (`dataset`,
    `datasets` and any Dataset held in an attribute) and calls each one's `open_handles()`,
    after `previous` (a worker_init_fn the loader already had). A forked worker reopens what
    it inherited; a spawned one opens what `__getstate__` left out. `imported`: the names of
    WORKER_INIT_NEEDS the module imports from torch.utils.data itself. `chained`: some loader
    had a worker_init_fn, which runs first (`partial(<name>, previous=<it>)`). `previous`:
    in an annotated script (`fix/annotate.py`), the annotation of `previous` (any text when
    not `chained`); the whole function is then annotated and asserts it runs in a worker
    (get_worker_info() is Optional). "": unannotated."""
    needed = [n for n in WORKER_INIT_NEEDS if n not in imported]
    imports = f"    from torch.utils.data import {', '.join(needed)}\n" if needed else ""
    params = "worker_id: int" if previous else "worker_id"
    if chained:
        params += f", previous: {previous} = None" if previous else ", previous=None"
    if previous:
        info = ("    info = get_worker_info()\n"
                "    assert info is not None  # called in a DataLoader worker\n"
                "    found = [info.dataset]\n")
    else:
        info = "    found = [get_worker_info().dataset]\n"
    header = f"def {name}({params}){_returning('None' if previous else '')}:\n"
    if len(header) > max_line() + 1:  # the parameters on a line of their own
        header = f"def {name}(\n    {params}\n){_returning('None' if previous else '')}:\n"
    code = (
        header
        + f'    """{WORKER_INIT_DOC}"""\n'
        f"{imports}"
        + ("    if previous is not None:\n        previous(worker_id)\n" if chained else "")
        + info
        + "    for dataset in found:  # grows with the datasets each one wraps\n"
        f'        if hasattr(dataset, "{OPENER_NAME}"):\n'
        f"            dataset.{OPENER_NAME}()\n"
        '        for value in getattr(dataset, "__dict__", {}).values():\n'
        "            for d in value if isinstance(value, (list, tuple)) else [value]:\n"
        "                if isinstance(d, Dataset) and all(d is not f for f in found):\n"
        "                    found.append(d)\n"
    )
    return statement(code)


def is_worker_init(node: cst.CSTNode) -> bool:
    """A worker init this fixer wrote (its docstring says so), in this run or an earlier one."""
    if not isinstance(node, cst.FunctionDef) or not isinstance(node.body, cst.IndentedBlock):
        return False
    first = node.body.body[0] if node.body.body else None
    if not isinstance(first, cst.SimpleStatementLine) or not first.body:
        return False
    doc = first.body[0]
    return isinstance(doc, cst.Expr) and isinstance(doc.value, cst.SimpleString) \
        and doc.value.evaluated_value in (WORKER_INIT_DOC, *OLD_WORKER_INIT_DOCS)


def chains_previous(node: cst.FunctionDef) -> bool:
    """The worker init takes `previous` (a worker_init_fn to run first)."""
    return any(p.name.value == "previous" for p in node.params.params)


def module_drop(private: str) -> cst.BaseStatement:
    """The accessor's first statement for a handle a library opens once per process (lmdb,
    h5py): a forked worker drops (never closes) the parent's before opening its own."""
    return cst.parse_statement(f"{private} = None  # one open per process: drop the old first\n")


def module_accessor(function: str, private: str, pid_name: str, handle: str,
                    body: Sequence[cst.BaseStatement], returns: str = "",
                    private_type: str = "", pid_type: str = "") -> list[cst.BaseStatement]:
    """The globals keeping the handle and its process, and the accessor making it once per
    process. `returns`, `private_type`, `pid_type`: in an annotated module, the accessor's
    return type and the globals' types (the accessor then also tests the handle for None,
    which tells the checker it returns one)."""
    accessor_doc = f"This process's {handle}, created on first use (workersafe)."
    test = f"{pid_name} != os.getpid()"
    if returns and private_type != "Any":
        test = f"{private} is None or {test}"
    code = (
        f"{private}{f': {private_type}' if returns else ''} = None\n"
        f"{pid_name}{f': {pid_type}' if returns else ''} = None\n"
        "\n"
        "\n"
        f"def {function}(){_returning(returns)}:\n"
        f'    """{docstring(accessor_doc, 4)}"""\n'
        f"    global {private}, {pid_name}\n"
        f"    if {test}:\n"
        "        pass\n"
        f"        {pid_name} = os.getpid()\n"
        f"    return {private}\n"
    )
    module = cst.parse_module(code)
    first, second, func = module.body
    assert isinstance(func, cst.FunctionDef)
    guard = func.body.body[2]
    assert isinstance(guard, cst.If)
    new_guard = guard.with_changes(body=guard.body.with_changes(
        body=[*body, guard.body.body[1]]))
    func = func.with_changes(body=func.body.with_changes(
        body=[*func.body.body[:2], new_guard, *func.body.body[3:]]))
    return [first, second, func]


def fork_cache_clear(function: str) -> cst.BaseStatement:
    """Each forked process empties `function`'s cache as it starts (the cached handles it
    inherited are dropped there, never closed), on the platforms that fork."""
    test = 'if hasattr(os, "register_at_fork"):'
    comment = "  # each forked worker opens its own (workersafe)"
    if len(test) + len(comment) > max_line():
        comment = ""
    return statement(f"{test}{comment}\n"
                     f"    os.register_at_fork(after_in_child={function}.cache_clear)\n")
