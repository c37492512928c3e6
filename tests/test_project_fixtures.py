"""Every folder in fixtures/projects/ is a small repository: `# expect:` is what checking the
whole folder reports, `# expect-alone:` what checking one file on its own reports."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from expectations import Case, expected_in, project_cases
from workersafe.config import Config, load_pyproject
from workersafe.engine import Engine

CASES = project_cases()


def _files(case: Case) -> list[Path]:
    return sorted(p for p in case.path.rglob("*.py") if not p.name.endswith(".fixed.py"))


def _config(case: Case) -> Config:
    """A case with its own pyproject.toml (a `requires-python`, a [tool.workersafe]) uses it."""
    pyproject = case.path / "pyproject.toml"
    return load_pyproject(str(pyproject)) if pyproject.is_file() else Config()


def _rel(case: Case, path: str) -> str:
    return Path(os.path.relpath(path, case.path)).as_posix()


def _expected(case: Case, alone: bool) -> set[tuple[str, int, str]]:
    out: set[tuple[str, int, str]] = set()
    for path in _files(case):
        out |= expected_in(path, path.relative_to(case.path).as_posix(), alone=alone)
    return out


def test_enough_projects() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=str)
def test_repo_mode(case: Case) -> None:
    result = Engine(_config(case)).check_paths([str(case.path)])
    found = {(_rel(case, f.path), f.line, f.code) for f in result.findings}
    assert found == _expected(case, alone=False)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_each_file_alone(case: Case) -> None:
    found: set[tuple[str, int, str]] = set()
    for path in _files(case):
        result = Engine(_config(case)).check_paths([str(path)])
        found |= {(_rel(case, f.path), f.line, f.code) for f in result.findings}
    assert found == _expected(case, alone=True)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_no_link_equals_alone(case: Case) -> None:
    result = Engine(_config(case), link=False).check_paths([str(case.path)])
    found = {(_rel(case, f.path), f.line, f.code) for f in result.findings}
    assert found == _expected(case, alone=True)


_UNPARSED = re.compile(r"#\s*expect-unparsed:")
UNPARSED_CASES = [c for c in CASES if any(_UNPARSED.search(p.read_text(encoding="utf-8"))
                                          for p in _files(c))]


def test_enough_unparsed_cases() -> None:
    assert UNPARSED_CASES


@pytest.mark.parametrize("case", UNPARSED_CASES, ids=str)
def test_files_that_cannot_matter_are_not_parsed(case: Case) -> None:
    """A file marked `# expect-unparsed:` cannot add to a finding (the marker says why): the
    selection leaves it unparsed in repo mode."""
    result = Engine(_config(case)).check_paths([str(case.path)])
    parsed = {os.path.realpath(p) for p in result.facts}
    marked = {os.path.realpath(p) for p in _files(case)
              if _UNPARSED.search(p.read_text(encoding="utf-8"))}
    assert parsed and not parsed & marked
