"""Configuration as users write it: flake8 options in setup.cfg / tox.ini / .flake8 (real
flake8, in scratch directories), `[tool.workersafe]` in pyproject.toml for the CLI, and what
wins when both exist (docs/configuration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from ecosystem_util import ROOT, SINGLE_FILE, flake8, workersafe

# A client the built-in registry does not know, in a dataset whose base class it does not know
# either (no DataLoader here, so nothing else marks the class as a dataset): WS111 needs both
# `extra-handles` and `dataset-bases`.
CUSTOM = '''\
import mylib

from company.data import BaseDataset


class Remote(BaseDataset):
    def __init__(self):
        self.client = mylib.Client()

    def __getitem__(self, i):
        return self.client.get(i)
'''
CUSTOM_AT = "ds.py:8:23: WS111"


def codes(stdout: str) -> list[str]:
    return [line.split(": ", 1)[1].split()[0] + "@" + line.split(":")[1]
            for line in stdout.splitlines() if ": WS" in line]


def project(tmp_path: Path, files: dict[str, str], source: str = CUSTOM) -> Path:
    (tmp_path / "ds.py").write_text(source, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def flake8_ws(cwd: Path):  # type: ignore[no-untyped-def]
    return flake8("--select=WS", "ds.py", cwd=cwd)


BOTH_OPTIONS = ("workersafe-extra-handles = mylib.Client\n"
                "workersafe-dataset-bases = company.data.BaseDataset\n")


@pytest.mark.parametrize("filename", ["setup.cfg", "tox.ini", ".flake8"])
def test_flake8_reads_options_from_each_ini_file(tmp_path: Path, filename: str) -> None:
    project(tmp_path, {})
    assert flake8_ws(tmp_path).stdout == ""  # neither the client nor the base is known
    (tmp_path / filename).write_text("[flake8]\n" + BOTH_OPTIONS, encoding="utf-8")
    proc = flake8_ws(tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(CUSTOM_AT)


@pytest.mark.parametrize("value", [
    "mylib.Client, other.Thing",
    "\n    mylib.Client,\n    other.Thing,",  # multi-line, trailing comma
    "\n    other.Thing\n    mylib.Client",  # multi-line without commas
    "other.Thing mylib.Client",  # whitespace separated, as flake8's own list options allow
])
def test_flake8_list_values(tmp_path: Path, value: str) -> None:
    bases_only = "[flake8]\nworkersafe_dataset_bases = company.data.BaseDataset\n"
    project(tmp_path, {"setup.cfg": bases_only})
    assert flake8_ws(tmp_path).stdout == ""  # the client is not a known handle yet
    (tmp_path / "setup.cfg").write_text(
        f"[flake8]\nworkersafe-extra-handles = {value}\n"
        "workersafe_dataset_bases = company.data.BaseDataset\n", encoding="utf-8")
    assert flake8_ws(tmp_path).stdout.startswith(CUSTOM_AT)


def test_flake8_disable_handles(tmp_path: Path) -> None:
    project(tmp_path, {}, SINGLE_FILE)
    assert "WS101" in flake8_ws(tmp_path).stdout
    (tmp_path / ".flake8").write_text(
        "[flake8]\nworkersafe-disable-handles = requests.Session\n", encoding="utf-8")
    assert flake8_ws(tmp_path).stdout == ""


@pytest.mark.parametrize("value", ['["mylib.Client"]', '"mylib.Client"', "['a.B', 'c.D']"])
def test_flake8_toml_style_list_is_a_clear_error(tmp_path: Path, value: str) -> None:
    project(tmp_path, {"setup.cfg": f"[flake8]\nworkersafe-extra-handles = {value}\n"})
    proc = flake8_ws(tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "workersafe: configuration error in flake8 option workersafe-extra-handles: "
        "expected a comma-separated list")
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_flake8_uses_the_first_ini_file_with_a_flake8_section(tmp_path: Path) -> None:
    """flake8's own rule: setup.cfg, then tox.ini, then .flake8; the first with [flake8]."""
    project(tmp_path, {"setup.cfg": "[metadata]\nname = x\n",
                       "tox.ini": "[flake8]\n" + BOTH_OPTIONS,
                       ".flake8": "[flake8]\nmax-line-length = 120\n"})
    assert flake8_ws(tmp_path).stdout.startswith(CUSTOM_AT)
    assert workersafe("check", "ds.py", cwd=tmp_path).stdout.startswith(CUSTOM_AT)


