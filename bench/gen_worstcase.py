"""Deterministic generator of the worst-case corpus: every file is a candidate.

Each file is a realistic-looking module of a training project: imports, Dataset classes
that hold fork-unsafe handles (and some that hold them safely), module-level clients,
DataLoader calls with ``num_workers``, helpers and unrelated code, in varied sizes.
Files import each other (``common.py`` holds shared clients) so repo mode has links to make.

Usage: ``python bench/gen_worstcase.py OUT_DIR [--lines 50000] [--seed 1234]``
"""

from __future__ import annotations

import argparse
import ast
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "wsproj"

IMPORTS = """\
from __future__ import annotations

import json
import logging
import os
import sqlite3
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import h5py
import lmdb
import numpy as np
import requests
import torch
import torch.utils.data as tud
from torch.utils.data import DataLoader, Dataset, IterableDataset

from {package}.common import API_SESSION, make_client, open_index
"""

COMMON = '''\
"""Shared clients for the {package} project (module level: created at import time)."""

from __future__ import annotations

import os
import sqlite3

import boto3
import httpx
import redis
import requests
from requests import Session as HttpSession

API_URL = os.environ.get("API_URL", "https://api.example.invalid")
API_SESSION = requests.Session()
API_SESSION.headers.update({{"User-Agent": "{package}/1.0"}})
S3 = boto3.client("s3", region_name="eu-west-1")
CACHE = redis.Redis(host="localhost", port=6379, db=0)


def make_client(timeout: float = 10.0) -> httpx.Client:
    """Return a new HTTP client with the project defaults."""
    return httpx.Client(base_url=API_URL, timeout=timeout)


def make_session() -> HttpSession:
    session = HttpSession()
    session.headers["Accept"] = "application/json"
    return session


def open_index(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn
'''


@dataclass
class Namer:
    """Unique, readable identifiers within one file."""

    rng: random.Random
    counter: int = 0
    datasets: list[tuple[str, str]] = field(default_factory=list)
    foreign: list[tuple[str, str, str]] = field(default_factory=list)  # (module, cls, args)

    WORDS = (
        "image", "audio", "text", "remote", "shard", "patch", "frame", "token", "label",
        "sample", "record", "feature", "volume", "tile", "clip", "scan", "caption", "graph",
    )

    def name(self, suffix: str) -> str:
        self.counter += 1
        word = self.rng.choice(self.WORDS).capitalize()
        return f"{word}{suffix}{self.counter}"

    def dataset_call(self) -> str:
        """A constructor call of one of this file's datasets."""
        cls, args = self.rng.choice(self.datasets)
        return f"{cls}({args})"

    def func(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}_{self.rng.choice(self.WORDS)}_{self.counter}"


Block = Callable[[Namer], str]


def _session_dataset(n: Namer) -> str:
    cls = n.name("RemoteDataset")
    n.datasets.append((cls, '["https://data.example.invalid/0"]'))
    return f'''
class {cls}(Dataset):
    """Items fetched over HTTP; the session is created in __init__ (shared after fork)."""

    def __init__(self, urls: list[str], timeout: float = 5.0) -> None:
        self.urls = list(urls)
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({{"Authorization": os.environ.get("TOKEN", "")}})
        self.session.get(self.urls[0], timeout=timeout)

    def __len__(self) -> int:
        return len(self.urls)

    def __getitem__(self, idx: int) -> torch.Tensor:
        response = self.session.get(self.urls[idx], timeout=self.timeout)
        response.raise_for_status()
        payload = response.json()
        return torch.tensor(payload["values"], dtype=torch.float32)
'''


def _h5_dataset(n: Namer) -> str:
    cls = n.name("H5Dataset")
    n.datasets.append((cls, '"train.h5"'))
    return f'''
class {cls}(tud.Dataset):
    def __init__(self, path: str, key: str = "images", transform=None):
        self.file = h5py.File(path, "r")
        self.images = self.file[key]
        self.labels = self.file.get("labels")
        self.transform = transform

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, index):
        image = np.asarray(self.images[index], dtype=np.float32) / 255.0
        label = int(self.labels[index]) if self.labels is not None else -1
        if self.transform is not None:
            image = self.transform(image)
        return torch.from_numpy(image), label
'''


