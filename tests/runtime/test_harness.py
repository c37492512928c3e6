"""The preloaded interpreter (`preloaded.py`) runs a program as `python program.py` would:
the same observations from a probe program run both ways, its exit codes, a spawned worker
that unpickles a class of the program's `__main__`, and a hard timeout that leaves no process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from runtime_harness import Config, Target, run_program

pytestmark = pytest.mark.runtime

PROBE = '''\
import atexit, json, multiprocessing, os, sys, threading

class Item:
    def __init__(self, value):
        self.value = value

def doubled(item):
    return item.value * 2

def main():
    with multiprocessing.get_context(os.environ["WS_CONTEXT"]).Pool(1) as pool:
        spawned = pool.map(doubled, [Item(3)])
    ran_late = []
    threading.Thread(target=lambda: ran_late.append(1)).start()
    atexit.register(lambda: print("atexit ran", flush=True))
    print(json.dumps({
        "ok": True, "name": __name__, "argv": sys.argv, "cwd": os.getcwd(),
        "path0": sys.path[0], "workers": os.environ["WS_WORKERS"], "spawned": spawned,
        "own_session": os.getsid(0) == os.getpid(), "stdin": sys.stdin.read(),
    }))
    sys.exit(int(os.environ.get("WS_EXIT", "0")))

if __name__ == "__main__":
    main()
'''


def _run(program: Path, preload: str, context: str, extra: dict[str, str] | None = None,
         timeout: float | None = None) -> object:
    target = Target(base_url="https://127.0.0.1:9", ca_bundle=program, extra_env=extra or {})
    before = os.environ.get("WORKERSAFE_RUNTIME_PRELOAD")
    os.environ["WORKERSAFE_RUNTIME_PRELOAD"] = preload
    try:
        return run_program(program, target, Config(workers=2, context=context), timeout)
    finally:
        if before is None:
            del os.environ["WORKERSAFE_RUNTIME_PRELOAD"]
        else:
            os.environ["WORKERSAFE_RUNTIME_PRELOAD"] = before


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_a_program_sees_what_python_program_py_gives_it(tmp_path: Path, context: str) -> None:
    program = tmp_path / "probe.py"
    program.write_text(PROBE, encoding="utf-8")
    fresh, preloaded = (_run(program, preload, context) for preload in ("0", "1"))
    for outcome in (fresh, preloaded):
        assert outcome.ok, outcome.describe()
        assert outcome.stdout.endswith("atexit ran\n")
    assert preloaded.summary == fresh.summary
    assert fresh.summary == {
        "ok": True, "name": "__main__", "argv": [str(program)], "cwd": str(tmp_path),
        "path0": str(tmp_path), "workers": "2", "spawned": [6], "own_session": True,
        "stdin": "",
    }


@pytest.mark.parametrize("preload", ["0", "1"])
def test_exit_codes_and_uncaught_exceptions(tmp_path: Path, preload: str) -> None:
    program = tmp_path / "probe.py"
    program.write_text(PROBE, encoding="utf-8")
    assert _run(program, preload, "fork", {"WS_EXIT": "3"}).returncode == 3
    program.write_text("raise ValueError('from the program')\n", encoding="utf-8")
    failed = _run(program, preload, "fork")
    assert failed.returncode == 1
    assert failed.stderr.rstrip().endswith("ValueError: from the program")


@pytest.mark.parametrize("preload", ["0", "1"])
def test_a_timeout_kills_the_program_and_its_workers(tmp_path: Path, preload: str) -> None:
    pids = tmp_path / "pids.json"
    program = tmp_path / "hang.py"
    program.write_text(
        "import json, multiprocessing, os, sys, time\n"
        "if __name__ == '__main__':\n"
        "    child = multiprocessing.get_context('fork').Process(target=time.sleep, args=(60,))\n"
        "    child.start()\n"
        f"    open({str(pids)!r}, 'w').write(json.dumps([os.getpid(), child.pid]))\n"
        "    time.sleep(60)\n", encoding="utf-8")
    outcome = _run(program, preload, "fork", timeout=5.0)
    assert outcome.timed_out
    program_pid, worker_pid = json.loads(pids.read_text())
    deadline = time.monotonic() + 10.0  # SIGKILL was sent; dying takes a moment
    while (_running(program_pid) or _running(worker_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(program_pid) and not _running(worker_pid)


def _running(pid: int) -> bool:
    """Neither gone nor a zombie (a killed worker waits there for whoever adopted it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
