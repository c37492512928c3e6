"""Train on RemoteImages. Configured by environment variables, as a job launcher would:
WS_URL (API base URL), WS_WORKERS, WS_CONTEXT (fork/spawn/forkserver), WS_PERSISTENT, WS_EPOCHS.
Prints one JSON line: {"ok": ..., "wrong_items": ..., "error": ..., "items": ...}."""

import hashlib
import json
import os
import sys

import torch
from torch.utils.data import DataLoader

from data import RemoteImages


def expected_payload(index):
    return hashlib.sha256(f"workersafe-item-{index}".encode()).hexdigest() * 6


def count_wrong(batch):
    asked, record = batch
    pairs = zip(asked.tolist(), record["index"].tolist(), record["payload"])
    return sum(got != want or payload != expected_payload(want) for want, got, payload in pairs)


def main():
    workers = int(os.environ.get("WS_WORKERS", "4"))
    context = os.environ.get("WS_CONTEXT", "fork") if workers > 0 else None
    persistent = os.environ.get("WS_PERSISTENT", "0") == "1" and workers > 0
    epochs = int(os.environ.get("WS_EPOCHS", "3"))
    torch.manual_seed(0)
    seen = wrong = 0
    error = None
    try:
        dataset = RemoteImages(os.environ["WS_URL"], int(os.environ.get("WS_ITEMS", "64")))
        loader = DataLoader(dataset, batch_size=2, shuffle=True, num_workers=workers,
                            multiprocessing_context=context, persistent_workers=persistent,
                            timeout=60 if workers > 0 else 0)
        for _ in range(epochs):
            for batch in loader:
                seen += len(batch[0])
                wrong += count_wrong(batch)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"ok": error is None and not wrong, "wrong_items": wrong, "error": error,
                      "items": seen}))
    return 4 if error else (3 if wrong else 0)


if __name__ == "__main__":
    sys.exit(main())
