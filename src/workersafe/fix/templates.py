"""The code the fixer adds, as text templates parsed into libcst nodes."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .cstutil import as_statement, statements, with_leading_lines

# The one opener of a class fixed with worker-init (all its handles), and the one worker init
# of a script building DataLoaders, which calls the opener of every dataset it finds.
OPENER_NAME = "open_handles"
WORKER_INIT_NAME = "open_worker_handles"
WORKER_INIT_DOC = "Reopen each dataset's handles in this worker (through Subset/ConcatDataset)."
# Set by the opener: the process its handles were opened in. The worker init skips a dataset
# opened in its own process (under spawn and forkserver `__setstate__` opened it there).
HANDLES_PID = "_handles_pid"
BLANK = cst.EmptyLine(indent=False)


def statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def open_method(name: str, body: Sequence[cst.BaseStatement],
                docstring: str) -> cst.FunctionDef:
    template = statement(f'def {name}(self):\n    """{docstring}"""\n    pass\n')
    assert isinstance(template, cst.FunctionDef)
    doc = template.body.body[0]
    return template.with_changes(body=template.body.with_changes(body=[doc, *body]))


def drop_code(dropped: Sequence[str], state: str = "state", indent: str = "") -> str:
    """The statements that leave `dropped` out of the dict `state`."""
    if len(dropped) == 1:
        return f'{indent}{state}.pop("{dropped[0]}", None)\n'
    names = ", ".join(f'"{n}"' for n in dropped)
    return f"{indent}for name in ({names}):\n{indent}    {state}.pop(name, None)\n"


def getstate_methods(dropped: Sequence[str], reopen: Sequence[str], base: str = "",
                     getstate: bool = True, reset: Sequence[str] = ()
                     ) -> list[cst.BaseStatement]:
    """`__getstate__` (unless not `getstate`: the class has its own, extended instead) and
    `__setstate__` when `reopen`. `base`: the strategy a base class was fixed with in the same
    run ("" when none): then its methods are extended (one chain) and the base's
    `__setstate__` records the unpickling process. `reset`: attributes pickled as None instead
    of left out (code tests them for None)."""
    restore = ("super().__setstate__(state)" if base == "worker-init"
               else "self.__dict__.update(state)")
    copy = "super().__getstate__()" if base else "self.__dict__.copy()"
    drop = "".join(f'        state["{n}"] = None\n' for n in reset)
    reopen_lines = "".join(f"        self.{m}()\n" for m in reopen)
    code = "class _:\n"
    kept = (f'k != "{dropped[0]}"' if len(dropped) == 1
            else "k not in (" + ", ".join(f'"{n}"' for n in dropped) + ")")
    one_line = f"        return {{k: v for k, v in self.__dict__.items() if {kept}}}\n"
    if getstate and not base and not reset and dropped and len(one_line) <= 90:
        code += (
            "    def __getstate__(self):  # pickled without its handles\n"
            f"{one_line}"
        )
    elif getstate:
        code += (
            "    def __getstate__(self):\n"
            '        """Pickle without the handles: spawn workers open their own."""\n'
            f"        state = {copy}\n"
            f"{drop}{drop_code(dropped, indent='        ') if dropped else ''}"
            "        return state\n"
        )
    if reopen:
        code += (
            "    def __setstate__(self, state):  # spawn and forkserver workers reopen here\n"
            f"        {restore}\n"
            f"{reopen_lines}"
        )
    if code == "class _:\n":
        return []
    cls = cst.parse_module(code).body[0]
    assert isinstance(cls, cst.ClassDef)
    return [with_leading_lines(member, [BLANK]) for member in statements(cls.body.body)]


def lazy_property(attr: str, private: str, pid_attr: str, opener: str, handle: str
                  ) -> cst.BaseStatement:
    code = (
        "class _:\n"
        "    @property\n"
        f"    def {attr}(self):\n"
        f'        """This process\'s {handle}, opened on first use (workersafe)."""\n'
        f'        if self.__dict__.get("{pid_attr}") != os.getpid():\n'
        f"            self.{opener}()\n"
        f"            self.{pid_attr} = os.getpid()\n"
        f"        return self.{private}\n"
    )
    cls = cst.parse_module(code).body[0]
    assert isinstance(cls, cst.ClassDef)
    return with_leading_lines(as_statement(cls.body.body[0]), [BLANK])


def worker_init_function(name: str) -> cst.BaseStatement:
    """The generic worker init: walks the worker's dataset through wrappers (`dataset`,
    `datasets` and any Dataset held in an attribute) and calls each one's `open_handles()`,
    after `previous` (a worker_init_fn the loader already had)."""
    code = (
        f"def {name}(worker_id, previous=None):\n"
        f'    """{WORKER_INIT_DOC}"""\n'
        "    import os\n"
        "\n"
        "    from torch.utils.data import Dataset, get_worker_info\n"
        "\n"
        "    if previous is not None:\n"
        "        previous(worker_id)\n"
        "    datasets = [get_worker_info().dataset]\n"
        "    for dataset in datasets:  # grows with the datasets each one wraps\n"
        f'        opened_in = getattr(dataset, "{HANDLES_PID}", None)\n'
        f'        if hasattr(dataset, "{OPENER_NAME}") and opened_in != os.getpid():\n'
        f"            dataset.{OPENER_NAME}()\n"
        '        for value in getattr(dataset, "__dict__", {}).values():\n'
        "            for inner in value if isinstance(value, (list, tuple)) else [value]:\n"
        "                if isinstance(inner, Dataset) and all(inner is not d for d in datasets):\n"
        "                    datasets.append(inner)\n"
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
        and doc.value.evaluated_value == WORKER_INIT_DOC


def module_accessor(function: str, private: str, pid_name: str, handle: str,
                    body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    code = (
        f"{private} = None\n"
        f"{pid_name} = None\n"
        "\n"
        "\n"
        f"def {function}():\n"
        f'    """This process\'s {handle}, created on first use (workersafe)."""\n'
        f"    global {private}, {pid_name}\n"
        f"    if {pid_name} != os.getpid():\n"
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