def _lmdb_dataset(n: Namer) -> str:
    cls = n.name("LmdbDataset")
    n.datasets.append((cls, 'Path("train.lmdb")'))
    return f'''
class {cls}(Dataset):
    def __init__(self, root: Path, readahead: bool = False) -> None:
        self.env = lmdb.open(str(root), readonly=True, lock=False, readahead=readahead)
        self.txn = self.env.begin(write=False)
        self.keys = [key for key, _ in self.txn.cursor()]

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> dict[str, Any]:
        raw = self.txn.get(self.keys[i])
        record = json.loads(raw.decode("utf-8"))
        return {{"x": torch.tensor(record["x"]), "y": record.get("y", 0)}}
'''


def _module_client_dataset(n: Namer) -> str:
    cls = n.name("CatalogDataset")
    n.datasets.append((cls, 'list(range(1000))'))
    return f'''
class {cls}(Dataset):
    """Uses the module-level API_SESSION from {PACKAGE}.common (WS102 shape)."""

    def __init__(self, ids: list[int], endpoint: str = "/items") -> None:
        self.ids = ids
        self.endpoint = endpoint

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        item = API_SESSION.get(f"{{self.endpoint}}/{{self.ids[i]}}").json()
        return item["features"], item["label"]
'''


def _class_attr_dataset(n: Namer) -> str:
    cls = n.name("IndexedDataset")
    n.datasets.append((cls, '"samples"'))
    return f'''
class {cls}(Dataset):
    db = sqlite3.connect("index.db", check_same_thread=False)

    def __init__(self, table: str = "samples") -> None:
        self.table = table
        (self.count,) = self.db.execute(f"SELECT COUNT(*) FROM {{table}}").fetchone()

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int):
        row = self.db.execute(f"SELECT path, label FROM {{self.table}} LIMIT 1 OFFSET ?", (i,))
        path, label = row.fetchone()
        return path, label
'''


def _passed_in_dataset(n: Namer) -> str:
    cls = n.name("ClientDataset")
    n.datasets.append((cls, 'make_client(), ["a", "b"]'))
    fn = n.func("build")
    return f'''
class {cls}(Dataset):
    def __init__(self, client, keys: list[str]) -> None:
        self.client = client
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> bytes:
        return self.client.get(f"/blobs/{{self.keys[i]}}").content


def {fn}(keys: list[str]) -> {cls}:
    return {cls}(make_client(timeout=30.0), keys)
'''


def _lazy_safe_dataset(n: Namer) -> str:
    cls = n.name("LazyDataset")
    n.datasets.append((cls, '"train.zip"'))
    return f'''
class {cls}(Dataset):
    """Safe: the archive is opened lazily, once per worker process."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        self._zip: Optional[zipfile.ZipFile] = None
        self._pid: Optional[int] = None
        with zipfile.ZipFile(archive) as zf:
            self.names = sorted(zf.namelist())

    def _handle(self) -> zipfile.ZipFile:
        if self._zip is None or self._pid != os.getpid():
            self._zip = zipfile.ZipFile(self.archive)
            self._pid = os.getpid()
        return self._zip

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> bytes:
        return self._handle().read(self.names[i])
'''


def _iterable_dataset(n: Namer) -> str:
    cls = n.name("StreamDataset")
    n.datasets.append((cls, '"index.db"'))
    return f'''
class {cls}(IterableDataset):
    def __init__(self, index_path: str, batch: int = 256) -> None:
        self.conn = open_index(index_path)
        self.batch = batch

    def __iter__(self) -> Iterator[tuple[str, int]]:
        cursor = self.conn.execute("SELECT path, label FROM items ORDER BY rowid")
        while True:
            rows = cursor.fetchmany(self.batch)
            if not rows:
                return
            for path, label in rows:
                yield path, int(label)
'''


