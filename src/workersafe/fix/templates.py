"""The code the fixer adds, as text templates parsed into libcst nodes."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .cstutil import as_statement, statements, with_leading_lines

WORKER_INIT_NAME = "workersafe_worker_init"
BLANK = cst.EmptyLine(indent=False)


def statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def open_method(name: str, handle: str, body: Sequence[cst.BaseStatement],
                docstring: str) -> cst.FunctionDef:
    template = statement(f'def {name}(self):\n    """{docstring}"""\n    pass\n')
    assert isinstance(template, cst.FunctionDef)
    doc = template.body.body[0]
    return template.with_changes(body=template.body.with_changes(body=[doc, *body]))


def getstate_methods(dropped: Sequence[str], reopen: Sequence[str], base: str = "",
                     reset: Sequence[str] = ()) -> list[cst.BaseStatement]:
    """`__getstate__` (and `__setstate__` when `reopen`). `base`: the strategy a base class
    was fixed with in the same run ("" when none): then its methods are extended (one chain).
    `reset`: attributes pickled as None instead of left out (code tests them for None)."""
    restore = ("super().__setstate__(state)" if base == "worker-init"
               else "self.__dict__.update(state)")
    copy = "super().__getstate__()" if base else "self.__dict__.copy()"
    drop = "".join(f'        state["{n}"] = None\n' for n in reset)
    if len(dropped) == 1:
        drop += f'        state.pop("{dropped[0]}", None)\n'
    elif dropped:
        names = ", ".join(f'"{n}"' for n in dropped)
        drop += f"        for name in ({names}):\n            state.pop(name, None)\n"
    reopen_lines = "".join(f"        self.{m}()\n" for m in reopen)
    setstate = (
        "\n"
        "    def __setstate__(self, state):\n"
        f"        {restore}\n"
        f"{reopen_lines}"
    ) if reopen else ""
    code = (
        "class _:\n"
        "    def __getstate__(self):\n"
        '        """Pickle without the open handles (workersafe): '
        'spawn workers make their own."""\n'
        f"        state = {copy}\n"
        f"{drop}"
        "        return state\n"
        f"{setstate}"
    )
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
