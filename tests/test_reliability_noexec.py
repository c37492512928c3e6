"""The code under analysis is never executed or imported: modules whose import would write a
marker file, exit the interpreter or raise are analysed (their findings are found) and the
marker never appears, through the CLI (check and fix --diff), flake8, and the engine in
process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reliability_util import SAMPLE, assert_no_crash, check, run_cli, run_flake8
from workersafe.config import Config
from workersafe.engine import Engine

NAMES = ("writes_marker", "exits", "raises", "os_exit", "pkg.data", "pkg")


def _hostile(marker: Path, tag: str, action: str) -> str:
    """The sample dataset, preceded by a module-level side effect."""
    effects = {
        "write": f"open({str(marker) + '.' + tag!r}, 'w').write('imported')\n",
        "exit": f"open({str(marker) + '.' + tag!r}, 'w').write('x')\nimport sys\nsys.exit(3)\n",
        "raise": f"open({str(marker) + '.' + tag!r}, 'w').write('x')\n"
                 "raise RuntimeError('imported!')\n",
        "os_exit": f"open({str(marker) + '.' + tag!r}, 'w').write('x')\nimport os\nos._exit(7)\n",
    }
    return effects[action] + SAMPLE


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, marker = tmp_path / "proj", tmp_path / "marker"
    (root / "pkg").mkdir(parents=True)
    (root / "writes_marker.py").write_text(_hostile(marker, "w", "write"))
    (root / "exits.py").write_text(_hostile(marker, "e", "exit"))
    (root / "raises.py").write_text(_hostile(marker, "r", "raise"))
    (root / "os_exit.py").write_text(_hostile(marker, "o", "os_exit"))
    # a package whose __init__ has the side effects, and a module that imports from it
    (root / "pkg" / "__init__.py").write_text(
        f"open({str(marker) + '.init'!r}, 'w').write('x')\nimport sys\nsys.exit(5)\n"
        "import requests\nSESSION = requests.Session()\n")
    (root / "pkg" / "data.py").write_text(
        "from pkg import SESSION\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
        "class Remote(Dataset):\n    def __getitem__(self, i):\n"
        "        return SESSION.get(str(i)).text\n\n\n"
        "loader = DataLoader(Remote(), num_workers=4)\n")
    return root, marker


def _no_marker(marker: Path) -> None:
    made = sorted(p.name for p in marker.parent.glob(marker.name + "*"))
    assert not made, f"analysed code was executed: {made}"


def _expected(run) -> None:  # type: ignore[no-untyped-def]
    """Each hostile module was analysed: its dataset's finding is there."""
    codes = set(run.codes())
    for name in ("writes_marker.py", "exits.py", "raises.py", "os_exit.py"):
        assert any(n == name and c == "WS101" for n, _, c in codes), run.stdout


def test_cli_check_never_executes(tree: tuple[Path, Path]) -> None:
    root, marker = tree
    run = check(["."], root)
    assert_no_crash(run)
    _no_marker(marker)
    _expected(run)
    codes = set(run.codes())
    assert any(n == "__init__.py" and c.startswith("WS10") for n, _, c in codes), run.stdout


def test_cli_fix_diff_never_executes(tree: tuple[Path, Path]) -> None:
    root, marker = tree
    run = run_cli("fix", "--no-cache", "--diff", ".", cwd=root)
    assert_no_crash(run)
    _no_marker(marker)
    assert "+++" in run.stdout  # something was planned and verified


def test_flake8_never_executes(tree: tuple[Path, Path]) -> None:
    root, marker = tree
    files = ["writes_marker.py", "exits.py", "raises.py", "os_exit.py", "pkg/__init__.py",
             "pkg/data.py"]
    run = run_flake8(files, root)
    assert_no_crash(run)
    _no_marker(marker)
    _expected(run)
    # the project index (built by checking the whole tree) does not execute anything either
    indexed = run_flake8(files, root, "--workersafe-index")
    assert_no_crash(indexed)
    _no_marker(marker)


def test_engine_in_process_never_imports(tree: tuple[Path, Path]) -> None:
    root, marker = tree
    before = set(sys.modules)
    result = Engine(Config()).check_paths([str(root)])
    _no_marker(marker)
    assert {f.code for f in result.findings} & {"WS101", "WS102"}
    assert not [m for m in set(sys.modules) - before if m.split(".")[0] in NAMES]