def _loader_fn(n: Namer) -> str:
    fn = n.func("make_loader")
    target = n.dataset_call()
    workers = n.rng.choice(
        ["4", "8", "args.workers", "os.cpu_count() or 2", "cfg.num_workers", "1"])
    extra = n.rng.choice(
        ["", ", persistent_workers=True", ", pin_memory=True", ", drop_last=True"])
    return f'''
def {fn}(args, cfg=None, shuffle: bool = True) -> DataLoader:
    dataset = {target}
    return DataLoader(
        dataset,
        batch_size=getattr(args, "batch_size", 32),
        shuffle=shuffle,
        num_workers={workers}{extra},
    )
'''


def _foreign_loader(n: Namer) -> str:
    """A DataLoader over a dataset defined in another module of the project (repo mode)."""
    if not n.foreign:
        return _loader_fn(n)
    module, cls, args = n.rng.choice(n.foreign)
    fn = n.func("foreign_loader")
    return f'''
def {fn}(batch_size: int = 16) -> DataLoader:
    from {PACKAGE}.{module} import {cls}

    return DataLoader({cls}({args}), batch_size=batch_size, num_workers=4)
'''


def _module_handle(n: Namer) -> str:
    """A module-level handle used by a dataset of the same module (WS102 shape)."""
    const = n.name("Store").upper()
    cls = n.name("ArchiveDataset")
    n.datasets.append((cls, "[]"))
    return f'''
{const} = zipfile.ZipFile(os.environ.get("ARCHIVE", "data.zip"))


class {cls}(Dataset):
    def __init__(self, names: list[str]) -> None:
        self.names = names or {const}.namelist()

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> bytes:
        return {const}.read(self.names[i])
'''


def _spawn_loader(n: Namer) -> str:
    fn = n.func("spawn_loader")
    return f'''
def {fn}(dataset: Dataset, batch_size: int = 64) -> DataLoader:
    ctx = torch.multiprocessing.get_context("spawn")
    return DataLoader(dataset, batch_size=batch_size, num_workers=2, multiprocessing_context=ctx)
'''


def _worker_init(n: Namer) -> str:
    fn = n.func("worker_init")
    return f'''
def {fn}(worker_id: int) -> None:
    """Give every worker its own session and seed."""
    info = torch.utils.data.get_worker_info()
    if info is None:
        return
    dataset = info.dataset
    dataset.session = requests.Session()
    np.random.seed(info.seed % (2**32) + worker_id)
'''


def _config(n: Namer) -> str:
    cls = n.name("Config")
    return f'''
@dataclass
class {cls}:
    root: Path = Path("data")
    batch_size: int = 32
    num_workers: int = 4
    lr: float = 3e-4
    epochs: int = 10
    tags: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, path: str) -> "{cls}":
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
        known = {{k: v for k, v in raw.items() if k in cls.__dataclass_fields__}}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        return {{"root": str(self.root), "batch_size": self.batch_size, "lr": self.lr}}
'''


def _math_helpers(n: Namer) -> str:
    a, b, c = n.func("normalize"), n.func("moving_average"), n.func("cosine_schedule")
    return f'''
def {a}(x: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    mean = x.mean(axis=0, keepdims=True)
    std = x.std(axis=0, keepdims=True)
    return (x - mean) / (std + eps)


def {b}(values: list[float], window: int = 10) -> list[float]:
    out: list[float] = []
    total = 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def {c}(step: int, total: int, base_lr: float, warmup: int = 100) -> float:
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base_lr * (1.0 + float(np.cos(np.pi * progress)))
'''


def _text_helpers(n: Namer) -> str:
    a, b = n.func("tokenize"), n.func("collate")
    return f'''
def {a}(text: str, vocab: dict[str, int], max_len: int = 128) -> list[int]:
    tokens = [t for t in text.lower().replace("\\n", " ").split(" ") if t]
    ids = [vocab.get(t, vocab.get("<unk>", 0)) for t in tokens][:max_len]
    return ids + [0] * (max_len - len(ids))


def {b}(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    xs, ys = zip(*batch)
    lengths = [x.shape[0] for x in xs]
    padded = torch.zeros(len(xs), max(lengths))
    for row, (x, length) in enumerate(zip(xs, lengths)):
        padded[row, :length] = x
    return padded, torch.tensor(ys)
'''


