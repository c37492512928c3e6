"""One `# noqa` meaning in both front ends: a comment naming a code covers its latent twin
(the rule table's `latent`), both ways. The lint fixtures `noqa_*` check it through the engine
and real flake8; here: the pairs come from the table, and flake8 on a project's files alone
(the latent codes) agrees with the linked CLI (the confirmed codes) on what is silenced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from expectations import FIXTURES, expected_in
from workersafe.noqa import is_suppressed, twin_of, twin_suppressed
from workersafe.ruletable import RULES, latent_of

PAIRS = [(rule.code, latent_of(rule.code)) for rule in RULES if latent_of(rule.code)]


def test_the_pairs_are_the_rule_tables() -> None:
    assert len(PAIRS) >= 6
    for confirmed, latent in PAIRS:
        assert twin_of(confirmed) == latent and twin_of(latent) == confirmed
    untwinned = {rule.code for rule in RULES} - {c for pair in PAIRS for c in pair}
    assert all(twin_of(code) is None for code in untwinned)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "/".join(map(str, p)))
def test_a_code_covers_its_twin_both_ways(pair: tuple[str, str]) -> None:
    confirmed, latent = pair
    for named, reported in ((confirmed, latent), (latent, confirmed)):
        line = f"x = open_it()  # noqa: {named}\n"
        assert is_suppressed(reported, line) and twin_suppressed(reported, line)
        assert is_suppressed(named, line) and not twin_suppressed(named, line)
    assert not is_suppressed(confirmed, "x = 1  # noqa: WS104\n")
    assert not is_suppressed(latent, "x = 1  # noqa: WS104\n")


def _flake8(paths: list[Path], *extra: str) -> set[tuple[str, int, str]]:
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--select=WS",
           "--format=%(path)s|%(row)d|%(code)s", *extra, *map(str, paths)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    out = set()
    for line in proc.stdout.splitlines():
        path, row, code = line.rsplit("|", 2)
        out.add((Path(path).name, int(row), code))
    return out


def test_flake8_alone_agrees_with_the_expectations() -> None:
    case = FIXTURES / "projects" / "noqa_twin_across_files"
    files = sorted(case.glob("*.py"))
    expected = set().union(*(expected_in(p, p.name, alone=True) for p in files))
    assert _flake8(files) == expected
    # flake8's --disable-noqa turns the twin rule off too: every latent finding is back
    everything = _flake8(files, "--disable-noqa")
    assert {code for _, _, code in everything} == {"WS111"} and len(everything) == 3
