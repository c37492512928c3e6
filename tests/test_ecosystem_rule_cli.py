"""`workersafe rule`: the documentation users read from the terminal (and that SARIF's help and
the help URIs point to)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecosystem_util import ROOT, workersafe
from workersafe.docs import rule_docs
from workersafe.ruletable import BY_CODE, RULES, codes_fixed_as

DOCS = ROOT / "src" / "workersafe" / "docs"
SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## Known limits")


def named_codes() -> set[str]:
    """Every code a module of the product names as a literal (the rules name what they emit)."""
    return {code for path in (ROOT / "src" / "workersafe").rglob("*.py")
            for code in re.findall(r"\"(WS\d{3})\"", path.read_text(encoding="utf-8"))}


def first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return match.group(1) if match else text


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
        assert summary.rstrip(".") in BY_CODE[code].summary
    assert workersafe("rule", cwd=tmp_path).stdout == proc.stdout  # no code: the list


@pytest.mark.parametrize("code", ["WS999", "E501", "101", "nonsense"])
def test_unknown_rule_exits_2_with_a_message(tmp_path: Path, code: str) -> None:
    proc = workersafe("rule", code, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"unknown rule {code!r}" in proc.stderr
    assert "WS101" in proc.stderr  # names the known ones
    assert "Traceback" not in proc.stderr


def test_every_code_is_in_the_rule_table_and_documented_with_every_section() -> None:
    docs = rule_docs()
    assert named_codes() <= set(BY_CODE), named_codes() - set(BY_CODE)
    assert set(docs) == set(BY_CODE)
    assert len(RULES) == len(BY_CODE)  # no code twice
    for code, doc in docs.items():
        rule = BY_CODE[code]
        assert doc.text.startswith(f"# {code}: {rule.name}\n")
        assert doc.name == rule.name
        missing = [s for s in SECTIONS if s not in doc.text]
        assert not missing, f"{code} lacks {missing}"
        assert first_sentence(doc.summary) == rule.summary, code
        assert rule.summary.endswith((".", "!", "?")) and len(rule.summary) < 120, code
        assert rule.fix_does


def test_the_rule_table_is_consistent() -> None:
    for rule in RULES:
        if rule.latent is not None:
            twin = BY_CODE[rule.latent]
            assert twin.fix == rule.fix and twin.latent is None, rule.code
    assert codes_fixed_as("module") == ("WS102", "WS112")
    assert codes_fixed_as("class") == ("WS103", "WS113")
    assert codes_fixed_as("instance") == ("WS101", "WS111", "WS201")
    assert BY_CODE["WS104"].fix is None and BY_CODE["WS001"].level == "warning"


def test_a_rule_off_by_default_is_reported_only_when_selected() -> None:
    """WS313 (latent lazy handle without a process check) is off by default."""
    from workersafe.config import Config

    assert not BY_CODE["WS313"].default_on and BY_CODE["WS303"].default_on
    assert not Config().enabled("WS313") and Config().enabled("WS303")
    assert Config(select=("WS3",)).enabled("WS313")
    assert Config(select=("WS", "WS31")).enabled("WS313")
    assert Config(select=("WS313",)).enabled("WS313")
    assert not Config(select=("WS",)).enabled("WS313")
    assert not Config(select=("WS313",), ignore=("WS313",)).enabled("WS313")


def test_what_counts_lists_every_built_in_handle() -> None:
    """docs/what-counts.md (linked from the README) names each registry row, so users know what
    is checked."""
    from workersafe.registry import DEFAULT_REGISTRY

    readme = (ROOT / "docs" / "what-counts.md").read_text(encoding="utf-8")
    missing = [name for name in DEFAULT_REGISTRY.types if f"`{name}`" not in readme]
    assert not missing, missing
