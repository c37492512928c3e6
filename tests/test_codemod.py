"""`workersafe fix` through libcst's own codemod runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from expectations import FIXTURES

CONFIG = 'generated_code_marker: "@generated"\nformatter: []\nblacklist_patterns: []\n' \
         "modules:\n- workersafe\nrepo_root: .\n"


def _codemod(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / ".libcst.codemod.yaml").write_text(CONFIG)
    return subprocess.run([sys.executable, "-m", "libcst.tool", "codemod",
                           "codemod.WorkerSafeCommand", "--no-format", *args, "a.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_codemod_matches_workersafe_fix(tmp_path: Path) -> None:
    source = FIXTURES / "lint" / "ws101_h5py_file.py"
    shutil.copyfile(source, tmp_path / "a.py")
    proc = _codemod(tmp_path)
    assert proc.returncode == 0, proc.stderr
    via_codemod = (tmp_path / "a.py").read_text()
    shutil.copyfile(source, tmp_path / "a.py")
    subprocess.run([sys.executable, "-m", "workersafe", "fix", "--no-cache", "a.py"],
                   cwd=tmp_path, check=False, capture_output=True, timeout=300)
    assert via_codemod == (tmp_path / "a.py").read_text()
    assert "def open_handles(self):" in via_codemod


def test_codemod_lazy_and_skip(tmp_path: Path) -> None:
    shutil.copyfile(FIXTURES / "lint" / "ws101_h5py_file.py", tmp_path / "a.py")
    proc = _codemod(tmp_path, "--strategy", "lazy")
    assert proc.returncode == 0, proc.stderr
    assert "@property" in (tmp_path / "a.py").read_text()
    again = _codemod(tmp_path, "--strategy", "lazy")
    assert "Skipped 1 files" in again.stderr
