"""The code the fixer adds, as text templates parsed into libcst nodes."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .cstutil import as_statement, statements, with_leading_lines

WORKER_INIT_NAME = "workersafe_worker_init"
# Set by the generated `__setstate__`: the process that unpickled the dataset (and so opened
# its handles). The worker-init function skips such a dataset: under spawn and forkserver a
# worker unpickles its dataset, under fork it inherits the parent's handles and reopens them.
UNPICKLED_PID = "_unpickled_pid"
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
    record = "" if base == "worker-init" else (
        f"        self.{UNPICKLED_PID} = os.getpid()  # opened here: the worker init skips it\n")
    copy = "super().__getstate__()" if base else "self.__dict__.copy()"
    drop = "".join(f'        state["{n}"] = None\n' for n in reset)
    reopen_lines = "".join(f"        self.{m}()\n" for m in reopen)
    code = "class _:\n"
    if getstate:
        code += (
            "    def __getstate__(self):\n"
            '        """Pickle without the open handles (workersafe): '
            'spawn workers make their own."""\n'
            f"        state = {copy}\n"
            f"{drop}{drop_code(dropped, indent='        ') if dropped else ''}"
            "        return state\n"
        )
    if reopen:
        code += (
            "    def __setstate__(self, state):\n"
            f"        {restore}\n"
            f"{reopen_lines}"
            f"{record}"
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


def worker_init_function(name: str, branches: Sequence[tuple[str, Sequence[str]]]
                         ) -> cst.BaseStatement:
    """`branches`: (class name, open methods to call) for each fixed dataset class."""
    calls = ""
    for class_name, methods in branches:
        calls += f"        if isinstance(dataset, {class_name}):\n"
        calls += "".join(f"            dataset.{m}()\n" for m in methods)
    code = (
        f"def {name}(worker_id, previous=None):\n"
        '    """Reopen each dataset\'s handles in this DataLoader worker '
        '(added by workersafe)."""\n'
        "    # Runs `previous` (an earlier worker_init_fn) first, then looks through\n"
        "    # Subset/ConcatDataset/random_split wrappers for the datasets to reopen.\n"
        "    from torch.utils.data import get_worker_info\n"
        "\n"
        "    if previous is not None:\n"
        "        previous(worker_id)\n"
        "    pending, seen = [get_worker_info().dataset], set()\n"
        "    while pending:\n"
        "        dataset = pending.pop()\n"
        "        if id(dataset) in seen:\n"
        "            continue\n"
        "        seen.add(id(dataset))\n"
        f'        if getattr(dataset, "{UNPICKLED_PID}", None) == os.getpid():\n'
        "            continue  # unpickled in this worker (spawn, forkserver): opened there\n"
        f"{calls}"
        '        pending.extend(getattr(dataset, "datasets", None) or ())\n'
        '        if getattr(dataset, "dataset", None) is not None:\n'
        "            pending.append(dataset.dataset)\n"
    )
    return statement(code)


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
