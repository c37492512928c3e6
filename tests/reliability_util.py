"""Helpers for the reliability tests: run the CLI and flake8 as a user would, and check that
nothing crashed (no traceback, no internal error, a documented exit code)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from expectations import FIXTURES

# A small positive case: one WS101 on line 8, column 18 (1-based), num_workers=4 on line 17.
SAMPLE_PATH = FIXTURES / "lint" / "alias_import_as.py"
SAMPLE = SAMPLE_PATH.read_text(encoding="utf-8")
SAMPLE_LINE, SAMPLE_COL = 8, 18
assert "r.Session()  # expect: WS101" in SAMPLE.splitlines()[SAMPLE_LINE - 1]

# Makes any text a prefilter candidate, so libcst and the fact extraction really run.
CANDIDATE_HEADER = "import requests\nfrom torch.utils.data import Dataset\n" \
                   "_session = requests.Session()\n"

CRASH_MARKERS = ("Traceback (most recent call last)", "internal error", "Fatal Python error",
                 "Segmentation fault")
_FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$")

# Clear reasons a file cannot be analysed (WS001), as the engine words them.
WS001_REASONS = ("syntax error: ", "too deeply nested to analyse", "file contains NUL bytes",
                 "cannot decode as ", "cannot read: ", "cannot determine encoding",
                 "too large to analyse")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def findings(self) -> list[tuple[str, int, int, str, str]]:
        out = []
        for line in self.stdout.splitlines():
            match = _FINDING.match(line)
            if match:
                out.append((match["path"], int(match["line"]), int(match["col"]),
                            match["code"], match["msg"]))
        return out

    def codes(self) -> list[tuple[str, int, str]]:
        return [(os.path.basename(p), line, code) for p, line, _, code, _ in self.findings()]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("WORKERSAFE_DEBUG", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_cli(*args: str, cwd: Path, timeout: float = 300, stdin: Optional[bytes] = None) -> Run:
    proc = subprocess.run([sys.executable, "-m", "workersafe", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=timeout, env=_env())
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))


def check(paths: Sequence[str], cwd: Path, *extra: str, timeout: float = 300) -> Run:
    return run_cli("check", "--no-cache", *extra, *paths, cwd=cwd, timeout=timeout)


def run_flake8(paths: Sequence[str], cwd: Path, *extra: str, timeout: float = 300,
               select: str = "WS,E999,E902") -> Run:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", f"--select={select}",
                           *extra, *paths], cwd=cwd, capture_output=True, timeout=timeout,
                          env=_env())
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))


def assert_no_crash(run: Run, allowed: Sequence[int] = (0, 1)) -> None:
    assert run.returncode in allowed, (run.returncode, run.stdout[-2000:], run.stderr[-4000:])
    for marker in CRASH_MARKERS:
        assert marker not in run.stderr, run.stderr[-4000:]
        assert marker not in run.stdout, run.stdout[-4000:]


def assert_clear_ws001(message: str) -> None:
    """A WS001 message says the file cannot be analysed, and why, in words we chose."""
    prefix = "cannot analyse this file: "
    assert message.startswith(prefix), message
    reason = message[len(prefix):]
    assert reason.startswith(WS001_REASONS), message
    assert "internal error" not in message, message
