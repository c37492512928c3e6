"""What the registry's rows for media and sequence readers claim, measured: a reader the
parent opened and read, read by 4 forked DataLoader workers ("shared"); each worker opening
its own in place of it, the inherited one dropped in the worker (the fix's shape,
"replaced"); each worker opening its own beside it, the inherited one kept alive
("kept-beside"); and pickling one (what spawn and forkserver workers need).

Kinds: `cv` (`cv2.VideoCapture`), `decord` (`decord.VideoReader`), `av` (`av.open`), all on one
60-frame MJPEG video whose frame i is filled with i * 4; `soundfile` (`soundfile.SoundFile`) on
a WAV file whose sample i is i % 30000; `pyfaidx` (`pyfaidx.Fasta`) and `pysam`
(`pysam.FastaFile`) on an indexed FASTA file of four 100,000-base records, each item 64 bases
at a position of its own. Needs numpy, torch, opencv-python-headless (to write the video) and
the library measured; none is a test dependency.

Usage: ``python bench/readers_fork.py KIND [RUNS]``; each way runs RUNS times (pickle
once), each in its own process with a 60 s DataLoader timeout. Measured (opencv 5.1, decord
0.6, av 18.1, soundfile 0.14): cv and decord, shared and replaced time out, kept-beside all
right; av, every way right (5 runs); soundfile, shared wrong in 5 runs of 6 (1 to 46 of 2,000
reads, no exception), replaced right (6 runs); none pickles."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from typing import Any

WAYS = ("shared", "replaced", "kept-beside", "pickle")
FRAMES = 60
SAMPLES = 48000 * 4
RECORDS, BASES = 4, 100_000
SEQUENCE_KINDS = ("pyfaidx", "pysam")


def bases(record: int, start: int, end: int) -> str:
    """The FASTA file's record `record`, bases start..end: no run of 64 repeats elsewhere."""
    return "".join("ACGT"[(j * j + 7 * j + record) % 4] for j in range(start, end))


def opened(kind: str, path: str) -> Any:
    if kind == "cv":
        import cv2

        return cv2.VideoCapture(path)
    if kind == "decord":
        import decord

        return decord.VideoReader(path)
    if kind == "av":
        import av

        return av.open(path)
    if kind == "pyfaidx":
        import pyfaidx

        return pyfaidx.Fasta(path)
    if kind == "pysam":
        import pysam

        return pysam.FastaFile(path)
    import soundfile

    return soundfile.SoundFile(path)


def read_at(kind: str, handle: Any, i: int) -> tuple[int, int]:
    """(what the item should hold, what was read): within 3 of each other when right."""
    if kind in SEQUENCE_KINDS:
        record, start = i % RECORDS, (i * 7919) % (BASES - 64)
        name = f"chr{record}"
        read = handle[name][start:start + 64].seq if kind == "pyfaidx" \
            else handle.fetch(name, start, start + 64)
        return record, record if read == bases(record, start, start + 64) else -10
    if kind == "soundfile":
        start = (i * 97) % (SAMPLES - 64)
        handle.seek(start)
        samples = handle.read(64, dtype="int16")
        last_right = int(samples[-1]) == (start + 63) % 30000
        return start % 30000, int(samples[0]) if last_right else -1
    index = i % FRAMES
    if kind == "cv":
        import cv2

        handle.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, frame = handle.read()
        return index * 4, int(frame[0, 0, 0]) if ok else -1
    if kind == "decord":
        return index * 4, int(handle[index].asnumpy()[0, 0, 0])
    handle.seek(0)
    for k, frame in enumerate(handle.decode(video=0)):
        if k == index:
            return index * 4, int(frame.to_ndarray(format="rgb24")[0, 0, 0])
    return index * 4, -1


def one_way(kind: str, way: str, path: str) -> str:
    from torch.utils.data import DataLoader, Dataset, get_worker_info

    class Items(Dataset):  # type: ignore[misc]
        def __init__(self) -> None:
            self.handle = opened(kind, path)
            read_at(kind, self.handle, 3)  # the parent reads first
            self.kept: list[Any] = []

        def __len__(self) -> int:
            return 2000 if kind == "soundfile" or kind in SEQUENCE_KINDS else 600

        def __getitem__(self, i: int) -> tuple[int, int]:
            return read_at(kind, self.handle, i)

    def reopen(worker_id: int) -> None:
        dataset = get_worker_info().dataset
        if way == "kept-beside":
            dataset.kept.append(dataset.handle)
        dataset.handle = opened(kind, path)

    dataset = Items()
    if way == "pickle":
        try:
            pickle.dumps(dataset.handle)
        except Exception as exc:  # noqa: BLE001 - what it raises is the measurement
            return f"raises {type(exc).__name__}: {exc}"
        return "pickles"
    loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=4, timeout=60,
                        worker_init_fn=None if way == "shared" else reopen)
    wrong = total = 0
    try:
        for expected, read in loader:
            for a, b in zip(expected.tolist(), read.tolist()):
                total += 1
                wrong += abs(a - b) > 3
    except RuntimeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"{wrong} wrong of {total}"


def write_data(kind: str, folder: str) -> str:
    import numpy as np

    if kind in SEQUENCE_KINDS:
        path = os.path.join(folder, "genome.fa")
        with open(path, "w", encoding="ascii") as fasta:
            for record in range(RECORDS):
                sequence = bases(record, 0, BASES)
                fasta.write(f">chr{record}\n")
                fasta.writelines(sequence[k:k + 60] + "\n" for k in range(0, BASES, 60))
        import pysam

        pysam.faidx(path)  # the index both read (pyfaidx's own format is the same .fai)
        return path
    if kind == "soundfile":
        import soundfile

        path = os.path.join(folder, "tone.wav")
        soundfile.write(path, (np.arange(SAMPLES) % 30000).astype(np.int16), 48000,
                        subtype="PCM_16")
        return path
    import cv2

    path = os.path.join(folder, "frames.avi")
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 32))
    for i in range(FRAMES):
        writer.write(np.full((32, 32, 3), i * 4, np.uint8))
    writer.release()
    return path


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "cv"
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
                print(f"{kind} {way}: {lines[-1] if lines else proc.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
