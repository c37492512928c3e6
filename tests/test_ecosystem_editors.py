"""Editors: the buffer arrives on standard input with the file's name on the side.

- flake8 as the VS Code flake8 extension runs it: `--format='%(row)d,%(col)d,%(code).1s,
  %(code)s:%(text)s'` (quotes included, as the extension passes them), `--stdin-display-name
  <path>`, `-`; its diagnostic regex parses the output.
- `workersafe check --stdin-filename <path> -`.
Columns: the plugin yields 0-based columns, flake8 prints them +1; the CLI prints 1-based
columns: both must show the same number for the same file."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ecosystem_util import ROOT, SINGLE_FILE, SINGLE_FILE_AT, flake8, workersafe

VSCODE_FORMAT = "--format='%(row)d,%(col)d,%(code).1s,%(code)s:%(text)s'"
VSCODE_RE = re.compile(  # the extension's DIAGNOSTIC_RE
    r"(?P<line>\d+),(?P<column>-?\d+),(?P<type>\w+),(?P<code>\w+\d+):(?P<message>[^\r\n]*)")


def vscode_diagnostics(stdout: str) -> list[dict[str, str]]:
    found = []
    for line in stdout.splitlines():
        if line.startswith("'") and line.endswith("'"):
            line = line[1:-1]
        match = VSCODE_RE.match(line)
        if match:
            found.append(match.groupdict())
    return found


def test_flake8_stdin_as_vscode_runs_it(tmp_path: Path) -> None:
    target = tmp_path / "pkg" / "remote.py"
    target.parent.mkdir()
    target.write_text("# the saved file differs from the buffer\n", encoding="utf-8")
    proc = flake8(VSCODE_FORMAT, "--select=WS", "--stdin-display-name", str(target), "-",
                  cwd=tmp_path, stdin=SINGLE_FILE)
    assert proc.returncode == 1, proc.stderr
    (diag,) = vscode_diagnostics(proc.stdout)
    assert (int(diag["line"]), int(diag["column"])) == SINGLE_FILE_AT
    assert (diag["type"], diag["code"]) == ("W", "WS101")
    assert diag["message"].startswith("requests.Session created in Remote.__init__")


def test_flake8_stdin_default_format_uses_the_display_name(tmp_path: Path) -> None:
    proc = flake8("--select=WS", "--stdin-display-name", "x.py", "-", cwd=tmp_path,
                  stdin=SINGLE_FILE)
    assert proc.returncode == 1, proc.stderr
    line, col = SINGLE_FILE_AT
    assert proc.stdout.startswith(f"x.py:{line}:{col}: WS101 ")


def test_flake8_stdin_honours_noqa(tmp_path: Path) -> None:
    source = SINGLE_FILE.replace("requests.Session()", "requests.Session()  # noqa: WS101")
    proc = flake8("--select=WS", "--stdin-display-name", "x.py", "-", cwd=tmp_path, stdin=source)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_flake8_stdin_unparsable_buffer_does_not_crash(tmp_path: Path) -> None:
    source = SINGLE_FILE + "\ndef broken(:\n"
    proc = flake8("--select=WS,E999", "--stdin-display-name", "x.py", "-", cwd=tmp_path,
                  stdin=source)
    assert proc.returncode == 1
    assert "E999" in proc.stdout and "Traceback" not in proc.stderr


def test_cli_stdin_filename(tmp_path: Path) -> None:
    proc = workersafe("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=SINGLE_FILE)
    assert proc.returncode == 1, proc.stderr
    line, col = SINGLE_FILE_AT
    assert proc.stdout.startswith(f"x.py:{line}:{col}: WS101 requests.Session created")
    proc = workersafe("check", "--format", "json", "--stdin-filename", "sub/x.py", "-",
                      cwd=tmp_path, stdin=SINGLE_FILE)
    (row,) = json.loads(proc.stdout)
    assert (row["path"], row["line"], row["col"]) == ("sub/x.py", line, col)


def test_cli_stdin_clean_noqa_and_broken(tmp_path: Path) -> None:
    clean = workersafe("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin="x = 1\n")
    assert (clean.returncode, clean.stdout) == (0, "")
    source = SINGLE_FILE.replace("requests.Session()", "requests.Session()  # noqa: WS101")
    quiet = workersafe("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=source)
    assert (quiet.returncode, quiet.stdout) == (0, "")
    broken = workersafe("check", "--stdin-filename", "x.py", "-", cwd=tmp_path,
                        stdin=SINGLE_FILE + "\ndef broken(:\n")
    assert broken.returncode == 1
    # at `def broken(:`, where flake8's E999 is on this Python
    e999 = flake8("--isolated", "--select=E999", "--stdin-display-name=x.py", "-", cwd=tmp_path,
                  stdin=SINGLE_FILE + "\ndef broken(:\n").stdout.split(": E999 ")[0]
    assert e999.startswith(f"x.py:{SINGLE_FILE.count(chr(10)) + 2}:"), e999
    assert broken.stdout.startswith(f"{e999}: WS001 ") and "Traceback" not in broken.stderr


def test_cli_stdin_reads_the_config_of_the_named_file(tmp_path: Path) -> None:
    """The editor runs in some directory; `--stdin-filename` names the file in its project."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.workersafe]\nignore = ["WS101"]\n',
                                            encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = workersafe("check", "--stdin-filename", str(project / "src" / "x.py"), "-",
                      cwd=elsewhere, stdin=SINGLE_FILE)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout


