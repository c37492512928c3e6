"""Properties of `workersafe fix` over every positive lint fixture and project: the fixed code
parses and compiles, re-lints without the fixed findings, a second fix changes nothing, no fix
ever fails verification, and every refusal says why."""

from __future__ import annotations

import shutil
from pathlib import Path

import libcst
import pytest

from expectations import FIXTURES, case_config, expected_in
from workersafe.config import from_mapping
from workersafe.engine import Engine
from workersafe.fix.apply import fix_result, write_all

# one_python: the fixer's properties over every fixture; the golden fix fixtures run on every Python (.ci/other-pythons skips it)
pytestmark = pytest.mark.one_python

POSITIVE = [p for p in sorted((FIXTURES / "lint").glob("*.py")) if expected_in(p, p.name)]
PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


def _fix_tree(root: Path, config, strategy: str):  # type: ignore[no-untyped-def]
    engine = Engine(config)
    before = engine.check_paths([str(root)])
    fixed = fix_result(engine, before, strategy)
    assert not write_all(before, fixed)
    return engine, before, fixed


def _compiles(text: str) -> bool:
    try:
        compile(text, "<original>", "exec")
    except SyntaxError:
        return False
    return True


def _check_properties(root: Path, config, strategy: str) -> None:  # type: ignore[no-untyped-def]
    engine, before, fixed = _fix_tree(root, config, strategy)
    assert all(o.status != "failed" for o in fixed.outcomes), [o.note for o in fixed.outcomes]
    assert all(o.note for o in fixed.outcomes if o.status == "unfixable")
    for path in fixed.new_sources:
        text = Path(path).read_text(encoding=before.sources[path].encoding)
        libcst.parse_module(text)
        if _compiles(before.sources[path].text):  # else: newer syntax than this Python
            compile(text, path, "exec")
    after = engine.check_paths([str(root)])
    fixed_codes = {(o.finding.path, o.finding.code) for o in fixed.outcomes if o.status == "fixed"}
    left = {(f.path, f.code) for f in after.findings}
    still = {(p, c) for p, c in fixed_codes if (p, c) in left and
             sum(1 for f in after.findings if (f.path, f.code) == (p, c)) >=
             sum(1 for f in before.findings if (f.path, f.code) == (p, c))}
    assert not still, f"fixed findings still reported: {still}"
    again = fix_result(engine, after, strategy)
    assert not again.new_sources, "a second fix changed the code again"


@pytest.mark.parametrize("strategy", ["worker-init", "lazy"])
@pytest.mark.parametrize("case", POSITIVE, ids=lambda p: p.stem)
def test_lint_fixture(case: Path, strategy: str, tmp_path: Path) -> None:
    target = tmp_path / case.name
    shutil.copyfile(case, target)
    _check_properties(tmp_path, from_mapping(case_config(case), case.name), strategy)


@pytest.mark.parametrize("strategy", ["worker-init", "lazy"])
@pytest.mark.parametrize("case", PROJECTS, ids=lambda p: p.name)
def test_project(case: Path, strategy: str, tmp_path: Path) -> None:
    target = tmp_path / case.name
    shutil.copytree(case, target)
    _check_properties(target, from_mapping({}, case.name), strategy)