# --- the CLI ----------------------------------------------------------------------------------

PYPROJECT = ('[tool.workersafe]\nextra-handles = ["mylib.Client"]\n'
             'dataset-bases = ["company.data.BaseDataset"]\n')


def test_cli_reads_pyproject_and_flake8_does_not(tmp_path: Path) -> None:
    project(tmp_path, {"pyproject.toml": PYPROJECT})
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith(CUSTOM_AT), proc.stderr
    assert flake8_ws(tmp_path).stdout == ""  # flake8 never reads pyproject.toml


def test_cli_falls_back_to_the_flake8_ini_options(tmp_path: Path) -> None:
    """No [tool.workersafe]: the CLI reads the workersafe-* options flake8 reads."""
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        folder = tmp_path / name.strip(".")
        folder.mkdir()
        project(folder, {name: "[flake8]\n" + BOTH_OPTIONS,
                         "pyproject.toml": "[project]\nname = 'x'\n"})
        proc = workersafe("check", "--no-cache", cwd=folder)
        assert proc.returncode == 1 and proc.stdout.startswith(CUSTOM_AT), (name, proc.stderr)
        assert proc.stderr == ""


def test_when_both_exist_cli_reads_pyproject_flake8_reads_ini_and_cli_says_so(
        tmp_path: Path) -> None:
    # pyproject knows the client; setup.cfg [flake8] disables requests.Session instead
    project(tmp_path, {"pyproject.toml": PYPROJECT,
                       "setup.cfg": "[flake8]\nworkersafe-disable-handles = requests.Session\n"})
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert proc.stdout.startswith(CUSTOM_AT)  # pyproject won
    assert proc.stderr.startswith("workersafe: note: setup.cfg [flake8] sets ")
    assert "workersafe-disable-handles" in proc.stderr and "differently" in proc.stderr
    assert flake8_ws(tmp_path).stdout == ""  # flake8: INI only, which knows no mylib.Client


def test_no_note_when_both_agree(tmp_path: Path) -> None:
    project(tmp_path, {"pyproject.toml": PYPROJECT, "setup.cfg": "[flake8]\n" + BOTH_OPTIONS})
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert proc.stdout.startswith(CUSTOM_AT)
    assert proc.stderr == ""
    assert flake8_ws(tmp_path).stdout.startswith(CUSTOM_AT)


def test_cli_toml_style_list_in_ini_is_a_clear_error(tmp_path: Path) -> None:
    project(tmp_path, {"setup.cfg": '[flake8]\nworkersafe-extra-handles = ["mylib.Client"]\n'})
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 2
    assert "configuration error" in proc.stderr and "setup.cfg [flake8]" in proc.stderr
    assert "TOML list" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_nearest_directory_decides(tmp_path: Path) -> None:
    """A sub-project's INI options beat the root's [tool.workersafe]; nothing is merged."""
    project(tmp_path, {"pyproject.toml": PYPROJECT})
    assert workersafe("check", "--no-cache", "ds.py", cwd=tmp_path).stdout.startswith(CUSTOM_AT)
    sub = tmp_path / "sub"
    sub.mkdir()
    project(sub, {"setup.cfg": "[flake8]\nworkersafe-extra-handles = mylib.Client\n"})
    proc = workersafe("check", "--no-cache", "sub", cwd=tmp_path)
    assert proc.stdout == ""  # sub's options: the client, but not the base class
    proc = workersafe("check", "--no-cache", str(sub / "ds.py"), cwd=tmp_path)
    assert proc.stdout == ""