def _model(n: Namer) -> str:
    cls = n.name("Net")
    width = n.rng.choice([64, 128, 256, 512])
    return f'''
class {cls}(torch.nn.Module):
    def __init__(self, in_features: int = 32, hidden: int = {width}, classes: int = 10) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(in_features, hidden),
            torch.nn.ReLU(),
            torch.nn.Dropout(0.1),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))
'''


def _train_loop(n: Namer) -> str:
    fn = n.func("train")
    return f'''
def {fn}(model: torch.nn.Module, loader: DataLoader, epochs: int = 1, lr: float = 1e-3) -> float:
    log = logging.getLogger(__name__)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    last = float("nan")
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            last = loss.item()
            if step % 100 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, last)
    return last
'''


def _io_helpers(n: Namer) -> str:
    a, b = n.func("read_manifest"), n.func("write_report")
    return f'''
def {a}(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{{path}}:{{line_no}}: {{exc}}") from exc
    except FileNotFoundError:
        return []
    return records


def {b}(metrics: dict[str, float], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{{k}}: {{v:.4f}}" for k, v in sorted(metrics.items())]
    out.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
'''


def _main_block(n: Namer) -> str:
    fn = n.func("main")
    target = n.dataset_call()
    return f'''
def {fn}(argv: Optional[list[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    dataset = {target}
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, num_workers=args.workers
    )
    for _batch in loader:
        break
    return 0
'''


HANDLE_BLOCKS: tuple[Block, ...] = (
    _session_dataset, _h5_dataset, _lmdb_dataset, _module_client_dataset,
    _class_attr_dataset, _passed_in_dataset, _lazy_safe_dataset, _iterable_dataset,
    _module_handle,
)
LOADER_BLOCKS: tuple[Block, ...] = (
    _loader_fn, _foreign_loader, _spawn_loader, _worker_init, _main_block,
)
PLAIN_BLOCKS: tuple[Block, ...] = (
    _config, _math_helpers, _text_helpers, _model, _train_loop, _io_helpers,
)


SENTENCES = (
    "Keep the order stable so that shuffling with a fixed seed is reproducible.",
    "The remote service rate-limits us; retries are handled by the adapter.",
    "Values are normalised to [0, 1] before the transform is applied.",
    "This mirrors the layout written by the preprocessing job.",
    "Labels missing from the manifest default to -1 and are masked in the loss.",
    "The index is built once; reading it again per epoch is too slow.",
    "Paths are relative to the dataset root unless they start with a slash.",
    "Shapes follow the (batch, channels, height, width) convention.",
    "See the data card for how the splits were made.",
    "Large shards are streamed rather than loaded in full.",
    "Only JSON payloads are supported for now.",
    "Timeouts are in seconds and apply to each request separately.",
)
COMMENTS = (
    "# TODO: move this to the config once the schema settles",
    "# fast path: nothing to do",
    "# keep the handle open for the lifetime of the dataset",
    "# NOTE: the server returns 404 for deleted items",
    "# convert to float32 early to halve the memory of the batch",
    "# guard against empty shards",
    "# cheap sanity check, see the data card",
    "# pragma: no cover - exercised in the integration tests",
)


def _document(block: str, rng: random.Random) -> str:
    """Add docstrings and comments in the proportions of real code (~4-5 tokens a line)."""
    out: list[str] = []
    lines = block.split("\n")
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped and not stripped.startswith(NO_COMMENT_BEFORE) and rng.random() < 0.15:
            out.append(indent + rng.choice(COMMENTS))
        out.append(line)
        nxt = lines[i + 1].lstrip() if i + 1 < len(lines) else ""
        if stripped.startswith(("def ", "class ")) and line.endswith(":") \
                and not nxt.startswith('"""') and rng.random() < 0.65:
            out.extend(_docstring(indent + "    ", stripped, rng))
    return "\n".join(out)


NO_COMMENT_BEFORE = ('"', ")", "]", "}", "else", "elif", "except", "finally", "def ", "class ",
                     "@")


