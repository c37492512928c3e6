"""Newer syntax than the running Python degrades cleanly: the CLI parses with the running
Python's `ast`, as flake8 does, so such a file gets one WS001 (a syntax error, as flake8's
E999 says) and no other finding; flake8 reports E999 and runs no plugin on it; nothing crashes.
Syntax the running Python knows is analysed as usual. .ci/other-pythons runs this
(with the rest of the non-torch suite) on 3.9, 3.10, 3.12 and 3.13."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ecosystem_util import SINGLE_FILE, SINGLE_FILE_AT, flake8, workersafe

# 3.10 `match`, 3.11 `except*`, 3.12 `type` statements and PEP 695 generics.
NEWER = {
    (3, 10): "\n\ndef kind(x):\n    match x:\n        case [a, *_]:\n            return a\n",
    (3, 11): "\n\ndef handle():\n    try:\n        pass\n    except* ValueError:\n        pass\n",
    (3, 12): "\n\ntype Pair = tuple[int, int]\n\n\ndef first[T](xs: list[T]) -> T:\n"
             "    return xs[0]\n",
}


@pytest.mark.parametrize("version", sorted(NEWER), ids=lambda v: "py%d%d" % v)
def test_newer_syntax_degrades_cleanly(tmp_path: Path, version: tuple[int, int]) -> None:
    (tmp_path / "x.py").write_text(SINGLE_FILE + NEWER[version], encoding="utf-8")
    line, col = SINGLE_FILE_AT

    cli = workersafe("check", "--no-cache", "x.py", cwd=tmp_path)
    assert cli.returncode == 1, cli.stderr
    assert "Traceback" not in cli.stderr
    if sys.version_info[:2] >= version:
        assert cli.stdout.startswith(f"x.py:{line}:{col}: WS101 ")
    else:
        assert cli.stdout.count("\n") == 1 and " WS001 " in cli.stdout \
            and "syntax error" in cli.stdout, cli.stdout
        # the message says whose grammar refused it: the file may be valid for a newer Python
        assert "read with Python %d.%d's grammar" % sys.version_info[:2] in cli.stdout

    proc = flake8("--isolated", "--select=WS,E999", "x.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "WS001" not in proc.stdout
    if sys.version_info[:2] >= version:
        assert proc.stdout.startswith(f"x.py:{line}:{col}: WS101 ")
    else:
        assert "E999" in proc.stdout and "WS101" not in proc.stdout


def test_declared_python_versions() -> None:
    """pyproject declares what .ci/other-pythons and .ci/run test."""
    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert 'requires-python = ">=3.9"' in text
    for minor in range(9, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in text
    script = (root / ".ci" / "other-pythons").read_text(encoding="utf-8")
    assert '"3.9 3.10 3.12 3.13"' in script
