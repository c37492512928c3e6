"""Every notebook in fixtures/notebooks/ is a case: `# expect: WS101` comments in its code cells
are the whole truth, as (cell, line in the cell, code), cells numbered over all cells from 1 as
editors show them. A notebook with no `# expect:` must stay quiet. Cases: IPython's automagic
lines (`pip install torch`, `cd dir`), a cell with a genuine syntax error among good ones (WS001
at that cell and line; the rest analysed), clean notebooks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from expectations import FIXTURES

NOTEBOOKS = sorted((FIXTURES / "notebooks").glob("*.ipynb"))
_EXPECT = re.compile(r"#\s*expect:\s*(WS\d{3}(?:\s*,\s*WS\d{3})*)")


def expected(path: Path) -> set[tuple[int, int, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = set()
    for number, cell in enumerate(data["cells"], start=1):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line_number, line in enumerate(source.splitlines(), start=1):
            match = _EXPECT.search(line)
            if match:
                out |= {(number, line_number, c.strip()) for c in match.group(1).split(",")}
    return out


def test_the_cases_are_there() -> None:
    clean = [p for p in NOTEBOOKS if not expected(p)]
    assert len(clean) >= 3 and len(NOTEBOOKS) - len(clean) >= 3


def found_by_check(path: Path, *options: str) -> set[tuple[int, int, str]]:
    proc = subprocess.run([sys.executable, "-m", "workersafe", "check", *options,
                           "--format", "json", path.name], cwd=path.parent,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return {(row["cell"], row["line"], row["code"]) for row in json.loads(proc.stdout)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook(path: Path) -> None:
    assert found_by_check(path, "--no-cache") == expected(path)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_warm(path: Path, tmp_path: Path) -> None:
    """The same with the cache, cold then warm: the facts of a notebook are cached for the
    text `check` read (unchecked: its cells are checked only when its code does not parse)."""
    cache = str(tmp_path / "cache")
    for _ in range(2):
        assert found_by_check(path, "--cache-dir", cache) == expected(path)
