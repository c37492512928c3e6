"""The fixer under failure: a read-only file is reported and left alone, and a fixer killed
at any moment leaves every file either as it was or as the fix makes it, byte for byte."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import libcst
import pytest

from expectations import FIXTURES

CASE = FIXTURES / "lint" / "ws101_h5py_file.py"


def _fix(target: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workersafe", "fix", "--no-cache", *extra,
                           str(target)], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores file permissions")
def test_read_only_file_is_reported_and_untouched(tmp_path: Path) -> None:
    target = tmp_path / "ds.py"
    shutil.copyfile(CASE, target)
    target.chmod(stat.S_IRUSR)
    proc = _fix(tmp_path)
    assert proc.returncode == 2 and "not written" in proc.stderr
    assert target.read_bytes() == CASE.read_bytes()


def test_read_only_mode_is_honoured_even_as_root(tmp_path: Path) -> None:
    """As root, a read-only file can still be replaced, so use the fixer's own check: the
    file mode has no write bit."""
    target = tmp_path / "ds.py"
    shutil.copyfile(CASE, target)
    target.chmod(stat.S_IRUSR | stat.S_IRGRP)
    proc = _fix(tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "read-only" in proc.stderr
    assert target.read_bytes() == CASE.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["ds.py"]  # no temp file left behind


def test_killed_fixer_leaves_old_or_new_files(tmp_path: Path) -> None:
    """The promise: a fixer killed at any moment leaves every file with its old content or
    its new content, byte for byte. A kill between creating a temp file and renaming it may
    leave that temp file (`.workersafe-<pid>-*.tmp`, named for the killed process); the next
    run removes it, so after a rerun the tree is fully fixed and holds nothing else."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(12):
        shutil.copyfile(CASE, tree / f"ds_{index}.py")
    expected = tmp_path / "expected"
    shutil.copytree(tree, expected)
    _fix(expected)
    new = {p.name: p.read_bytes() for p in expected.iterdir()}
    old = CASE.read_bytes()
    assert all(data != old for data in new.values())
    rng = random.Random(1234)
    for _ in range(4):
        work = tmp_path / f"run{_}"
        shutil.copytree(tree, work)
        proc = subprocess.Popen([sys.executable, "-m", "workersafe", "fix", "--no-cache",
                                 str(work)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        for path in work.iterdir():
            if path.suffix != ".py":
                assert re.fullmatch(rf"\.workersafe-{proc.pid}-.*\.tmp", path.name), \
                    f"left behind: {path.name}"
                continue
            data = path.read_bytes()
            assert data in (old, new[path.name]), f"{path.name} is neither old nor new"
            libcst.parse_module(data)
        _fix(work)
        assert {p.name: p.read_bytes() for p in work.iterdir()} == new
