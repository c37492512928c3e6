"""Run commands as whole processes: wall time, peak RSS, exit code; A/B alternation."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

OK_EXIT_CODES = (0, 1)  # 0 clean, 1 findings: both are a completed run
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Command:
    """One command line, run in ``cwd``, optionally with a file on stdin."""

    argv: tuple[str, ...]
    cwd: Path
    stdin: Path | None = None
    env: tuple[tuple[str, str], ...] = ()

    def display(self) -> str:
        text = f"(cd {shlex.quote(str(self.cwd))} && "
        text += " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        text += (" " if self.env else "") + shlex.join(self.argv)
        if self.stdin is not None:
            text += f" < {shlex.quote(str(self.stdin))}"
        return text + ")"


@dataclass(frozen=True)
class Sample:
    """One timed run."""

    seconds: float
    max_rss_kib: int  # peak RSS of the largest single process of the tree (wait4)
    exit_code: int
    stderr_tail: str
    timed_out: bool = False
    cpu_s: float = 0.0  # user + system CPU of the process and the children it reaped

    @property
    def ok(self) -> bool:
        return self.exit_code in OK_EXIT_CODES and not self.timed_out


@dataclass
class Series:
    """The samples of one side of a pair."""

    command: Command
    samples: list[Sample] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.samples) and all(s.ok for s in self.samples)

    @property
    def median_s(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(s.cpu_s for s in self.samples)

    @property
    def peak_rss_kib(self) -> int:
        return max(s.max_rss_kib for s in self.samples)

    @property
    def max_rss_mib(self) -> float:
        return self.peak_rss_kib / 1024

    def first_error(self) -> Sample | None:
        return next((s for s in self.samples if not s.ok), None)

    def to_json(self) -> dict[str, object]:
        return {
            "command": self.command.display(),
            "seconds": [round(s.seconds, 4) for s in self.samples],
            "cpu_seconds": [round(s.cpu_s, 4) for s in self.samples],
            "max_rss_kib": [s.max_rss_kib for s in self.samples],
            "exit_codes": [s.exit_code for s in self.samples],
        }


def run_once(cmd: Command, timeout_s: float = DEFAULT_TIMEOUT_S) -> Sample:
    """Run ``cmd`` to completion; measure wall time and peak RSS of that process tree."""
    env = {**os.environ, **dict(cmd.env)}
    with tempfile.TemporaryFile() as err, _stdin(cmd.stdin) as stdin:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd.argv, cwd=cmd.cwd, env=env, stdin=stdin,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        status, usage, timed_out = _wait(proc, timeout_s)
        seconds = time.perf_counter() - start
        err.seek(0)
        tail = err.read()[-4000:].decode("utf-8", "replace")
    return Sample(seconds, usage.ru_maxrss, os.waitstatus_to_exitcode(status), tail, timed_out,
                  usage.ru_utime + usage.ru_stime)


def _stdin(path: Path | None) -> BinaryIO:
    return open(os.devnull if path is None else path, "rb")


def _wait(proc: subprocess.Popen[bytes],
          timeout_s: float) -> tuple[int, os.struct_rusage, bool]:
    """Block in wait4: the rusage of this child alone (ru_maxrss covers its reaped children).

    On timeout a timer kills the child's whole process group; the run counts as timed out.
    """
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return status, usage, killed.is_set()


def stats_probe(cmd: Command, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, object] | None:
    """Run ``cmd`` untimed with ``--stats`` after ``check``; return the JSON it prints."""
    argv = list(cmd.argv)
    argv.insert(argv.index("check") + 1, "--stats")
    stdin = cmd.stdin.read_bytes() if cmd.stdin else None
    try:
        result = subprocess.run(argv, cwd=cmd.cwd, env={**os.environ, **dict(cmd.env)},
                                input=stdin, capture_output=True, timeout=timeout_s,
                                check=False)
    except subprocess.TimeoutExpired:
        return None
    return parse_stats(result.stderr.decode("utf-8", "replace"))


def parse_stats(stderr: str) -> dict[str, object] | None:
    """The last JSON object found on stderr (one line or the whole text)."""
    for candidate in [*reversed(stderr.splitlines()), stderr]:
        text = candidate.strip()
        if text.startswith("{") and text.endswith("}"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


Hook = Callable[[], None]


def alternate(a: Command, b: Command, reps: int, warmup: int = 1,
              before_a: Hook | None = None, before_b: Hook | None = None,
              order: str = "alternate", timeout_s: float = DEFAULT_TIMEOUT_S,
              progress: Callable[[str], None] = lambda _msg: None) -> tuple[Series, Series]:
    """Run A and B ``reps`` times each, interleaved.

    ``order``: "alternate" (AB, BA, AB, ...), "ab" or "ba" (same order every repetition).

    ``before_*`` hooks run untimed before every run of that side (e.g. clearing a cache).
    Warm-up runs are untimed and fill the page cache. A timed-out run ends the pair.
    """
    series_a, series_b = Series(a), Series(b)
    warm_sides = ((before_a, a), (before_b, b))
    for _ in range(warmup):
        for hook, cmd in (warm_sides[::-1] if order == "ba" else warm_sides):
            _call(hook)
            if run_once(cmd, timeout_s).timed_out:
                return series_a, series_b
    for rep in range(reps):
        sides = ((before_a, series_a), (before_b, series_b))
        if order == "ba" or (order == "alternate" and rep % 2):
            sides = sides[::-1]
        for hook, series in sides:
            _call(hook)
            sample = run_once(series.command, timeout_s)
            series.samples.append(sample)
            progress(f"  rep {rep + 1}/{reps}: {describe(sample)}  "
                     f"{Path(series.command.argv[0]).name}")
            if sample.timed_out:
                return series_a, series_b
    return series_a, series_b


def describe(sample: Sample) -> str:
    text = f"{sample.seconds:8.3f} s  cpu {sample.cpu_s:8.3f} s  rc={sample.exit_code}"
    return text + ("  TIMED OUT" if sample.timed_out else "")


def _call(hook: Hook | None) -> None:
    if hook is not None:
        hook()
