"""Deterministic generator of a candidate-heavy corpus that looks like real ML repositories.

Each repository has the usual layout — ``<pkg>/datasets/``, ``<pkg>/models/``,
``<pkg>/utils/``, ``configs/``, ``train.py``, ``evaluate.py``, ``scripts/`` — and the usual
contents: Dataset classes over image folders, CSV/JSON manifests, HDF5, LMDB, zip archives,
SQLite indexes and remote URLs; DataLoader construction in training and evaluation scripts;
``nn.Module`` models; checkpoint, logging and metric utilities that talk to S3 or HTTP.
Almost every file names a handle library and a dataset, so the prefilter passes it (as it
does for ~20% of the files of real ML repositories, and for most of their data code), but
most of them hold no finding: handles opened lazily per worker, in ``worker_init_fn``,
inside ``__getitem__``, or used by the main process only. A few hold the real bug.

Usage: ``python bench/gen_mlrepos.py OUT_DIR [--lines 120000] [--seed 1234]``
"""

from __future__ import annotations

import argparse
import ast
import random
from pathlib import Path

WORDS = ("image", "caption", "frame", "clip", "token", "sample", "patch", "record", "shard",
         "scene", "audio", "label", "mask", "depth", "point", "graph", "video", "text")
DOMAINS = ("coco", "imagenet", "kinetics", "librispeech", "wiki", "laion", "cityscapes",
           "shapenet", "openimages", "squad", "msmarco", "nuscenes", "ade20k", "voc")


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]


