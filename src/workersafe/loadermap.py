"""A call of a DataLoader subclass seen as the DataLoader call it makes: its arguments bound to
the subclass's `__init__` parameters, then passed as that `__init__` passes them to its base's
(`ClassFacts.base_init`), class by class up to torch's DataLoader. Pure functions of facts."""

from __future__ import annotations

from typing import NamedTuple, Optional

from .facts import ArgRef, BaseInit, ClassFacts

# torch.utils.data.DataLoader's parameters in order (the rest are keyword-only).
DATALOADER_PARAMS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler",
                     "num_workers", "collate_fn", "pin_memory", "drop_last", "timeout",
                     "worker_init_fn", "multiprocessing_context", "generator")


class Passed(NamedTuple):
    """An argument where it is passed now (`arg`: position or keyword there), and the argument
    of the original call it is (None: a constant or default of some `__init__`, or unknown)."""

    arg: ArgRef
    given: Optional[ArgRef]

    @property
    def known(self) -> bool:
        return self.given is not None or self.arg.int_value is not None


def given(args: tuple[ArgRef, ...]) -> list[Passed]:
    return [Passed(a, a) for a in args]


def is_pure_forward(init: Optional[BaseInit], cls: ClassFacts) -> bool:
    """`def __init__(self, *args, **kwargs): super().__init__(*args, **kwargs)`: the base gets
    the call's arguments as they are."""
    return init is not None and not cls.init_params and init.varargs and init.varkw \
        and set(init.args) == {("*0", "*"), ("**", "**")}


def pass_through(args: list[Passed], cls: ClassFacts) -> Optional[list[Passed]]:
    """What `cls.__init__` passes to its base's `__init__` when called with `args`; None when
    that cannot be read (a starred argument, an argument it does not take, `*self.rest`)."""
    init = cls.base_init
    if init is None:
        return None
    params = cls.init_params
    bound: dict[str, Passed] = {}
    extra_positional: list[Passed] = []
    extra_keywords: list[Passed] = []
    for passed in args:
        arg = passed.arg
        if arg.keyword in ("*", "**"):
            return None
        if arg.keyword:
            if arg.keyword in params:
                bound[arg.keyword] = passed
            elif init.varkw:
                extra_keywords.append(passed)
            else:
                return None
        elif 0 <= arg.position < init.positional:
            bound[params[arg.position]] = passed
        elif init.varargs:
            extra_positional.append(passed)
        else:
            return None
    defaults = dict(cls.init_int_defaults)
    out: list[Passed] = []
    starred = False
    for slot, source in init.args:
        if slot.startswith("#") and starred:
            return None  # positions after a `*x` are unknown
        if slot.startswith("*") and slot != "**":
            if source != "*":
                return None
            starred = True
            start = int(slot[1:])
            out.extend(_at(p, start + i, "") for i, p in enumerate(extra_positional))
        elif slot == "**":
            if source != "**":
                return None
            out.extend(extra_keywords)
        else:
            value = _source_value(source, bound, defaults)
            out.append(_at(value, int(slot[1:]), "") if slot.startswith("#")
                       else _at(value, -1, slot))
    return out


def _source_value(source: str, bound: dict[str, Passed], defaults: dict[str, int]) -> Passed:
    if source.startswith("p:"):
        name = source[2:]
        if name in bound:
            return bound[name]
        if name in defaults:
            return Passed(ArgRef(-1, "", (), defaults[name]), None)
    elif source.startswith("="):
        return Passed(ArgRef(-1, "", (), int(source[1:])), None)
    return Passed(ArgRef(-1, ""), None)


def _at(passed: Passed, position: int, keyword: str) -> Passed:
    arg = passed.arg
    return Passed(ArgRef(position, keyword, arg.refs, arg.int_value), passed.given)


def loader_argument(args: list[Passed], name: str) -> Optional[Passed]:
    """What torch's DataLoader gets for its parameter `name` (None: not given)."""
    index = DATALOADER_PARAMS.index(name) if name in DATALOADER_PARAMS else -2
    return next((p for p in args if p.arg.keyword == name
                 or (not p.arg.keyword and p.arg.position == index)), None)