def _docstring(indent: str, signature: str, rng: random.Random) -> list[str]:
    body = [indent + '"""' + rng.choice(SENTENCES)]
    extra = rng.sample(SENTENCES, rng.randint(0, 2))
    if extra:
        body += ["", *(indent + s for s in extra)]
    params = [p.split(":")[0].split("=")[0].strip().lstrip("*")
              for p in signature.partition("(")[2].rpartition(")")[0].split(",")]
    params = [p for p in params if p and p not in ("self", "cls")]
    if params and signature.startswith("def ") and rng.random() < 0.4:
        body += ["", indent + "Args:"]
        body += [f"{indent}    {p}: {rng.choice(SENTENCES).lower()}" for p in params]
    if len(body) == 1:
        return [body[0] + '"""']
    return [*body, indent + '"""']


def _pick_block(rng: random.Random) -> Block:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(HANDLE_BLOCKS)
    if roll < 0.5:
        return rng.choice(LOADER_BLOCKS)
    return rng.choice(PLAIN_BLOCKS)


def generate_module(rng: random.Random, target_lines: int,
                    foreign: list[tuple[str, str, str]] | None = None) -> str:
    """One candidate module of roughly ``target_lines`` lines (never fewer)."""
    namer = Namer(rng, foreign=list(foreign or ()))
    doc = f'"""Generated benchmark module ({target_lines} lines target)."""\n\n'
    parts = [doc, IMPORTS.format(package=PACKAGE), "\nlog = logging.getLogger(__name__)\n"]
    parts.append("\n" + _document(_session_dataset(namer), rng))  # every file has a handle
    parts.append("\n" + _document(_loader_fn(namer), rng))  # ... and a DataLoader
    lines = sum(part.count("\n") for part in parts)
    while lines < target_lines:
        block = _document(_pick_block(rng)(namer), rng)
        parts.append("\n" + block)
        lines += block.count("\n") + 1
    return "".join(parts)


def generate_corpus(out_dir: Path, total_lines: int = 50_000, seed: int = 1234,
                    min_lines: int = 100, max_lines: int = 1500) -> list[Path]:
    """Write the package ``wsproj`` under ``out_dir``; return the files written."""
    rng = random.Random(seed)
    pkg = out_dir / PACKAGE
    pkg.mkdir(parents=True, exist_ok=True)
    init = f'"""Benchmark project."""\nfrom {PACKAGE}.common import API_SESSION\n'
    written = [_write(pkg / "__init__.py", init),
               _write(pkg / "common.py", COMMON.format(package=PACKAGE))]
    lines = sum(_count_lines(p) for p in written)
    foreign: list[tuple[str, str, str]] = []
    index = 0
    while lines < total_lines:
        size = min(rng.randint(min_lines, max_lines), max(min_lines, total_lines - lines))
        module = f"mod_{index:03d}"
        text = generate_module(rng, size, foreign)
        path = _write(pkg / f"{module}.py", text)
        foreign.extend((module, cls, args) for cls, args in _defined_datasets(text))
        written.append(path)
        lines += _count_lines(path)
        index += 1
    return written


def _defined_datasets(text: str) -> list[tuple[str, str]]:
    """(class, constructor args) of the HTTP datasets a module defines (first one is enough)."""
    for line in text.splitlines():
        if line.startswith("class ") and "RemoteDataset" in line:
            return [(line[6:line.index("(")], '["https://data.example.invalid/0"]')]
    return []


def generate_single_file(path: Path, lines: int = 3000, seed: int = 4321) -> Path:
    """The single large candidate file (editor path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write(path, generate_module(random.Random(seed), lines))


def check_syntax(paths: list[Path]) -> None:
    """Raise SyntaxError if a generated file does not compile."""
    for path in paths:
        ast.parse(path.read_bytes(), str(path))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    files = generate_corpus(args.out_dir, args.lines, args.seed)
    check_syntax(files)
    print(f"{len(files)} files, {sum(_count_lines(f) for f in files)} lines in {args.out_dir}")


if __name__ == "__main__":
    main()
