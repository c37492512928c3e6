"""Parsing many files: in this process, or in a spawn-based pool when there is enough work.
(A fork-based pool would be ironic here: spawn it is.)"""

from __future__ import annotations

import os
import threading
from collections import deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Sequence

from .config import Config
from .discovery import SourceFile
from .facts import FileFacts
from .registry import Registry

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# Below this much source (in one call: the selection's rounds parse separately) a pool costs
# more than it saves. Measured (bench/RESULTS.md, issue 26): a spawned worker is busy only
# after ~0.1-0.3 s of wall time (interpreter, imports, registry), and costs 0.07 s of CPU plus
# the facts pickled back; facts take ~0.3-0.45 s of CPU per MB of source. On mosaicml/streaming
# (1.2 MB parsed in three rounds) `-j 2` cost 20% more CPU than `-j 1`, and no less wall time.
# A helper pays for itself when it has several times its start-up to do: ~1.5 MB.
MIN_PARALLEL_BYTES = 1_500_000
MIN_PARALLEL_FILES = 8


def parse_files(files: Sequence[SourceFile], texts: dict[str, str], config: Config,
                jobs: int) -> tuple[dict[str, FileFacts], int]:
    """Facts for each file, and how many processes did the work."""
    if not files:
        return {}, 1
    workers = _worker_count(files, texts, jobs)
    if workers <= 1:
        registry = config.registry()
        return {f.path: _facts(f, texts[f.path], registry) for f in files}, 1
    # The parent parses too: the pool has one process fewer, and the parent's share starts at
    # once, while the pool's interpreters are still starting (~0.1 s each). (multiprocessing is
    # imported only here: a run that parses in this process does not pay for it.)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pending = deque(_balanced_batches(files, texts, workers * 16))  # largest first
    context = multiprocessing.get_context("spawn")
    out: dict[str, FileFacts] = {}
    registry = config.registry()
    helpers = workers - 1
    pool = ProcessPoolExecutor(max_workers=helpers, mp_context=context,
                               initializer=_ignore_sigint)
    in_flight: list[Future[dict[str, FileFacts]]] = []

    def refill() -> None:  # the pool takes the largest batches, two per process queued
        while pending and len(in_flight) < 2 * helpers:
            batch = pending.popleft()
            in_flight.append(pool.submit(_parse_batch, [(f, texts[f.path]) for f in batch],
                                         config))

    def collect(block: bool) -> None:
        for future in [f for f in in_flight if block or f.done()]:
            out.update(future.result())
            in_flight.remove(future)

    try:
        with _sigint_ignored():  # the workers start here and inherit it
            refill()
        while pending:  # the parent takes the smallest
            out.update({f.path: _facts(f, texts[f.path], registry) for f in pending.pop()})
            collect(block=False)
            refill()
        collect(block=True)  # not `pool.map`: it cancels on Ctrl-C, see _abandon
    except BaseException:
        _abandon(pool)
        raise
    pool.shutdown(wait=True)
    return out, workers


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ctrl-C is the parent's to handle (workers would each print a traceback, even while
    still starting up): workers are started with SIGINT ignored, which they keep."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal  # (a pool's only: a run in one process does not load it)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Ctrl-C or an error: stop now, not after every queued batch has been parsed. Workers
    are stopped first; the pool then fails its pending work itself (a cancelled future makes
    that fail in Python 3.11, and the exit then hangs on a pipe no one reads)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    # the pool's feeder may be blocked writing a batch into the pipe only the stopped workers
    # read: its manager thread then waits for it (3.11+), or the exit does (older)
    _drain(getattr(pool, "_call_queue", None))
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False)
    if manager is not None:
        # Let the pool's manager thread see the stopped workers and close the pool now: left
        # running into interpreter exit, it races with the exit hook (3.9: a traceback). It
        # takes ~0.1 s; one stuck reading a result a stopped worker had half written never
        # ends, and the exit need not wait for it (5 s here, once, was the whole delay; 2 s,
        # a Ctrl-C's whole wait, two runs in five on a tree of 1,200 files).
        manager.join(timeout=1)


def _drain(queue: object) -> None:
    """The pool's feeder thread can be blocked writing a batch into a pipe that only the
    terminated workers read; the pool's manager thread (3.11+) or the exit (before 3.11) then
    waits for it. Read the pipe empty in a daemon thread, so the feeder can finish."""
    reader = getattr(queue, "_reader", None)
    if reader is None:
        return

    def drain() -> None:
        try:
            while True:
                reader.recv_bytes()
        except Exception:  # noqa: BLE001 - closed (EOF, EBADF, a None handle): done
            pass

    threading.Thread(target=drain, name="workersafe-drain", daemon=True).start()


def _worker_count(files: Sequence[SourceFile], texts: dict[str, str], jobs: int) -> int:
    total = sum(len(texts[f.path]) for f in files)
    limit = jobs if jobs > 0 else _idle_cpus()
    if limit <= 1 or len(files) < MIN_PARALLEL_FILES or total < MIN_PARALLEL_BYTES:
        return 1
    return min(limit, len(files))


def _idle_cpus() -> int:
    """`-j` not given: the CPUs other processes leave idle (as `make -l` does), at least one.
    A helper only pays on a core of its own: on 2 cores at load 5-8, a pool for 2.1 MB of
    source cost 27-36% more CPU than one process (start-up, facts pickled both ways) and took
    longer (3.0 s against 2.5 s of wall time; bench/RESULTS.md)."""
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average (Windows): every CPU
        return cpus
    return max(1, min(cpus, int(cpus - load + 0.5)))


def _balanced_batches(files: Sequence[SourceFile], texts: dict[str, str], count: int
                      ) -> list[list[SourceFile]]:
    """Largest first into the lightest batch: keeps every worker busy until the end."""
    batches: list[list[SourceFile]] = [[] for _ in range(min(count, len(files)))]
    sizes = [0] * len(batches)
    for file in sorted(files, key=lambda f: -len(texts[f.path])):
        index = sizes.index(min(sizes))
        batches[index].append(file)
        sizes[index] += len(texts[file.path])
    return [b for b in batches if b]


def _parse_batch(items: list[tuple[SourceFile, str]], config: Config) -> dict[str, FileFacts]:
    registry = config.registry()
    return {file.path: _facts(file, text, registry) for file, text in items}


def _facts(file: SourceFile, text: str, registry: Registry) -> FileFacts:
    from .parse import file_facts

    return file_facts(text, file.path, file.module, file.is_package, registry)
