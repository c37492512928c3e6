"""Qualified names of the torch (and standard library) APIs the analysis recognises.
Plain data with no libcst import, so the engine can use it before deciding to parse."""

from __future__ import annotations

TORCH_DATA = "torch.utils.data"

DATASET_BASES = frozenset(
    f"{TORCH_DATA}{mod}.{name}"
    for mod in ("", ".dataset")
    for name in ("Dataset", "IterableDataset", "MapDataPipe", "IterDataPipe")
)
LOADERS = frozenset({f"{TORCH_DATA}.DataLoader", f"{TORCH_DATA}.dataloader.DataLoader"})
# wrapper → how the wrapped datasets are passed: ("arg", i) positional/keyword, ("list", i)
WRAPPERS = {
    f"{TORCH_DATA}{mod}.{name}": spec
    for mod in ("", ".dataset")
    for name, spec in (
        ("Subset", ("arg", 0, "dataset")),
        ("random_split", ("arg", 0, "dataset")),
        ("ConcatDataset", ("list", 0, "datasets")),
        ("ChainDataset", ("list", 0, "datasets")),
        ("StackDataset", ("all", 0, "")),
    )
}
GET_CONTEXT = frozenset({"multiprocessing.get_context", "torch.multiprocessing.get_context"})
SET_START_METHOD = frozenset(
    {"multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"}
)
PARTIAL = frozenset({"functools.partial"})
CACHE_DECORATORS = frozenset(
    {"functools.cache", "functools.lru_cache", "functools.cached_property"}
)
# Names a `from <module> import *` is known to provide (for the modules we care about).
TORCH_STAR_NAMES = frozenset(
    {"Dataset", "IterableDataset", "DataLoader", "Subset", "random_split", "ConcatDataset",
     "ChainDataset", "StackDataset", "get_worker_info", "TensorDataset"}
)
# Calls whose value names the current process or DataLoader worker: a test or a dict key built
# from one keeps a handle per process (`if os.getpid() != self.pid`, `{info.id: open(p)}`).
PROCESS_IDENTITY = frozenset({
    "os.getpid", f"{TORCH_DATA}.get_worker_info", f"{TORCH_DATA}._utils.worker.get_worker_info",
    "multiprocessing.current_process", "torch.multiprocessing.current_process",
})