def test_config_is_documented() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for word in ("[tool.workersafe]", "setup.cfg", "tox.ini", ".flake8",
                 "workersafe-extra-handles", "workersafe-disable-handles",
                 "workersafe-dataset-bases", "target-version", "platform",
                 "workersafe-target-version", "workersafe-platform", "requires-python",
                 "line-length", "max-line-length"):
        assert word in text, word


# httpx.Client does not pickle: WS101 under fork (Linux up to 3.13), WS201 under spawn (macOS,
# Windows) and forkserver (Linux from 3.14).
HTTPX_FILE = SINGLE_FILE.replace("import requests", "import httpx").replace(
    "requests.Session()", "httpx.Client()")


@pytest.mark.parametrize("requires, code", [(">=3.9", "WS101"), (">=3.14", "WS201"),
                                            ("~=3.14.0", "WS201"), (None, "WS101")])
def test_cli_target_version_defaults_from_requires_python(tmp_path: Path, requires: Optional[str],
                                                          code: str) -> None:
    project_table = f'[project]\nname = "x"\nrequires-python = "{requires}"\n' if requires \
        else '[project]\nname = "x"\n'
    project(tmp_path, {"pyproject.toml": project_table}, source=HTTPX_FILE)
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert [c.split("@")[0] for c in codes(proc.stdout)] == [code], proc.stdout + proc.stderr


@pytest.mark.parametrize("table, code", [('platform = "macos"', ["WS201"]),
                                         ('platform = "windows"', ["WS201"]),
                                         ('platform = "any"', ["WS101", "WS201"]),
                                         ('platform = "any"\ntarget-version = "py314"', ["WS201"]),
                                         ('target-version = "py314"', ["WS201"]),
                                         ('target-version = "py313"', ["WS101"])])
def test_cli_target_and_platform_keys(tmp_path: Path, table: str, code: list[str]) -> None:
    """The keys win over `requires-python` (here: 3.10, fork by default on Linux)."""
    pyproject = f'[project]\nname = "x"\nrequires-python = ">=3.10"\n[tool.workersafe]\n{table}\n'
    project(tmp_path, {"pyproject.toml": pyproject}, source=HTTPX_FILE)
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert sorted(c.split("@")[0] for c in codes(proc.stdout)) == code, proc.stderr


@pytest.mark.parametrize("table", ['platform = "darwin"', 'target-version = "3.12"',
                                   'target-version = "py38"'])
