"""What the registry's video rows (`_VIDEO`) claim, measured: a video reader the parent opened
and read, read by forked DataLoader workers; a worker opening its own in place of it (the
fix's shape: the inherited one dropped in the worker); a worker opening its own beside it
(the inherited one kept alive); and pickling one (spawn, forkserver).

Needs opencv-python-headless and decord (not test dependencies). Usage:
``python bench/video_readers_fork.py [cv|decord]``; each way runs in its own process, 4 workers,
a 60 s DataLoader timeout. Measured (opencv 5.1, decord 0.6): shared and replaced both time
out, kept beside gives every frame right, pickling raises."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile

WAYS = ("shared", "replaced", "kept-beside", "pickle")


def reader(kind: str, path: str):  # type: ignore[no-untyped-def]
    if kind == "cv":
        import cv2

        return cv2.VideoCapture(path)
    import decord

    return decord.VideoReader(path)


def frame_value(kind: str, handle, i: int) -> int:  # type: ignore[no-untyped-def]
    if kind == "cv":
        import cv2

        handle.set(cv2.CAP_PROP_POS_FRAMES, i)
        ok, frame = handle.read()
        return int(frame[0, 0, 0]) if ok else -1
    return int(handle[i].asnumpy()[0, 0, 0])


def one_way(kind: str, way: str, path: str) -> str:
    from torch.utils.data import DataLoader, Dataset

    class Frames(Dataset):  # type: ignore[misc]
        def __init__(self) -> None:
            self.handle = reader(kind, path)
            frame_value(kind, self.handle, 0)  # the parent reads first
            self.kept: list[object] = []

        def __len__(self) -> int:
            return 600

        def __getitem__(self, i: int) -> tuple[int, int]:
            return i % 60, frame_value(kind, self.handle, i % 60)

    def reopen(worker_id: int) -> None:
        from torch.utils.data import get_worker_info

        dataset = get_worker_info().dataset
        if way == "kept-beside":
            dataset.kept.append(dataset.handle)
        dataset.handle = reader(kind, path)

    dataset = Frames()
    if way == "pickle":
        try:
            pickle.dumps(dataset.handle)
        except Exception as exc:  # noqa: BLE001 - what it raises is the measurement
            return f"raises {type(exc).__name__}: {exc}"
        return "pickles"
    expected = {i: i * 4 for i in range(60)}
    loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=4, timeout=60,
                        worker_init_fn=None if way == "shared" else reopen)
    wrong = total = 0
    try:
        for index, value in loader:
            for a, b in zip(index.tolist(), value.tolist()):
                total += 1
                wrong += abs(expected[a] - b) > 3
    except RuntimeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"{wrong} wrong of {total}"


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "cv"
    if len(argv) == 3:  # a child: one way
        print(one_way(kind, argv[1], argv[2]))
        return 0
    import cv2
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "v.avi")
        writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 32))
        for i in range(60):
            writer.write(np.full((32, 32, 3), i * 4, np.uint8))
        writer.release()
        for way in WAYS:
            proc = subprocess.run([sys.executable, __file__, kind, way, path],
                                  capture_output=True, text=True, timeout=300)
            lines = (proc.stdout or proc.stderr).strip().splitlines()
            print(f"{kind} {way}: {lines[-1] if lines else proc.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
