"""Frameworks that hand out torch's own data classes under their names (data, not code).

`from fastai.vision import *` then `class Tiles(Dataset)`: that `Dataset` is
`torch.utils.data.Dataset`, re-exported by the framework (fastai v1 `fastai/imports/torch.py`,
fastai v2 `fastai/torch_imports.py`). The linker reads this table for a base class named
bare in a file whose star imports name no module of the checked project that defines it.
A configured `dataset-bases` entry is matched the same way (a star import of its module, or of
a package above it), see `Project.is_torch_dataset`.

Framework classes that merely *subclass* torch's Dataset (torchvision's `VisionDataset`,
PyG's `Dataset`) are not here: they count when configured in `dataset-bases`.

`FRAMEWORK_LOADERS` lists framework functions that build DataLoaders with workers from the
datasets given to them (fastai's `DataBunch.create`, `DataLoaders.from_dsets`, `TfmdDL`):
the analysis reads a call of one as a DataLoader of each of its datasets."""

from __future__ import annotations

from typing import Iterable, Optional

from .records import record, replace
from .torchnames import TORCH_DATA

_BASES = {n: f"{TORCH_DATA}.{n}" for n in ("Dataset", "IterableDataset")}

# star-import source, whether every module below it re-exports the names too, bare name →
# the torch class it is
STAR_REEXPORTS: tuple[tuple[str, bool, dict[str, str]], ...] = (
    (TORCH_DATA, False, _BASES),
    (f"{TORCH_DATA}.dataset", False, _BASES),
    ("fastai", True, _BASES),  # v1: Dataset (fastai.imports.torch); v2: IterableDataset
)


def star_reexport(star_module: str, name: str) -> str:
    """The torch name `from <star_module> import *` binds to `name`, or ""."""
    for source, below, names in STAR_REEXPORTS:
        if star_module == source or (below and star_module.startswith(source + ".")):
            found = names.get(name)
            if found:
                return found
    return ""


# Base-class names of framework classes whose DataLoader-building methods the framework itself
# calls (Lightning's `LightningModule.train_dataloader`, `LightningDataModule`): the fixer cannot
# wire a worker_init_fn into such loaders reliably, and says so.
LOADER_OWNER_BASE_WORDS: tuple[str, ...] = ("Lightning",)


@record(frozen=True)
class FrameworkLoader:
    """A framework callable that builds DataLoaders with workers from the datasets passed to it:
    a call of one is read as a `DataLoader(dataset, num_workers=...)` of each of them."""

    module: str  # where users import it from: `module.attr` qualified, `attr` after a star
    attr: str  # `DataBunch.create` (a classmethod), `TfmdDL` (a class)
    positional: tuple[str, ...]  # its parameters in order, as far as a dataset or workers reach
    datasets: tuple[str, ...]  # the parameters that take a dataset (by position or keyword)
    variadic_datasets: bool = False  # every positional argument is a dataset (`*datasets`)
    workers: str = "num_workers"  # the keyword giving the worker count
    default_workers: Optional[int] = 0  # when not given; None: the CPU count (non-zero)
    default_text: str = "0"  # that default as the framework spells it (for the message)
    # `from <module> import *` that binds `attr` bare, and whether modules below it do too
    star_sources: tuple[tuple[str, bool], ...] = ()
    # the identifier whose mention makes a file a candidate (the prefilter); "": the class
    # name (`DataBunch`). Not a word prose uses ("DataLoaders" in a docstring).
    word: str = ""
    # its keywords past `positional` reach torch's DataLoader as given (`**kwargs`): a
    # `worker_init_fn=` the fixer adds is torch's (PyG's loaders); else the framework may
    # drop or replace it, and the fixer does not wire one
    passes_keywords: bool = False

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attr}"

    @property
    def prefilter_word(self) -> str:
        return self.word or self.attr.partition(".")[0]


# fastai v1 (`fastai.basic_data`): `DataBunch.create(train_ds, valid_ds, test_ds=None, path='.',
# bs=64, val_bs=None, num_workers=defaults.cpus, ...)` builds one torch DataLoader per dataset.
_V1_CREATE = FrameworkLoader(
    module="fastai.basic_data", attr="DataBunch.create",
    positional=("train_ds", "valid_ds", "test_ds", "path", "bs", "val_bs", "num_workers"),
    datasets=("train_ds", "valid_ds", "test_ds"), default_workers=None,
    default_text="defaults.cpus", star_sources=(("fastai", True),))
