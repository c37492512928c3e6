"""Frameworks that hand out torch's own data classes under their names (data, not code).

`from fastai.vision import *` then `class Tiles(Dataset)`: that `Dataset` is
`torch.utils.data.Dataset`, re-exported by the framework (fastai v1 `fastai/imports/torch.py`,
fastai v2 `fastai/torch_imports.py`). The linker reads this table for a base class named
bare in a file whose star imports name no module of the checked project that defines it.
A configured `dataset-bases` entry is matched the same way (a star import of its module, or of
a package above it), see `Project.is_torch_dataset`.

Framework classes that merely *subclass* torch's Dataset (torchvision's `VisionDataset`,
PyG's `Dataset`) are not here: they count when configured in `dataset-bases`."""

from __future__ import annotations

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
