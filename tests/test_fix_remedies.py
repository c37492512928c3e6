"""The worker_init_fn remedies' fix (WS301/WS302, latent WS311/WS312) beyond what golden files
show: the editor's quick fix of one finding fixes its twin and says so, the dataset's file is
written before the training script that imports the new worker_init_fn, and `check` marks
the findings fixable. The rewrites themselves are golden pairs in fixtures/fix/ (remedy_*,
mf_remedy_*, unfixable_remedy_*)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from expectations import FIXTURES
from workersafe.config import Config
from workersafe.engine import Engine
from workersafe.fix.apply import fix_result, write_order
from workersafe.fixes import rewrite
from workersafe.ruletable import codes_fixed_as

SUBSET = FIXTURES / "fix" / "remedy_subset_configured.py"
OTHER_FILE = FIXTURES / "fix" / "mf_remedy_worker_init_in_train"


def test_the_rule_table_names_the_remedy_codes_the_rewrite_fixes() -> None:
    assert codes_fixed_as("worker-init-only") == ("WS301", "WS302", "WS311", "WS312")


@pytest.mark.parametrize("chosen", ["WS302", "WS311"])
def test_quick_fix_of_one_finding_fixes_its_twin(chosen: str, tmp_path: Path) -> None:
    path = tmp_path / SUBSET.name
    shutil.copyfile(SUBSET, path)
    engine = Engine(Config())
    result = engine.check_paths([str(path)])
    assert sorted(f.code for f in result.findings) == ["WS302", "WS311"]
    done = rewrite(engine, result, "worker-init", only=lambda f: f.code == chosen)
    assert sorted(f.code for f in done.fixed) == ["WS302", "WS311"], done.notes
    expected = SUBSET.with_name(SUBSET.stem + ".fixed.py").read_text()
    assert done.new_texts == {str(path): expected}


def test_dataset_file_is_written_before_the_script_importing_its_worker_init(
        tmp_path: Path) -> None:
    """The finding sits in data.py, the worker_init_fn in train.py; data.py is renamed so that
    it sorts after train.py, and still comes first."""
    shutil.copyfile(OTHER_FILE / "data.py", tmp_path / "zz_data.py")
    train = (OTHER_FILE / "train.py").read_text().replace("from data import",
                                                          "from zz_data import")
    (tmp_path / "train.py").write_text(train)
    engine = Engine(Config())
    result = engine.check_paths([str(tmp_path)])
    fixed = fix_result(engine, result, "worker-init")
    assert [o.status for o in fixed.outcomes] == ["fixed"], [o.note for o in fixed.outcomes]
    assert [Path(p).name for p in write_order(fixed)] == ["zz_data.py", "train.py"]


def test_check_marks_the_remedy_fixable(tmp_path: Path) -> None:
    path = tmp_path / SUBSET.name
    shutil.copyfile(SUBSET, path)
    proc = subprocess.run([sys.executable, "-m", "workersafe", "check", "--no-cache",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(line.endswith("[fixable]") for line in lines), proc.stdout
