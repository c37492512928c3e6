"""DataLoader calls as linked: torch's and frameworks' (a bare name from a star import
once it resolves), calls of the project's DataLoader subclasses read through their
`__init__`s (`loadermap`), and `num_workers` kept by a class made constant from what every
construction passes."""

from __future__ import annotations

from typing import Iterator, Optional

from ..facts import ArgRef, ClassFacts, FileFacts, LoaderCall
from ..loadermap import Passed, given, is_pure_forward, loader_argument, pass_through
from ..records import replace
from ..torchnames import LOADERS
from .flow import ValueFlow
from .names import _MAX_RESOLVE_DEPTH


class _AsGiven:
    """The arguments of a DataLoader subclass's call reach torch's DataLoader unchanged."""


_AS_GIVEN = _AsGiven()


class Loaders(ValueFlow):
    def __post_init__(self) -> None:
        super().__post_init__()
        self._file_loaders: dict[str, list[LoaderCall]] = {}

    def loaders(self) -> Iterator[tuple[FileFacts, LoaderCall]]:
        for facts in self.files:
            for loader in self.file_loaders(facts):
                yield facts, loader

    def is_star_loader(self, name: str, facts: FileFacts) -> bool:
        """Whether the bare `name` a star import of `facts` brings in is torch's DataLoader
        (`from utils import *`, utils/__init__.py `from .data import *`, `from torch.utils.data
        import DataLoader` there)."""
        return any(self._through_star(star, name) in LOADERS for star in facts.star_imports)

    def file_loaders(self, facts: FileFacts) -> list[LoaderCall]:
        """The file's DataLoader calls: torch's and framework ones, and calls of the project's
        DataLoader subclasses (`FastDataLoader(ds, num_workers=4)`) read through them."""
        found = self._file_loaders.get(facts.path)
        if found is None:
            # a bare name from a star import of a project module counts once it resolves
            found = [loader for loader in facts.loaders
                     if not loader.star_name or self.is_star_loader(loader.star_name, facts)]
            for candidate in facts.loader_candidates:
                loader = self._subclass_loader(candidate, facts)
                if loader is not None:
                    found.append(loader)
            self._file_loaders[facts.path] = found
        return found

    def _subclass_loader(self, call: LoaderCall, facts: FileFacts) -> Optional[LoaderCall]:
        """The DataLoader a call of a DataLoader subclass makes; None when the class is none,
        or when what its `__init__` passes on cannot be read (kept latent, not guessed)."""
        cls = self.classes.get(self.resolve(call.via, facts))
        if cls is None or not self.is_loader_class(cls):
            return None
        mapped = self._through_inits(cls, given(call.args))
        if mapped is None:
            return None
        as_read = replace(call, via=cls.qualname, args=())
        if isinstance(mapped, _AsGiven):
            return as_read
        dataset = loader_argument(mapped, "dataset")
        if dataset is None or dataset.given is None:
            return None
        workers = loader_argument(mapped, "num_workers")
        if workers is None:
            count: tuple[Optional[int], str] = (0, "0")
        elif workers.given is not None and workers.given.keyword == "num_workers":
            count = (call.num_workers, call.num_workers_text)
        elif workers.arg.int_value is not None:
            count = (workers.arg.int_value, str(workers.arg.int_value))
        elif workers.given is not None:
            count = (None, "?")
        else:
            return None
        kept = {name for name in ("num_workers", "persistent_workers", "multiprocessing_context",
                                  "worker_init_fn")
                if (p := loader_argument(mapped, name)) is not None and p.given is not None
                and p.given.keyword == name}
        probe = self._through_inits(cls, given((*call.args, ArgRef(-1, "worker_init_fn"))))
        reached = loader_argument(probe, "worker_init_fn") \
            if isinstance(probe, list) else None
        return replace(
            as_read, datasets=dataset.given.refs, num_workers=count[0], num_workers_text=count[1],
            persistent=call.persistent if "persistent_workers" in kept else False,
            context=call.context if "multiprocessing_context" in kept else "",
            worker_inits=call.worker_inits if "worker_init_fn" in kept else (),
            num_workers_param=call.num_workers_param if "num_workers" in kept else "",
            num_workers_attr=call.num_workers_attr if "num_workers" in kept else "",
            wires_init=probe is _AS_GIVEN or (reached is not None and reached.given is not None
                                              and reached.given.keyword == "worker_init_fn"))

    def _through_inits(self, cls: ClassFacts, args: list[Passed]
                       ) -> Optional[list[Passed] | _AsGiven]:
        """The arguments torch's DataLoader gets when `cls` is called with `args`, following
        each `__init__` on the way up; `_AS_GIVEN` when every one passes them on unchanged."""
        current: Optional[ClassFacts] = cls
        mapped: Optional[list[Passed]] = None
        for _ in range(_MAX_RESOLVE_DEPTH):
            if current is None:
                return None
            if current.method("__init__") is not None \
                    and not is_pure_forward(current.base_init, current):
                mapped = pass_through(args if mapped is None else mapped, current)
                if mapped is None:
                    return None
            home = self.class_file[current.qualname]
            if any(self.resolve(b, home) in LOADERS for b in current.bases):
                return _AS_GIVEN if mapped is None else mapped
            current = next((b for b in self.base_classes(current) if self.is_loader_class(b)),
                           None)
        return None

    def _kept_workers(self, loader: LoaderCall) -> LoaderCall:
        """The loader with `num_workers=self.<attr>` made constant when every construction
        of the class gives that `__init__` parameter a constant (passed, or its default):
        the largest; unchanged (workers) when one does not."""
        owner_name, _, attr = loader.num_workers_attr.rpartition(".")
        owner = self.classes.get(owner_name)
        kept = self._kept_param(owner, attr) if owner is not None else None
        if loader.num_workers is not None or kept is None:
            return loader
        init_owner, param = kept
        default = dict(init_owner.init_int_defaults).get(param.rpartition("#")[2])
        sites = self.calls_of(f"{init_owner.qualname}.__init__")
        counts = []
        for _, site in sites:
            passed = [a for a in site.args if self._is_arg_for(a, param)]
            counts.append(passed[0].int_value if passed else default)
        if not counts or None in counts:
            return loader
        most = max(c for c in counts if c is not None)
        return replace(loader, num_workers=most, num_workers_text=str(most))