# fastai v2 (`fastai.data.core`, `fastai.data.load`), bound bare by `from fastai.<app>.all
# import *` (and `fastai.basics`, `fastai.data.all`).
_V2_STARS = (("fastai.data", True), ("fastai.basics", False), ("fastai.vision.all", False),
             ("fastai.text.all", False), ("fastai.tabular.all", False),
             ("fastai.collab", False), ("fastai.medical.imaging", False))
_V2_TFMD = FrameworkLoader(  # `TfmdDL(dataset, bs=64, shuffle=False, num_workers=None, ...)`
    module="fastai.data.core", attr="TfmdDL",
    positional=("dataset", "bs", "shuffle", "num_workers"),
    datasets=("dataset",), default_workers=None, default_text="min(16, defaults.cpus)",
    star_sources=_V2_STARS)

# PyG (`torch_geometric.loader`): `DataLoader(dataset, batch_size=1, shuffle=False,
# follow_batch=None, exclude_keys=None, **kwargs)` subclasses torch's DataLoader and passes
# `**kwargs` (`num_workers`, `worker_init_fn`, ...) on to it; `DenseDataLoader(dataset,
# batch_size=1, shuffle=False, **kwargs)` the same; `torch_geometric.data.DataLoader` and
# `.DenseDataLoader` are the same classes (deprecated aliases of PyG 2)
_PYG = FrameworkLoader(module="torch_geometric.loader", attr="DataLoader",
                       positional=("dataset", "batch_size", "shuffle"), datasets=("dataset",),
                       passes_keywords=True)

# One row per callable; a new framework function is a new row.
FRAMEWORK_LOADERS: tuple[FrameworkLoader, ...] = (
    _V1_CREATE,
    replace(_V1_CREATE, module="fastai.vision", attr="ImageDataBunch.create"),
    replace(_V1_CREATE, module="fastai.vision.data", attr="ImageDataBunch.create"),
    _V2_TFMD,
    # `DataLoaders.from_dsets(*ds, path='.', bs=64, device=None, dl_type=TfmdDL, **kwargs)`:
    # one TfmdDL per dataset, `num_workers` passed on to it
    replace(_V2_TFMD, attr="DataLoaders.from_dsets", positional=(), datasets=(),
            variadic_datasets=True, word="from_dsets"),
    # `DataLoader(dataset=None, bs=None, num_workers=0, ...)`: fastai's own loader
    FrameworkLoader(module="fastai.data.load", attr="DataLoader",
                    positional=("dataset", "bs", "num_workers"), datasets=("dataset",),
                    star_sources=_V2_STARS),
    _PYG,
    replace(_PYG, module="torch_geometric.loader.dataloader"),
    replace(_PYG, module="torch_geometric.data"),
    replace(_PYG, attr="DenseDataLoader"),
    replace(_PYG, module="torch_geometric.loader.dense_data_loader", attr="DenseDataLoader"),
    replace(_PYG, module="torch_geometric.data", attr="DenseDataLoader"),
)

_BY_NAME = {row.name: row for row in FRAMEWORK_LOADERS}
# The last part of each row's name: a call named otherwise matches no row (most calls).
LOADER_LAST_PARTS = frozenset(row.attr.rpartition(".")[2] for row in FRAMEWORK_LOADERS)


def framework_loader(name: str, star_modules: Iterable[str]) -> Optional[FrameworkLoader]:
    """The row for a call of `name`, qualified through the file's imports (`fastai.basic_data.
    DataBunch.create`, or through a module re-exporting it: `fastai.vision.ImageDataBunch.
    create`), or left bare where only a star import can bind it; None when no row matches."""
    row = _BY_NAME.get(name)
    if row is not None or name.rpartition(".")[2] not in LOADER_LAST_PARTS:
        return row
    for row in FRAMEWORK_LOADERS:
        if name == row.attr:
            modules = tuple(star_modules)
        elif name.endswith("." + row.attr):
            modules = (name[:-len(row.attr) - 1],)
        else:
            continue
        if any(module == source or (below and module.startswith(source + "."))
               for module in modules for source, below in row.star_sources):
            return row
    return None


def passes_keywords(name: str) -> bool:
    """Whether the framework callable of that row name passes the loader keywords it is given
    on to torch's DataLoader (a `worker_init_fn` included)."""
    row = _BY_NAME.get(name)
    return row is not None and row.passes_keywords


def framework_loader_words() -> tuple[str, ...]:
    """The identifiers a framework loader call spells (for the prefilter)."""
    return tuple(sorted({row.prefilter_word for row in FRAMEWORK_LOADERS}))
