"""The WS303/WS313 fix's own verification (fix/lazyguard.unguarded_left): on the facts of
the rewritten code, every lazy open the fix guarded must now be process-checked, whether or
not WS313 is selected; and the finding carries the plan the fixer reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from expectations import FIXTURES

from workersafe.config import Config
from workersafe.engine import Engine
from workersafe.fix.lazyguard import GuardedLazy, unguarded_left

CASE = FIXTURES / "fix" / "lazy_guard_session_is_none"


def _facts(tmp_path: Path, source: Path):
    target = tmp_path / "remote.py"
    shutil.copyfile(source, target)
    result = Engine(Config()).check_paths([str(target)])
    return str(target), result


def test_the_finding_carries_the_plan(tmp_path: Path) -> None:
    _, result = _facts(tmp_path, CASE.with_suffix(".py"))
    (finding,) = result.findings
    assert finding.code == "WS303"
    plan = finding.plan
    assert plan is not None and plan.kind == "unguarded-lazy"
    assert (plan.handle, plan.class_qualname.rpartition(".")[2], plan.attr, plan.method) == (
        "requests.Session", "Remote", "session", "__getitem__")


def test_an_unguarded_open_fails_verification(tmp_path: Path) -> None:
    path, result = _facts(tmp_path, CASE.with_suffix(".py"))
    (finding,) = result.findings
    assert finding.plan is not None
    guarded = [GuardedLazy(path, finding.plan.class_qualname, "__getitem__", "session")]
    assert "still has no process check" in unguarded_left(guarded, result.facts)


def test_the_guarded_open_passes_verification(tmp_path: Path) -> None:
    path, result = _facts(tmp_path, CASE.with_name(CASE.name + ".fixed.py"))
    assert result.findings == []
    (remote,) = [c for c in result.facts[path].remedies.classes if c.qualname.endswith("Remote")]
    assert [lz.process_checked for lz in remote.lazy] == [True]
    guarded = [GuardedLazy(path, remote.qualname, "__getitem__", "session")]
    assert unguarded_left(guarded, result.facts) == ""
