"""`workersafe rule`: the documentation users read from the terminal (and that SARIF's help and
the help URIs point to)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecosystem_util import ROOT, workersafe
from workersafe.docs import rule_docs

DOCS = ROOT / "src" / "workersafe" / "docs"
SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## Known limits")


def emitted_codes() -> set[str]:
    """Every code the rules (and the engine, for unreadable files) can report."""
    sources = [ROOT / "src" / "workersafe" / name for name in ("rules.py", "engine.py")]
    return {code for path in sources
            for code in re.findall(r"\"(WS\d{3})\"", path.read_text(encoding="utf-8"))}


def test_rule_prints_the_documentation(tmp_path: Path) -> None:
    proc = workersafe("rule", "WS101", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (DOCS / "WS101.md").read_text(encoding="utf-8")
    assert proc.stdout.startswith("# WS101: handle-created-in-init\n")


def test_rule_code_is_case_insensitive(tmp_path: Path) -> None:
    assert workersafe("rule", "ws101", cwd=tmp_path).stdout == \
        workersafe("rule", "WS101", cwd=tmp_path).stdout


def test_rule_all_lists_every_code_once(tmp_path: Path) -> None:
    proc = workersafe("rule", "--all", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    codes = [line.split()[0] for line in lines]
    assert codes == sorted(rule_docs())
    for line in lines:
        code, name, summary = line.split(None, 2)
        assert name == rule_docs()[code].name
        assert summary and len(line) <= 120
    assert workersafe("rule", cwd=tmp_path).stdout == proc.stdout  # no code: the list


@pytest.mark.parametrize("code", ["WS999", "E501", "101", "nonsense"])
def test_unknown_rule_exits_2_with_a_message(tmp_path: Path, code: str) -> None:
    proc = workersafe("rule", code, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"unknown rule {code!r}" in proc.stderr
    assert "WS101" in proc.stderr  # names the known ones
    assert "Traceback" not in proc.stderr


def test_every_reported_code_is_documented_with_every_section() -> None:
    docs = rule_docs()
    assert emitted_codes() <= set(docs), emitted_codes() - set(docs)
    for code, doc in docs.items():
        assert doc.text.startswith(f"# {code}: {doc.name}\n")
        missing = [s for s in SECTIONS if s not in doc.text]
        assert not missing, f"{code} lacks {missing}"
        assert doc.short.endswith((".", "!", "?")) and len(doc.short) < 120, (code, doc.short)
