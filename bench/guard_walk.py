"""What the runtime guard costs at a DataLoader start: `Guard.check(loader)` on datasets with
10,000 attributes (flat: one object; nested: 100 holders of 100; mixed values: ints, strings,
floats, short lists, dicts, a few numpy arrays), each with one live sqlite3 connection deep
inside (so the walk finds something and builds its finding). CPU time (`time.process_time`),
median of many repetitions, under fork and spawn; no worker is started (the check is what the
guard adds before torch starts them). Off, the guard costs nothing: torch's iterator is not
wrapped and nothing of workersafe is imported.

    PYTHONPATH=src python bench/guard_walk.py [--reps 200]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from workersafe.guard.hook import Guard
from workersafe.guard.walk import walk

ATTRIBUTES = 10_000


class Holder:
    pass


class Wide(Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> int:
        return index


def _value(i: int) -> Any:
    kind = i % 10
    if kind in (0, 1, 2):
        return i
    if kind in (3, 4):
        return f"value-{i}"
    if kind == 5:
        return float(i)
    if kind == 6:
        return [i, i + 1, i + 2]
    if kind == 7:
        return {"a": i, "b": str(i)}
    if kind == 8:
        return (i, "x")
    return np.zeros(4) if i % 100 == 9 else None


def flat() -> Wide:
    dataset = Wide()
    for i in range(ATTRIBUTES):
        setattr(dataset, f"attr{i}", _value(i))
    holder = Holder()
    holder.conn = sqlite3.connect(":memory:")  # type: ignore[attr-defined]
    dataset.attr9999 = holder  # type: ignore[attr-defined]
    return dataset


def nested() -> Wide:
    dataset = Wide()
    for h in range(100):
        holder = Holder()
        for i in range(100):
            setattr(holder, f"attr{i}", _value(h * 100 + i))
        setattr(dataset, f"holder{h}", holder)
    dataset.holder99.conn = sqlite3.connect(":memory:")  # type: ignore[attr-defined]
    return dataset


def measure(dataset: Wide, context: str, reps: int) -> dict[str, Any]:
    loader = DataLoader(dataset, num_workers=2, multiprocessing_context=context)
    guard = Guard(static=False)
    findings = guard.check(loader)  # warm: type caches, the registry's classes resolved
    times = []
    for _ in range(reps):
        start = time.process_time()
        guard.check(loader)
        times.append(time.process_time() - start)
    # the size of the walk `check` made (the same walk, once more, outside the timing)
    size = walk([(loader.dataset, "loader.dataset"), (loader.collate_fn, "loader.collate_fn"),
                 (loader.worker_init_fn, "loader.worker_init_fn")], guard.table,
                pickled=context != "fork")
    return {"context": context, "median_ms": round(statistics.median(times) * 1000, 3),
            "p90_ms": round(sorted(times)[int(reps * 0.9)] * 1000, 3),
            "nodes": size.nodes, "values": size.items,
            "findings": [f"{f.code} {f.path}" for f in findings]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, build in (("flat", flat), ("nested", nested)):
        for context in ("fork", "spawn"):
            row = measure(build(), context, args.reps)
            row["dataset"] = name
            rows.append(row)
            print(json.dumps(row))
    # the first report of a finding also says where the attribute was set: the engine run on
    # the class's file once (cached per file)
    guard = Guard(static=True)
    loader = DataLoader(nested(), num_workers=2, multiprocessing_context="fork")
    start = time.process_time()
    guard.check(loader)
    print(json.dumps({"first_report_with_static_lookup_ms":
                      round((time.process_time() - start) * 1000, 1)}))


if __name__ == "__main__":
    main()