class Repo:
    """Names for one generated repository, and its random stream."""

    def __init__(self, rng: random.Random, index: int) -> None:
        self.rng = rng
        self.domain = rng.choice(DOMAINS)
        self.pkg = f"{self.domain}_{rng.choice(('net', 'lab', 'kit', 'tools', 'bench'))}{index}"
        self.counter = 0

    def name(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def word(self) -> str:
        return self.rng.choice(WORDS)


# --- dataset modules ------------------------------------------------------------------------

def _header(doc: str, imports: list[str]) -> str:
    return f'"""{doc}"""\n\nfrom __future__ import annotations\n\n' + "\n".join(imports) + "\n"


def _folder_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"{_cap(r.domain)}{_cap(w)}Folder{r.counter}"
    r.counter += 1
    return f'''

class {cls}(Dataset):
    """{_cap(w)}s stored as files under ``root/<split>/<class>/``.

    Files are opened in ``__getitem__``: nothing is shared between DataLoader workers.
    """

    extensions = (".jpg", ".jpeg", ".png", ".webp")

    def __init__(self, root: str, split: str = "train", transform: Optional[Callable] = None,
                 max_items: Optional[int] = None) -> None:
        super().__init__()
        self.root = Path(root) / split
        self.transform = transform
        self.classes = sorted(p.name for p in self.root.iterdir() if p.is_dir())
        self.class_to_idx = {{name: i for i, name in enumerate(self.classes)}}
        self.samples: list[tuple[Path, int]] = []
        for name in self.classes:
            for path in sorted((self.root / name).rglob("*")):
                if path.suffix.lower() in self.extensions:
                    self.samples.append((path, self.class_to_idx[name]))
        if max_items is not None:
            self.samples = self.samples[:max_items]
        logger.info("%s: %d %ss in %d classes", type(self).__name__, len(self.samples),
                    "{w}", len(self.classes))

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, target = self.samples[index]
        with open(path, "rb") as handle:
            data = np.frombuffer(handle.read(), dtype=np.uint8)
        tensor = torch.from_numpy(data.copy()).float() / 255.0
        if self.transform is not None:
            tensor = self.transform(tensor)
        return tensor, target
'''


def _manifest_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"{_cap(w)}Manifest{r.name('Dataset')}"
    return f'''

class {cls}(Dataset):
    """Rows of a JSON-lines manifest: one {w} per line, with its label and metadata."""

    def __init__(self, manifest: str, tokenizer: Optional[Callable[[str], list[int]]] = None,
                 max_length: int = 256, drop_empty: bool = True) -> None:
        self.rows: list[dict[str, Any]] = []
        with open(manifest, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    logger.warning("%s:%d: bad JSON, skipped", manifest, line_no)
                    continue
                if drop_empty and not row.get("{w}"):
                    continue
                self.rows.append(row)
        self.tokenizer = tokenizer
        self.max_length = max_length

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = self.rows[index]
        ids = self.tokenizer(row["{w}"]) if self.tokenizer else [ord(c) % 255 for c in row["{w}"]]
        ids = ids[: self.max_length]
        padded = ids + [0] * (self.max_length - len(ids))
        return {{
            "input_ids": torch.tensor(padded, dtype=torch.long),
            "attention_mask": torch.tensor([1] * len(ids) + [0] * (self.max_length - len(ids))),
            "label": torch.tensor(int(row.get("label", 0))),
        }}
'''


def _lazy_h5_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"H5{_cap(w)}{r.name('Dataset')}"
    return f'''

class {cls}(Dataset):
    """{_cap(w)} arrays in one HDF5 file. The file is opened lazily, once per worker process
    (h5py handles must not cross a fork)."""

    def __init__(self, path: str, key: str = "{w}s", normalize: bool = True) -> None:
        self.path = path
        self.key = key
        self.normalize = normalize
        self._file: Optional[h5py.File] = None
        with h5py.File(path, "r") as f:
            self.length = len(f[key])
            self.shape = tuple(f[key].shape[1:])

    def _data(self) -> Any:
        if self._file is None:
            self._file = h5py.File(self.path, "r")
        return self._file[self.key]

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        array = np.asarray(self._data()[index], dtype=np.float32)
        if self.normalize:
            array = (array - array.mean()) / (array.std() + 1e-6)
        return torch.from_numpy(array)

    def __del__(self) -> None:
        if self._file is not None:
            self._file.close()
'''


def _lmdb_pid_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"Lmdb{_cap(w)}{r.name('Dataset')}"
    return f'''

class {cls}(Dataset):
    """{_cap(w)}s in an LMDB environment, reopened in each worker (checked by process id)."""

    def __init__(self, path: str, readahead: bool = False) -> None:
        self.path = path
        self.readahead = readahead
        self.env = None
        self.pid = None
        env = lmdb.open(path, readonly=True, lock=False, readahead=readahead)
        with env.begin() as txn:
            self.keys = [key for key, _ in txn.cursor()]
        env.close()

    def _open(self) -> None:
        if self.env is None or self.pid != os.getpid():
            self.env = lmdb.open(self.path, readonly=True, lock=False,
                                 readahead=self.readahead, meminit=False)
            self.pid = os.getpid()

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> torch.Tensor:
        self._open()
        with self.env.begin(write=False) as txn:
            buffer = txn.get(self.keys[index])
        array = np.frombuffer(buffer, dtype=np.uint8).copy()
        return torch.from_numpy(array)
'''


def _zip_getitem_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"Zipped{_cap(w)}{r.name('s')}"
    return f'''

class {cls}(Dataset):
    """{_cap(w)}s inside a zip archive; the member list is read once, the archive reopened
    per item (cheap, and safe with any number of workers)."""

    def __init__(self, archive: str, suffix: str = ".npy") -> None:
        self.archive = archive
        with zipfile.ZipFile(archive) as zf:
            self.members = sorted(n for n in zf.namelist() if n.endswith(suffix))

    def __len__(self) -> int:
        return len(self.members)

    def __getitem__(self, index: int) -> torch.Tensor:
        with zipfile.ZipFile(self.archive) as zf:
            with zf.open(self.members[index]) as member:
                array = np.load(member)
        return torch.as_tensor(array)
'''


def _remote_dataset_bug(r: Repo) -> str:
    w = r.word()
    cls = f"Remote{_cap(w)}{r.name('Dataset')}"
    return f'''

class {cls}(Dataset):
    """{_cap(w)}s fetched over HTTP from the annotation service."""

    def __init__(self, urls: list[str], timeout: float = 10.0, retries: int = 3) -> None:
        self.urls = urls
        self.timeout = timeout
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(max_retries=retries)
        self.session.mount("https://", adapter)

    def __len__(self) -> int:
        return len(self.urls)

    def __getitem__(self, index: int) -> torch.Tensor:
        response = self.session.get(self.urls[index], timeout=self.timeout)
        response.raise_for_status()
        data = np.frombuffer(response.content, dtype=np.uint8)
        return torch.from_numpy(data.copy())
'''


def _sqlite_index_dataset(r: Repo) -> str:
    w = r.word()
    cls = f"Indexed{_cap(w)}{r.name('Dataset')}"
    return f'''

class {cls}(Dataset):
    """Rows of an SQLite index; each worker opens its own connection on first use."""

    query = "SELECT path, label FROM {w}s WHERE rowid = ?"

    def __init__(self, db_path: str, root: str) -> None:
        self.db_path = db_path
        self.root = Path(root)
        self.conn: Optional[sqlite3.Connection] = None
        with sqlite3.connect(db_path) as conn:
            (self.length,) = conn.execute("SELECT COUNT(*) FROM {w}s").fetchone()

    def _connection(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = sqlite3.connect(self.db_path, check_same_thread=False)
        return self.conn

    def __len__(self) -> int:
        return int(self.length)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self._connection().execute(self.query, (index + 1,)).fetchone()
        array = np.load(self.root / path)
        return torch.from_numpy(array), int(label)
'''


DATASET_BLOCKS = (
    (_folder_dataset, 5), (_manifest_dataset, 5), (_lazy_h5_dataset, 3), (_lmdb_pid_dataset, 2),
    (_zip_getitem_dataset, 2), (_sqlite_index_dataset, 2), (_remote_dataset_bug, 1),
)
DATASET_IMPORTS = [
    "import json", "import logging", "import os", "import sqlite3", "import zipfile",
    "from pathlib import Path", "from typing import Any, Callable, Optional", "",
    "import h5py", "import lmdb", "import numpy as np", "import requests", "import torch",
    "from torch.utils.data import Dataset", "", "logger = logging.getLogger(__name__)",
]


def _pick(r: Repo, blocks: tuple) -> object:  # type: ignore[type-arg]
    total = sum(weight for _, weight in blocks)
    roll = r.rng.uniform(0, total)
    for block, weight in blocks:
        roll -= weight
        if roll <= 0:
            return block
    return blocks[-1][0]


def dataset_module(r: Repo, target_lines: int) -> str:
    parts = [_header(f"Datasets for {r.domain}: {r.word()}s and {r.word()}s.", DATASET_IMPORTS)]
    lines = 20
    while lines < target_lines:
        block = _pick(r, DATASET_BLOCKS)(r)  # type: ignore[operator]
        parts.append(block)
        lines += block.count("\n")
    return "".join(parts)


# --- models, configs, utilities, scripts ----------------------------------------------------

def model_module(r: Repo, target_lines: int) -> str:
    parts = [_header(f"Models for {r.domain}.", [
        "import math", "from typing import Optional", "", "import torch",
        "import torch.nn as nn", "import torch.nn.functional as F", "",
        "from torch.utils.data import DataLoader  # for the type of `calibrate`"])]
    lines = 12
    while lines < target_lines:
        cls = r.name(_cap(r.word()) + "Block")
        dim = r.rng.choice((64, 128, 256, 512))
        block = f'''

class {cls}(nn.Module):
    """Pre-norm residual block: attention then MLP ({dim} channels)."""

    def __init__(self, dim: int = {dim}, heads: int = {r.rng.choice((4, 8))},
                 mlp_ratio: float = 4.0, dropout: float = 0.1) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, dim))
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = self.norm1(x)
        attended, _ = self.attn(h, h, h, key_padding_mask=mask, need_weights=False)
        x = x + attended
        x = x + self.mlp(self.norm2(x))
        return x

    @torch.no_grad()
    def calibrate(self, loader: DataLoader, steps: int = 10) -> float:
        total = 0.0
        for step, batch in enumerate(loader):
            if step >= steps:
                break
            total += float(self.forward(batch).abs().mean())
        return total / max(steps, 1)
'''
        parts.append(block)
        lines += block.count("\n")
    return "".join(parts)


def config_module(r: Repo) -> str:
    fields = "\n".join(f"    {r.word()}_{i}: {r.rng.choice(('int', 'float', 'str'))} = "
                       f"{r.rng.choice(('1', '0.5', repr(r.word())))}" for i in range(20))
    return _header("Experiment configuration: defaults, then YAML, then the command line.", [
        "import argparse", "import dataclasses", "from dataclasses import dataclass, field",
        "from typing import Optional", "", "import yaml"]) + f'''

@dataclass
class DataConfig:
    root: str = "data/{r.domain}"
    batch_size: int = 64
    num_workers: int = 8
    pin_memory: bool = True
    persistent_workers: bool = False
    hdf5_path: Optional[str] = None  # h5py file with precomputed features
    lmdb_path: Optional[str] = None


@dataclass
class TrainConfig:
    epochs: int = 90
    lr: float = 3e-4
    weight_decay: float = 0.05
    warmup_steps: int = 2000
    data: DataConfig = field(default_factory=DataConfig)
{fields}


def load(path: Optional[str] = None, overrides: Optional[list[str]] = None) -> TrainConfig:
    cfg = TrainConfig()
    if path:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle) or {{}}
        for key, value in raw.items():
            if key == "data":
                cfg.data = dataclasses.replace(cfg.data, **value)
            elif hasattr(cfg, key):
                setattr(cfg, key, value)
    for item in overrides or []:
        key, _, value = item.partition("=")
        current = getattr(cfg, key)
        setattr(cfg, key, type(current)(value))
    return cfg


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="train on {r.domain}")
    p.add_argument("--config", default=None)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--num-workers", type=int, default=None, help="DataLoader workers")
    return p
'''


def utils_module(r: Repo, target_lines: int) -> str:
    parts = [_header("Checkpoints, metrics and experiment logging (main process only).", [
        "import functools", "import json", "import logging", "import os", "import time",
        "from pathlib import Path", "from typing import Any, Optional", "", "import boto3",
        "import requests", "import torch", "", "logger = logging.getLogger(__name__)"])]
    parts.append(f'''

@functools.lru_cache(maxsize=1)
def s3_client() -> Any:
    """One S3 client for the main process (checkpoint upload)."""
    return boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1"))


def upload_checkpoint(path: Path, bucket: str = "{r.pkg}-ckpt", prefix: str = "runs") -> str:
    key = f"{{prefix}}/{{path.name}}"
    s3_client().upload_file(str(path), bucket, key)
    logger.info("uploaded %s to s3://%s/%s", path, bucket, key)
    return key


class MetricsLogger:
    """Posts scalar metrics to the tracking server, batched."""

    def __init__(self, url: str, run: str, every: int = 50) -> None:
        self.url = url.rstrip("/")
        self.run = run
        self.every = every
        self.buffer: list[dict[str, Any]] = []
        self.session = requests.Session()
        self.session.headers.update({{"X-Run": run}})

    def log(self, step: int, **values: float) -> None:
        self.buffer.append({{"step": step, "time": time.time(), **values}})
        if len(self.buffer) >= self.every:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        try:
            self.session.post(f"{{self.url}}/runs/{{self.run}}", json=self.buffer, timeout=5)
        except requests.RequestException as exc:
            logger.warning("metrics not sent: %s", exc)
        self.buffer.clear()
''')
    lines = 60
    while lines < target_lines:
        fn = r.name(f"{r.word()}_stat")
        block = f'''

def {fn}(values: list[float], window: int = {r.rng.choice((5, 10, 20))}) -> list[float]:
    """Moving average of ``values`` over ``window`` steps (shorter at the start)."""
    out: list[float] = []
    total = 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def save_{fn}(state: dict[str, Any], directory: Path, step: int, keep: int = 3) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step_{{step:08d}}.pt"
    torch.save(state, path)
    old = sorted(directory.glob("step_*.pt"))[:-keep]
    for stale in old:
        stale.unlink()
    with open(directory / "latest.json", "w", encoding="utf-8") as handle:
        json.dump({{"step": step, "path": path.name}}, handle)
    return path
'''
        parts.append(block)
        lines += block.count("\n")
    return "".join(parts)


def train_script(r: Repo, datasets: list[str], target_lines: int) -> str:
    ds_module = datasets[0]
    body = [_header(f"Train a {r.domain} model.", [
        "import logging", "import os", "import random", "from functools import partial", "",
        "import numpy as np", "import torch", "from torch.utils.data import DataLoader, "
        "random_split", "", f"from {r.pkg} import config", f"from {r.pkg}.datasets import "
        f"{ds_module}", f"from {r.pkg}.utils.logging import MetricsLogger, upload_checkpoint",
        "", "logger = logging.getLogger(__name__)"])]
    body.append(f'''

def seed_worker(worker_id: int, base_seed: int = 0) -> None:
    """worker_init_fn: distinct, reproducible seeds per worker."""
    seed = base_seed + worker_id
    np.random.seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)


def build_loaders(cfg: config.TrainConfig) -> tuple[DataLoader, DataLoader]:
    dataset = {ds_module}.{_first_class(r, ds_module)}(cfg.data.root)
    n_val = max(1, len(dataset) // 20)
    train_set, val_set = random_split(dataset, [len(dataset) - n_val, n_val])
    common = dict(batch_size=cfg.data.batch_size, pin_memory=cfg.data.pin_memory)
    train = DataLoader(train_set, shuffle=True, num_workers=cfg.data.num_workers,
                       worker_init_fn=partial(seed_worker, base_seed=cfg.epochs),
                       persistent_workers=cfg.data.persistent_workers, **common)
    val = DataLoader(val_set, shuffle=False, num_workers=2, **common)
    return train, val


def train(cfg: config.TrainConfig, model: torch.nn.Module, metrics: MetricsLogger) -> float:
    train_loader, val_loader = build_loaders(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    best = float("inf")
    step = 0
    for epoch in range(cfg.epochs):
        model.train()
        for batch in train_loader:
            inputs = batch[0] if isinstance(batch, (list, tuple)) else batch["input_ids"]
            loss = model(inputs.float()).pow(2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 50 == 0:
                metrics.log(step, loss=float(loss), epoch=epoch)
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for batch in val_loader:
                inputs = batch[0] if isinstance(batch, (list, tuple)) else batch["input_ids"]
                total += float(model(inputs.float()).pow(2).mean())
                count += 1
        val_loss = total / max(count, 1)
        logger.info("epoch %d: val loss %.4f", epoch, val_loss)
        if val_loss < best:
            best = val_loss
            path = f"checkpoints/epoch_{{epoch:03d}}.pt"
            torch.save(model.state_dict(), path)
            upload_checkpoint(path)
    metrics.flush()
    return best
''')
    lines = sum(b.count("\n") for b in body)
    while lines < target_lines:
        fn = r.name("evaluate_split")
        block = f'''

def {fn}(model: torch.nn.Module, dataset, batch_size: int = 128) -> dict[str, float]:
    """Accuracy and loss of ``model`` on one split (single process: no workers needed)."""
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=0)
    correct, seen, loss = 0, 0, 0.0
    model.eval()
    with torch.no_grad():
        for inputs, targets in loader:
            logits = model(inputs.float())
            loss += float(torch.nn.functional.cross_entropy(logits, targets, reduction="sum"))
            correct += int((logits.argmax(-1) == targets).sum())
            seen += len(targets)
    return {{"accuracy": correct / max(seen, 1), "loss": loss / max(seen, 1)}}
'''
        body.append(block)
        lines += block.count("\n")
    body.append(f'''

def main() -> None:
    args = config.parser().parse_args()
    cfg = config.load(args.config, args.overrides)
    if args.num_workers is not None:
        cfg.data.num_workers = args.num_workers
    model = torch.nn.Linear(256, 10)
    metrics = MetricsLogger(os.environ.get("TRACKING_URL", "http://localhost:5000"), "{r.pkg}")
    best = train(cfg, model, metrics)
    logger.info("best validation loss %.4f", best)


if __name__ == "__main__":
    main()
''')
    return "".join(body)


_CLASSES: dict[tuple[str, str], str] = {}


def _first_class(r: Repo, module: str) -> str:
    return _CLASSES.get((r.pkg, module), "Dataset")


def generate_repo(root: Path, rng: random.Random, index: int, target_lines: int) -> list[Path]:
    r = Repo(rng, index)
    base = root / r.pkg
    written: list[Path] = []
    pkg = base / r.pkg
    written.append(_write(pkg / "__init__.py", f'"""{r.pkg}."""\n\n__version__ = "0.{index}.0"\n'))
    written.append(_write(pkg / "datasets" / "__init__.py", ""))
    written.append(_write(pkg / "models" / "__init__.py", ""))
    written.append(_write(pkg / "utils" / "__init__.py", ""))
    written.append(_write(pkg / "config.py", config_module(r)))
    modules = []
    budget = target_lines
    while budget > 0:
        kind = rng.random()
        size = int(rng.triangular(80, 900, 250))
        if kind < 0.45:
            name = f"{r.domain}_{r.word()}{r.counter}"
            text = dataset_module(r, size)
            tree = ast.parse(text)
            first = next((n.name for n in tree.body if isinstance(n, ast.ClassDef)), "Dataset")
            _CLASSES[(r.pkg, name)] = first
            modules.append(name)
            written.append(_write(pkg / "datasets" / f"{name}.py", text))
        elif kind < 0.65:
            written.append(_write(pkg / "models" / f"{r.word()}_{r.counter}.py",
                                  model_module(r, size)))
        elif kind < 0.8:
            written.append(_write(pkg / "utils" / f"{r.word()}_{r.counter}.py",
                                  utils_module(r, size)))
        else:
            text = train_script(r, modules or _fallback(r, pkg, written), size)
            written.append(_write(base / "scripts" / f"train_{r.word()}_{r.counter}.py", text))
        budget -= size
    written.append(_write(pkg / "utils" / "logging.py", utils_module(r, 120)))
    written.append(_write(base / "train.py", train_script(r, modules or ["x"], 200)))
    return written


def _fallback(r: Repo, pkg: Path, written: list[Path]) -> list[str]:
    name = f"{r.domain}_base"
    text = dataset_module(r, 120)
    _CLASSES[(r.pkg, name)] = next(n.name for n in ast.parse(text).body
                                   if isinstance(n, ast.ClassDef))
    written.append(_write(pkg / "datasets" / f"{name}.py", text))
    return [name]


def generate_corpus(out_dir: Path, total_lines: int = 120_000, seed: int = 1234,
                    repo_lines: int = 12_000) -> list[Path]:
    rng = random.Random(seed)
    files: list[Path] = []
    index = 0
    while sum(_count_lines(p) for p in files) < total_lines:
        files += generate_repo(out_dir, rng, index, int(rng.uniform(0.5, 1.5) * repo_lines))
        index += 1
    for path in files:
        ast.parse(path.read_text(encoding="utf-8"), str(path))
    return files


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--lines", type=int, default=120_000)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()
    files = generate_corpus(args.out_dir, args.lines, args.seed)
    print(f"{len(files)} files, {sum(_count_lines(f) for f in files):,} lines in {args.out_dir}")


if __name__ == "__main__":
    main()
