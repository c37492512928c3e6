"""What the registry's rows for soundfile and PyAV claim, measured: a `soundfile.SoundFile` or
an `av.open` container the parent opened and read, read by 4 forked DataLoader workers; each
worker opening its own in place of it (the fix's shape); and pickling one (spawn, forkserver).

Needs soundfile and av (not test dependencies). Usage:
``python bench/soundfile_av_fork.py [soundfile|av] [RUNS]``; each way in its own process, a
60 s DataLoader timeout. Measured (soundfile 0.14, av 18.1; 4 runs each): soundfile shared
gave wrong samples in every run (1, 1, 46, 1 of 2,000 reads), replaced none; av: see
bench/RESULTS.md "Stop 39"; neither pickles."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile

WAYS = ("shared", "replaced", "pickle")
SAMPLES = 48000 * 4


def opened(kind: str, path: str):  # type: ignore[no-untyped-def]
    if kind == "soundfile":
        import soundfile

        return soundfile.SoundFile(path)
    import av

    return av.open(path)


def read_at(kind: str, handle, i: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(what was asked, what was read): equal when the read is right."""
    if kind == "soundfile":
        start = (i * 97) % (SAMPLES - 64)
        handle.seek(start)
        samples = handle.read(64, dtype="int16")
        return start % 30000, int(samples[0]) if int(samples[-1]) == (start + 63) % 30000 else -1
    index = i % 20
    handle.seek(0)
    for k, frame in enumerate(handle.decode(handle.streams.video[0])):
        if k == index:
            return index * 12, int(frame.to_ndarray(format="rgb24")[0, 0, 0])
    return index * 12, -1


def one_way(kind: str, way: str, path: str) -> str:
    from torch.utils.data import DataLoader, Dataset

    class Items(Dataset):  # type: ignore[misc]
        def __init__(self) -> None:
            self.handle = opened(kind, path)
            read_at(kind, self.handle, 3)  # the parent reads first

        def __len__(self) -> int:
            return 2000 if kind == "soundfile" else 200

        def __getitem__(self, i: int) -> tuple[int, int]:
            return read_at(kind, self.handle, i)

    def reopen(worker_id: int) -> None:
        from torch.utils.data import get_worker_info

        get_worker_info().dataset.handle = opened(kind, path)

    dataset = Items()
    if way == "pickle":
        try:
            pickle.dumps(dataset.handle)
        except Exception as exc:  # noqa: BLE001 - what it raises is the measurement
            return f"raises {type(exc).__name__}: {exc}"
        return "pickles"
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=4, timeout=60,
                        worker_init_fn=None if way == "shared" else reopen)
    wrong = total = 0
    try:
        for asked, read in loader:
            for a, b in zip(asked.tolist(), read.tolist()):
                total += 1
                wrong += abs(a - b) > 3
    except RuntimeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"{wrong} wrong of {total}"


def write_data(kind: str, folder: str) -> str:
    import numpy as np

    if kind == "soundfile":
        import soundfile

        path = os.path.join(folder, "tone.wav")
        samples = (np.arange(SAMPLES) % 30000).astype(np.int16)  # sample i is i % 30000
        soundfile.write(path, samples, 48000, subtype="PCM_16")
        return path
    import av

    path = os.path.join(folder, "frames.avi")
    with av.open(path, "w") as container:
        stream = container.add_stream("mjpeg", rate=10)
        stream.width = stream.height = 32
        stream.pix_fmt = "yuvj420p"
        for i in range(20):
            frame = av.VideoFrame.from_ndarray(np.full((32, 32, 3), i * 12, np.uint8),
                                               format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "soundfile"
    if len(argv) == 3:  # a child: one way
        print(one_way(kind, argv[1], argv[2]))
        return 0
    runs = int(argv[1]) if len(argv) > 1 else 1
    with tempfile.TemporaryDirectory() as tmp:
        path = write_data(kind, tmp)
        for way in WAYS:
            for _ in range(1 if way == "pickle" else runs):
                proc = subprocess.run([sys.executable, __file__, kind, way, path],
                                      capture_output=True, text=True, timeout=300)
                lines = (proc.stdout or proc.stderr).strip().splitlines()
                print(f"{kind} {way}: {lines[-1] if lines else proc.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
