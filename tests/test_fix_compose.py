"""The worker-init fix composes (fixtures/fix/mf_four_datasets: four dataset modules, two
scripts): fixing the datasets one at a time, in either order, gives the golden result of
fixing them together, byte for byte; a repeat changes nothing; and `fix`/`fix --diff` exit 1
whenever findings are left unfixed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from expectations import FIXTURES

CASE = FIXTURES / "fix" / "mf_four_datasets"
DATASETS = ["h5_dataset.py", "lmdb_dataset.py", "sqlite_dataset.py", "http_dataset.py"]
SCRIPTS = ["train.py", "evaluate.py"]


def _fix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workersafe", "fix", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / CASE.name
    shutil.copytree(CASE, target, ignore=shutil.ignore_patterns("*.fixed.py"))
    return target


@pytest.mark.parametrize("order", [DATASETS, DATASETS[::-1]], ids=["forward", "backward"])
def test_one_dataset_at_a_time_gives_the_golden_result(tmp_path: Path, order: list[str]
                                                       ) -> None:
    target = _copy(tmp_path)
    for dataset in order:
        done = _fix(target, dataset, *SCRIPTS)
        assert done.returncode == 0 and " 0 left" in done.stdout, done.stdout + done.stderr
    for path in sorted(CASE.glob("*.fixed.py")):
        name = path.name.replace(".fixed.py", ".py")
        assert (target / name).read_text() == path.read_text(), name
    again = _fix(target, "--diff", ".")
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr


def test_fix_exits_1_when_findings_are_left(tmp_path: Path) -> None:
    """A refused finding leaves nothing to write, yet both `fix` and `fix --diff` exit 1."""
    case = FIXTURES / "fix" / "unfixable_opener_name_taken.py"
    shutil.copyfile(case, tmp_path / case.name)
    for extra in (["--diff"], []):
        done = _fix(tmp_path, *extra, case.name)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "0 would fix" in done.stderr or "0 fixed" in done.stdout
    assert (tmp_path / case.name).read_bytes() == case.read_bytes()
