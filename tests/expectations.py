"""Reading the expectations written inside fixture files (see CONTRIBUTING.md)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

_EXPECT = re.compile(r"#\s*expect:\s*(WS\d{3}(?:\s*,\s*WS\d{3})*)")
_EXPECT_ALONE = re.compile(r"#\s*expect-alone:\s*(WS\d{3}(?:\s*,\s*WS\d{3})*)")
_CONFIG = re.compile(r"#\s*workersafe-config:\s*(\{.*\})")
_REQUIRES = re.compile(r"#\s*requires-python:\s*(\d+)\.(\d+)")

Expected = set[tuple[str, int, str]]  # (relative path, line, code)


def _codes(match: "re.Match[str]") -> list[str]:
    return [c.strip() for c in match.group(1).split(",")]


def expected_in(path: Path, rel: str, alone: bool = False) -> Expected:
    pattern = _EXPECT_ALONE if alone else _EXPECT
    found: Expected = set()
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = pattern.search(line)
        if match:
            found |= {(rel, number, code) for code in _codes(match)}
    return found


def case_config(path: Path) -> dict[str, Any]:
    match = _CONFIG.search(path.read_text(encoding="utf-8", errors="replace"))
    return json.loads(match.group(1)) if match else {}


def python_ok(path: Path) -> bool:
    match = _REQUIRES.search(path.read_text(encoding="utf-8", errors="replace"))
    return match is None or sys.version_info[:2] >= (int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True)
class Case:
    name: str
    path: Path

    def __str__(self) -> str:
        return self.name


def lint_cases() -> list[Case]:
    return [Case(p.stem, p) for p in sorted((FIXTURES / "lint").glob("*.py"))]


def project_cases() -> list[Case]:
    return [Case(p.name, p) for p in sorted((FIXTURES / "projects").iterdir()) if p.is_dir()]
