"""Every file in fixtures/lint/ is a case: its `# expect:` comments are the whole truth, for the
engine and for real flake8 alike."""

from __future__ import annotations

import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from expectations import Case, case_config, expected_in, lint_cases, python_ok
from workersafe.config import from_mapping
from workersafe.engine import Engine

CASES = lint_cases()


def engine_findings(case: Case) -> set[tuple[str, int, str]]:
    config = from_mapping(case_config(case.path), case.name)
    engine = Engine(config, link=True)
    result = engine.check_paths([str(case.path)])
    return {(case.path.name, f.line, f.code) for f in result.findings}


@lru_cache(maxsize=None)
def flake8_batch() -> dict[str, set[tuple[str, int, str]]]:
    """One flake8 run over every case without a config header (fast), parsed per file."""
    plain = [c for c in CASES if not case_config(c.path) and python_ok(c.path)]
    return _run_flake8([str(c.path) for c in plain], [])


def _run_flake8(paths: list[str], extra: list[str]) -> dict[str, set[tuple[str, int, str]]]:
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--select=WS",
           "--format=%(path)s|%(row)d|%(col)d|%(code)s", *extra, *paths]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    out: dict[str, set[tuple[str, int, str]]] = {}
    for line in proc.stdout.splitlines():
        path, row, _col, code = line.rsplit("|", 3)
        out.setdefault(Path(path).name, set()).add((Path(path).name, int(row), code))
    return out


def flake8_findings(case: Case) -> set[tuple[str, int, str]]:
    config = case_config(case.path)
    if not config:
        return flake8_batch().get(case.path.name, set())
    flags = {"extra-handles": "--workersafe-extra-handles",
             "disable-handles": "--workersafe-disable-handles",
             "dataset-bases": "--workersafe-dataset-bases",
             "target-version": "--workersafe-target-version",
             "platform": "--workersafe-platform"}
    extra = [f"{flags[k]}={v if isinstance(v, str) else ','.join(v)}"
             for k, v in config.items() if k in flags]
    return _run_flake8([str(case.path)], extra).get(case.path.name, set())


def test_enough_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=str)
def test_engine(case: Case) -> None:
    if not python_ok(case.path):
        pytest.skip("needs a newer Python")
    assert engine_findings(case) == expected_in(case.path, case.path.name)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_flake8(case: Case) -> None:
    if not python_ok(case.path):
        pytest.skip("needs a newer Python")
    assert flake8_findings(case) == expected_in(case.path, case.path.name)