def test_cli_bad_target_or_platform_is_a_clear_error(tmp_path: Path, table: str) -> None:
    project(tmp_path, {"pyproject.toml": f"[tool.workersafe]\n{table}\n"}, source=HTTPX_FILE)
    proc = workersafe("check", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 2 and "configuration error" in proc.stderr, proc.stderr
    assert "must be one of" in proc.stderr and "Traceback" not in proc.stderr


def test_flake8_target_and_platform_options(tmp_path: Path) -> None:
    project(tmp_path, {}, source=HTTPX_FILE)
    assert [c.split("@")[0] for c in codes(flake8_ws(tmp_path).stdout)] == ["WS101"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nworkersafe-platform = macos\n",
                                        encoding="utf-8")
    assert [c.split("@")[0] for c in codes(flake8_ws(tmp_path).stdout)] == ["WS201"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nworkersafe-platform = beos\n",
                                        encoding="utf-8")
    proc = flake8_ws(tmp_path)
    assert proc.returncode == 2 and "workersafe-platform" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_flake8_target_version_from_requires_python(tmp_path: Path) -> None:
    project(tmp_path, {"pyproject.toml": '[project]\nname = "x"\nrequires-python = ">=3.14"\n'},
            source=HTTPX_FILE)
    assert [c.split("@")[0] for c in codes(flake8_ws(tmp_path).stdout)] == ["WS201"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nworkersafe-target-version = py312\n",
                                        encoding="utf-8")
    assert [c.split("@")[0] for c in codes(flake8_ws(tmp_path).stdout)] == ["WS101"]


# WS312 (latent: no DataLoader using the worker_init_fn) is off by default; WS311 is on.
REMEDY_UNWIRED = (ROOT / "fixtures" / "lint" / "ws302_subset_wrapper.py").read_text(
    encoding="utf-8").replace(", worker_init_fn=worker_init_fn", "")


@pytest.mark.parametrize(("options", "expected"), [
    ((), ["WS311@10"]),
    (("--select=WS",), ["WS311@10"]),
    (("--extend-select=WS312",), ["WS311@10", "WS312@22"]),
    (("--select=WS31",), ["WS311@10", "WS312@22"]),
    (("--select=E9,WS312",), ["WS312@22"]),
])
def test_flake8_select_turns_on_rules_that_are_off_by_default(
        tmp_path: Path, options: tuple[str, ...], expected: list[str]) -> None:
    project(tmp_path, {}, REMEDY_UNWIRED)
    proc = flake8(*options, "ds.py", cwd=tmp_path)
    assert [c for c in codes(proc.stdout) if c.startswith("WS")] == expected, proc.stdout


@pytest.mark.parametrize(("args", "table", "named"), [
    (("--select", "WS999X"), "", "--select: unknown rule code or prefix 'WS999X'"),
    (("--select", "WS1,WS7"), "", "--select: unknown rule code or prefix 'WS7'"),
    (("--ignore", "E501,WS11"), "", "--ignore: unknown rule code or prefix 'E501'"),
    ((), 'select = ["WS", "WS999X"]', "select: unknown rule code or prefix 'WS999X'"),
    ((), 'ignore = "WS11, WSX"', "ignore: unknown rule code or prefix 'WSX'"),
])
def test_cli_unknown_code_in_select_or_ignore_is_a_usage_error(
        tmp_path: Path, args: tuple[str, ...], table: str, named: str) -> None:
    """As ruff: an unknown code or prefix is exit 2 naming it, never a silent no-op."""
    files = {"pyproject.toml": f"[tool.workersafe]\n{table}\n"} if table else {}
    project(tmp_path, files, source=HTTPX_FILE)
    proc = workersafe("check", "--no-cache", *args, ".", cwd=tmp_path)
    assert proc.returncode == 2 and named in proc.stderr, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["WS", "W", "WS3", "WS31", "WS313", "WS001"])
def test_cli_known_codes_and_prefixes_are_accepted(tmp_path: Path, value: str) -> None:
    project(tmp_path, {}, source=HTTPX_FILE)
    for option in ("--select", "--ignore"):
        proc = workersafe("check", "--no-cache", option, value, ".", cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr


# A loader whose last line has room for `worker_init_fn=open_worker_handles` at 99 columns and
# 120, not at 88 or 79: the fix writes to the project's own line length.
LONG_LOADER = (ROOT / "fixtures" / "fix" / "wire_long_multiline_call.py").read_text().replace(
    ", drop_last=False)", ")")


@pytest.mark.parametrize("files, limit", [
    ({}, 99),
    ({"pyproject.toml": "[tool.black]\n"}, 88),
    ({"pyproject.toml": "[tool.ruff]\nline-length = 120\n"}, 120),
    ({"setup.cfg": "[flake8]\nmax-line-length = 79\n"}, 79),
    ({"pyproject.toml": "[tool.black]\n[tool.workersafe]\nline-length = 120\n"}, 120),
], ids=["none", "black", "ruff-120", "flake8-79", "workersafe-over-black"])
def test_fix_writes_lines_as_long_as_the_project_allows(
        tmp_path: Path, files: dict[str, str], limit: int) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "rows.py"
    path.write_text(LONG_LOADER)
    done = workersafe("fix", "--no-cache", "rows.py", cwd=tmp_path)
    assert done.returncode == 0 and "WS101 fixed" in done.stdout, done.stdout + done.stderr
    lines = path.read_text().splitlines()
    added = [line for line in lines if line not in LONG_LOADER.splitlines()]
    assert added and max(len(line) for line in added) <= limit, "\n".join(added)
    wired = next(line for line in lines if "worker_init_fn=open_worker_handles" in line)
    assert wired.lstrip().startswith("worker_init_fn=") == (limit < 100), wired