def test_cli_stdin_cannot_be_mixed_with_paths(tmp_path: Path) -> None:
    proc = workersafe("check", "-", "other.py", cwd=tmp_path, stdin=SINGLE_FILE)
    assert proc.returncode == 2
    assert "standard input" in proc.stderr


# --- columns ----------------------------------------------------------------------------------

COLUMN_CASES = {
    # non-ASCII before the call on the same line: columns count characters, not bytes
    "unicode.py": SINGLE_FILE.replace("self.session = requests.Session()",
                                      "self.séssion = requests.Session()").replace(
        "self.session.get", "self.séssion.get"),
    # a call spread over lines, deeper indentation, a tab before the comment
    "multiline.py": SINGLE_FILE.replace(
        "        self.session = requests.Session()",
        "        if True:\n            self.session = (\n                requests.Session(\t)\n"
        "            )"),
}


def _flake8_positions(paths: list[str], cwd: Path) -> set[tuple[str, int, int, str]]:
    proc = flake8("--isolated", "--select=WS", "--format=%(path)s|%(row)d|%(col)d|%(code)s",
                  *paths, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    out = set()
    for line in proc.stdout.splitlines():
        path, row, col, code = line.rsplit("|", 3)
        out.add((Path(path).name, int(row), int(col), code))
    return out


def _cli_positions(paths: list[str], cwd: Path) -> set[tuple[str, int, int, str]]:
    out = set()
    for path in paths:  # one file at a time: the same knowledge flake8 has
        proc = workersafe("check", "--no-cache", path, cwd=cwd)
        assert proc.returncode in (0, 1), proc.stderr
        for line in proc.stdout.splitlines():
            name, row, col, rest = line.split(":", 3)
            out.add((Path(name).name, int(row), int(col), rest.split()[0]))
    return out


def test_flake8_and_cli_print_the_same_columns(tmp_path: Path) -> None:
    for name, text in {"plain.py": SINGLE_FILE, **COLUMN_CASES}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = sorted(p.name for p in tmp_path.glob("*.py"))
    cli = _cli_positions(paths, tmp_path)
    assert cli == _flake8_positions(paths, tmp_path)
    assert ("plain.py", *SINGLE_FILE_AT, "WS101") in cli
    assert ("unicode.py", *SINGLE_FILE_AT, "WS101") in cli
    assert ("multiline.py", 10, 17, "WS101") in cli


def test_fixture_columns_match_between_flake8_and_the_engine() -> None:
    """Every plain lint fixture: flake8's printed column == the CLI text column (in-process)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from expectations import case_config, lint_cases, python_ok

    from workersafe.engine import Engine
    from workersafe.report import text

    cases = [c for c in lint_cases() if not case_config(c.path) and python_ok(c.path)]
    if not cases:
        pytest.skip("no lint fixtures")
    expected = set()
    for case in cases:
        for line in text(Engine().check_paths([str(case.path)]).findings).splitlines():
            name, row, col, rest = line.split(":", 3)
            expected.add((Path(name).name, int(row), int(col), rest.split()[0]))
    got = _flake8_positions([str(c.path) for c in cases], ROOT)
    assert got == expected
