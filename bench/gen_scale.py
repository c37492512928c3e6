"""Deterministic generator of synthetic projects for the linker's scale curve (issue 21).

`N` dataset classes (one module each; half create a `requests.Session` in `__init__`, half
open it lazily per worker), `K` loader modules each with a chain of `D` helpers
(`run_<j>_<d>(ds, workers)` calls `run_<j>_<d-1>` twice, `run_<j>_0` builds the DataLoader:
2**D paths from a construction to the loader), factories (`make_<k>()` returning a factory's
result), a wrapper dataset keeping the inner one (`Wrapped(inner)`), a registry dict of
classes looked up by a constant key, and trainers keeping the dataset in an attribute
(`Trainer(ds, workers=2).fit()`). Every dataset reaches one of the loaders.

Usage: ``python bench/gen_scale.py OUT_DIR --classes N --depth D --loaders K``
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

DATASET = '''\
import os

import requests
from torch.utils.data import Dataset


class Remote{k}(Dataset):
    def __init__(self, url, size=100):
        self.url = url
        self.size = size
{body}

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        return {read}.get(f"{{self.url}}/{{i}}")
'''
EAGER = "        self.session = requests.Session()"
LAZY = '''        self._session = None
        self._pid = None

    def _client(self):
        if self._session is None or self._pid != os.getpid():
            self._session = requests.Session()
            self._pid = os.getpid()
        return self._session'''

COMMON = '''\
from torch.utils.data import DataLoader, Dataset


class Wrapped(Dataset):
    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        return self.inner[i]


class Trainer:
    def __init__(self, dataset, workers=2):
        self.dataset = dataset
        self.workers = workers

    def fit(self):
        return DataLoader(self.dataset, batch_size=8, num_workers=self.workers)
'''


def chain(j: int, depth: int) -> str:
    out = ["from torch.utils.data import DataLoader", "", "",
           f"def run_{j}_0(ds, workers):",
           "    return DataLoader(ds, batch_size=8, num_workers=workers)", ""]
    for d in range(1, depth + 1):
        out += ["", f"def run_{j}_{d}(ds, workers):",
                f"    run_{j}_{d - 1}(ds, workers)",
                f"    return run_{j}_{d - 1}(ds, workers)", ""]
    return "\n".join(out)


def generate(out: Path, classes: int, depth: int, loaders: int) -> int:
    """Write the project; the number of files written."""
    if out.exists():
        shutil.rmtree(out)
    pkg = out / "proj"
    (pkg / "datasets").mkdir(parents=True)
    (pkg / "loaders").mkdir()
    for folder in (pkg, pkg / "datasets", pkg / "loaders"):
        (folder / "__init__.py").write_text("")
    (pkg / "common.py").write_text(COMMON)
    for k in range(classes):
        eager = (k // 4) % 2 == 0  # every shape below gets eager and lazy classes
        (pkg / "datasets" / f"ds{k}.py").write_text(DATASET.format(
            k=k, body=EAGER if eager else LAZY,
            read="self.session" if eager else "self._client()"))
    factories = ["from torch.utils.data import Dataset", "",
                 "from proj.datasets import " + ", ".join(f"ds{k}" for k in range(classes)), ""]
    for k in range(classes):
        factories += ["", f"def _make_{k}(url) -> Dataset:", f"    return ds{k}.Remote{k}(url)",
                      "", "", f"def make_{k}(url) -> Dataset:", f"    return _make_{k}(url)", ""]
    factories += ["", "REGISTRY = {"] + \
        [f'    "remote{k}": ds{k}.Remote{k},' for k in range(classes)] + ["}", ""]
    (pkg / "factories.py").write_text("\n".join(factories))
    for j in range(loaders):
        (pkg / "loaders" / f"chain{j}.py").write_text(chain(j, depth))
    main = ["from torch.utils.data import DataLoader", "",
            "from proj.common import Trainer, Wrapped", "from proj.factories import *"]
    main += [f"from proj.loaders.chain{j} import run_{j}_{depth}" for j in range(loaders)]
    main += ["", "", "def main():"]
    for k in range(classes):
        j = k % loaders
        shape = k % 4
        if shape == 0:
            main.append(f"    run_{j}_{depth}(make_{k}('http://h/{k}'), 2)")
        elif shape == 1:
            main.append(f"    run_{j}_{depth}(Wrapped(make_{k}('http://h/{k}')), 4)")
        elif shape == 2:
            main.append(f"    Trainer(make_{k}('http://h/{k}'), workers=2).fit()")
        else:
            main.append(f"    run_{j}_{depth}(REGISTRY['remote{k}']('http://h/{k}'), 2)")
    main += ["", "", "def evaluate():",
             "    return DataLoader(Wrapped(make_0('http://h/eval')), num_workers=0)", "",
             "", 'if __name__ == "__main__":', "    main()", "    evaluate()", ""]
    (out / "train.py").write_text("\n".join(main))
    return classes + loaders + 7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--loaders", type=int, default=4)
    args = parser.parse_args()
    generate(args.out_dir, args.classes, args.depth, args.loaders)


if __name__ == "__main__":
    main()
