"""What `fix` adds to annotated code passes `mypy --strict`: over every golden case of an
annotated project (a folder of fixtures/fix/ whose mypy configuration sets `strict` or
`disallow_untyped_defs`: `mypy.ini`, `pyproject.toml` or `setup.cfg`), the fixed
files are checked, with the inputs as the baseline. An input mypy accepts must stay accepted
once fixed; an input with errors of its own may keep them, but no line the fix added may have
one. (Libraries without type information, h5py and lmdb, are Any: the config the test writes
ignores their missing imports.)"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from expectations import FIXTURES

FIX = FIXTURES / "fix"
_ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+): error: (?P<message>.*)$", re.M)
_CONFIG = "[mypy]\nstrict = True\nignore_missing_imports = True\n"


_STRICT = re.compile(r"^\s*(strict|disallow_untyped_defs)\s*=\s*(true|True|1)\s*$", re.M)
_MYPY_CONFIGS = ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg")


def _typed_cases() -> list[Path]:
    """The folders of an annotated project whose mypy configuration requires annotations."""
    if not FIX.is_dir():
        return []
    return sorted(p for p in FIX.iterdir() if p.is_dir() and any(
        (p / name).is_file() and _STRICT.search((p / name).read_text(encoding="utf-8"))
        for name in _MYPY_CONFIGS))


CASES = _typed_cases()


def _inputs(case: Path) -> list[Path]:
    return sorted(p for p in case.rglob("*.py") if not p.name.endswith(".fixed.py"))


def _golden(path: Path) -> Path:
    fixed = path.with_name(path.name[:-3] + ".fixed.py")
    return fixed if fixed.exists() else path


def _tree(case: Path, root: Path, fixed: bool) -> list[str]:
    """The case's files as they read before (or after) the fix, under `root`."""
    names = []
    for path in _inputs(case):
        target = root / path.relative_to(case)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_golden(path) if fixed else path, target)
        names.append(str(path.relative_to(case)))
    return names


def _mypy(root: Path, files: list[str], cache: Path) -> dict[str, list[tuple[int, str]]]:
    (root / "mypy.ini").write_text(_CONFIG, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini",
         "--cache-dir", str(cache), "--no-error-summary", "--hide-error-context",
         "--no-pretty", "--no-color-output",
         *files],
        cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr + proc.stdout
    errors: dict[str, list[tuple[int, str]]] = {}
    for match in _ERROR.finditer(proc.stdout):
        errors.setdefault(match["path"], []).append((int(match["line"]), match["message"]))
    return errors


def _added_lines(before: str, after: str) -> set[int]:
    """The 1-based lines of `after` that do not come from `before`."""
    old, new = before.splitlines(), after.splitlines()
    kept: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for block in matcher.get_matching_blocks():
        kept.update(range(block.b + 1, block.b + block.size + 1))
    return set(range(1, len(new) + 1)) - kept


def test_typed_cases_exist() -> None:
    assert len(CASES) >= 3
    # each annotates something: a line the fix added to a file of every case is annotated
    annotated = re.compile(r"\) -> \S|^\s*[\w.]+: [^=]+ = ")
    for case in CASES:
        assert any(annotated.search(line)
                   for p in _inputs(case) if _golden(p) != p
                   for new in [_golden(p).read_text(encoding="utf-8").splitlines()]
                   for number in _added_lines(p.read_text(encoding="utf-8"), "\n".join(new))
                   for line in [new[number - 1]]), case


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_fixed_passes_mypy_strict(case: Path, tmp_path: Path, mypy_cache: Path) -> None:
    before_root, after_root = tmp_path / "before", tmp_path / "after"
    files = _tree(case, before_root, fixed=False)
    _tree(case, after_root, fixed=True)
    before = _mypy(before_root, files, mypy_cache)
    after = _mypy(after_root, files, mypy_cache)
    if not before:  # a clean input stays clean
        assert not after, f"the fix made mypy --strict fail: {after}"
        return
    for name in files:
        path = case / name
        added = _added_lines(path.read_text(encoding="utf-8"),
                             _golden(path).read_text(encoding="utf-8"))
        bad = [(line, message) for line, message in after.get(name, []) if line in added]
        assert not bad, f"{name}: mypy --strict errors in lines the fix added: {bad}"
