"""Golden fix cases in fixtures/fix/: `<case>.py` → `<case>.fixed.py` (byte for byte; notebooks
`<case>.ipynb` → `<case>.fixed.ipynb`), folders
for multi-file cases, and `# expect-unfixable: <words>` for cases that must be refused (with
golden files too: fixed in part, the rest refused with those words)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from expectations import FIXTURES
from workersafe.cli import main

FIX = FIXTURES / "fix"
_OPTIONS = re.compile(rb"#\s*workersafe-fix:\s*(\{.*\})")
_UNFIXABLE = re.compile(rb"#\s*expect-unfixable:\s*(.+)")


def _cases() -> list[Path]:
    if not FIX.is_dir():
        return []
    singles = [p for p in [*FIX.glob("*.py"), *FIX.glob("*.ipynb")] if not _is_golden(p)]
    folders = [p for p in FIX.iterdir() if p.is_dir()]
    return sorted(singles + folders)


def _is_golden(path: Path) -> bool:
    return path.name.endswith((".fixed.py", ".fixed.ipynb"))


def _golden(path: Path) -> Path:
    """The golden file of an input: `a.py` → `a.fixed.py`, `nb.ipynb` → `nb.fixed.ipynb`."""
    return path.with_name(f"{path.stem}.fixed{path.suffix}")


CASES = _cases()


def _inputs(case: Path) -> list[Path]:
    if case.is_file():
        return [case]
    return sorted(p for p in [*case.rglob("*.py"), *case.rglob("*.ipynb")] if not _is_golden(p))


def _options(case: Path) -> dict:
    for path in _inputs(case):
        match = _OPTIONS.search(path.read_bytes())
        if match:
            return json.loads(match.group(1))
    return {}


@dataclass
class _Fixed:
    returncode: int
    stdout: bytes
    stderr: bytes


def _run_fix(target: Path, options: dict, *extra: str) -> _Fixed:
    """`workersafe fix` on the case, in this process (two runs per case: a new interpreter
    for each cost more than the fix; the CLI's own tests run it as a program), from the
    case's folder."""
    argv = ["fix", "--no-cache", str(target), *extra]
    if "strategy" in options:
        argv += ["--strategy", options["strategy"]]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(target if target.is_dir() else target.parent)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(here)
    return _Fixed(code, out.getvalue().encode(), err.getvalue().encode())


def _copy(case: Path, tmp_path: Path) -> Path:
    if case.is_file():
        target = tmp_path / case.name
        shutil.copyfile(case, target)
        return target
    target = tmp_path / case.name
    shutil.copytree(case, target, ignore=shutil.ignore_patterns("*.fixed.py", "*.fixed.ipynb"))
    return target


def test_enough_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden(case: Path, tmp_path: Path) -> None:
    target = _copy(case, tmp_path)
    proc = _run_fix(target, _options(case))
    # exit 1 exactly while a finding is left (a fix that wrote every fix exits 0)
    assert proc.returncode == (0 if b" 0 left" in proc.stdout else 1), proc.stderr.decode()
    unfixable = [m.group(1).strip() for p in _inputs(case)
                 for m in [_UNFIXABLE.search(p.read_bytes())] if m]
    golden = [p for p in _inputs(case) if _golden(p).exists()]
    if unfixable:
        out = proc.stdout.decode()
        for words in unfixable:
            assert words.decode() in out, out
        if not golden:  # refused whole: nothing written
            for path in _inputs(case):
                copied = target if case.is_file() else target / path.relative_to(case)
                assert copied.read_bytes() == path.read_bytes(), f"{path.name} was changed"
            return
        assert proc.returncode == 1, "findings were left unfixed: fix must exit 1"
    for path in _inputs(case):
        expected = _golden(path)
        copied = target if case.is_file() else target / path.relative_to(case)
        want = expected.read_bytes() if expected.exists() else path.read_bytes()
        assert copied.read_bytes() == want, f"{path.name} differs from its golden file"
    again = _run_fix(target, _options(case), "--diff")
    assert again.stdout == b"", "a second fix would change the code again"
