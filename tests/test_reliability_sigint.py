"""Ctrl-C: `workersafe check` on a large tree exits within seconds, with exit code 130, one
line on stderr and no traceback, whether the interrupt reaches only the main process (`kill
-INT`) or the whole process group (a terminal's Ctrl-C, which the parse workers receive too),
and whenever it arrives (discovery, pool start-up, mid-parse); no worker is left behind.

(Interrupting `fix` while it writes is tested with the fixer's write tests.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reliability_util import SAMPLE

# (Before Python 3.11 an interrupted pool's exit hung on its feeder thread: parallel._drain.)
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

FILLER = """

class Filler{i}(Dataset):
    def __init__(self, n):
        self.items = [n, n + {i}, n * {i}]
        self.table = {{"a": n, "b": [x for x in range(n) if x % {i}]}}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        return self.items[k] + self.table["a"] * {i}
"""


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough candidate code (~900k lines) that the analysis takes tens of seconds (it runs
    at ~70k lines/s per core)."""
    root = tmp_path_factory.mktemp("sigint")
    for n in range(1200):
        body = SAMPLE + "".join(FILLER.format(i=n * 1000 + i) for i in range(60))
        (root / f"mod_{n:03d}.py").write_text(body)
    return root


@pytest.fixture(scope="module")
def full_run(big_tree: Path) -> float:
    """Wall seconds of the whole run, uninterrupted, measured on this machine now: promptness
    is judged against it (a ratio stays meaningful on a busy machine; a bound in seconds did
    not: 5.07 s against 5 s while other work shared the two cores)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "workersafe", "check", "--no-cache", "--no-prefilter",
                    "-j", "2", str(big_tree)], capture_output=True, timeout=600)
    return time.monotonic() - started


def _assert_prompt(elapsed: float, full: float, delay: float) -> None:
    """The interrupted run stopped well before the work it had left (half of it at most)."""
    left = full - delay
    assert left > 2 * elapsed, \
        f"{elapsed:.1f} s to exit after SIGINT, with {left:.1f} s of the run left"


def _workers_of(tag: str) -> list[int]:
    """Live processes started by the run tagged `tag` (Linux /proc; [] elsewhere)."""
    found = []
    if not os.path.isdir("/proc"):
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if f"WORKERSAFE_SIGINT_TEST={tag}".encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _interrupt(root: Path, delay: float, group: bool, *extra: str) -> tuple[int, str, float]:
    tag = uuid.uuid4().hex
    env = dict(os.environ, WORKERSAFE_SIGINT_TEST=tag, PYTHONDONTWRITEBYTECODE="1")
    env.pop("WORKERSAFE_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "workersafe", "check", "--no-cache", "--no-prefilter", *extra,
         str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
        start_new_session=True)
    time.sleep(delay)
    assert proc.poll() is None, "the run ended before the interrupt: make the tree bigger"
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running 60 s after SIGINT (delay {delay}, group {group})")
    elapsed = time.monotonic() - sent
    deadline = time.monotonic() + 5
    while _workers_of(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _workers_of(tag), "parse workers outlived the interrupted run"
    return proc.returncode, err.decode("utf-8", "replace"), elapsed


# one_python: interrupting a 900k-line run four times is version-independent work; the main
# suite does it once
@pytest.mark.one_python
@pytest.mark.parametrize("delay,group", [
    (0.4, True),   # starting up / discovering
    (1.5, True),   # the parse pool starting
    (4.0, True),   # mid-parse: every process gets the signal
    (4.0, False),  # mid-parse: only the main process does
])
def test_sigint_exits_promptly_with_130(
        big_tree: Path, full_run: float, delay: float, group: bool) -> None:
    code, err, elapsed = _interrupt(big_tree, delay, group, "-j", "2")
    assert code == 130, (code, err)
    assert err == "workersafe: interrupted\n", err
    _assert_prompt(elapsed, full_run, delay)


def test_sigint_without_a_pool(big_tree: Path, full_run: float) -> None:
    code, err, elapsed = _interrupt(big_tree, 2.0, True, "-j", "1")
    assert code == 130, (code, err)
    assert err == "workersafe: interrupted\n", err
    _assert_prompt(elapsed, full_run, 2.0)  # one process does the work two did: more is left
