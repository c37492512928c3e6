"""Crashes found by the sweeps and the fuzzing, kept as plain examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reliability_util import CANDIDATE_HEADER, SAMPLE, SAMPLE_LINE, assert_no_crash, check
from workersafe.config import Config
from workersafe.engine import Engine
from workersafe.link import Project
from workersafe.source import physical_lines

DATA = ("import requests\nfrom p import Base\nfrom torch.utils.data import DataLoader, Dataset\n"
        "\n\nclass D(Base):\n    def __init__(self):\n        self.s = requests.Session()\n\n"
        "    def __getitem__(self, i):\n        return self.s.get(i)\n")


@pytest.mark.parametrize("init", [
    # torch/__init__.py does `from torch._C import *`: _C is not Python source. Name resolution
    # followed it as p.X → p.missing.X → p.missing.missing.X ... (RecursionError: the whole
    # site-packages run ended with exit 2), and with two such imports the names branched (a hang).
    "from p.missing import *\n",
    "from p.missing import *\nfrom p._C import *\nfrom ._ext import *\n",
    "from p.missing import missing\nfrom p.missing import *\n",
])
@pytest.mark.parametrize("prefilter", [True, False])
def test_star_imports_of_modules_outside_the_project(tmp_path: Path, init: str,
                                                     prefilter: bool) -> None:
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    (pkg / "data.py").write_text(DATA)
    (pkg / "good.py").write_text(SAMPLE)
    run = check(["."], tmp_path, *([] if prefilter else ["--no-prefilter"]), timeout=120)
    assert_no_crash(run)
    assert ("good.py", SAMPLE_LINE, "WS101") in run.codes(), run.stdout


def test_resolution_of_an_ever_longer_name_is_bounded() -> None:
    """A project built by hand: module p re-exports `missing` from p.missing, which is not in
    the project, so `p.missing.X` → `p.missing.missing.X` → ..."""
    from workersafe.facts import FileFacts

    p = FileFacts("p/__init__.py", "p", imports=(("missing", "p.missing.missing"),),
                  star_imports=("p.missing", "p._C"))
    project = Project([p])
    for name, context in (("p.missing.X", None), ("X", p), ("p.X", None)):
        assert not project._defined(project.resolve(name, context))


def test_physical_lines_split_like_python() -> None:
    text = "a\x0cb\x0bc\x1cd\x85e\u2028f\u2029g\r\nh\ri\nj"
    assert physical_lines(text) == ["a\x0cb\x0bc\x1cd\x85e\u2028f\u2029g\r\n", "h\r", "i\n", "j"]
    assert physical_lines("") == [] and physical_lines("\n\n") == ["\n", "\n"]
    # each break alone, in an ASCII text and beyond (`str.splitlines` splits those without one)
    for other in ("\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", ""):
        for rest in ("", "é"):
            sample = f"a{other}b{rest}\r\nc\rd\ne"
            assert physical_lines(sample) == [f"a{other}b{rest}\r\n", "c\r", "d\n", "e"]
    for sample in (text, SAMPLE, "x\r\n\r\n", "\r\r\n\n"):
        assert "".join(physical_lines(sample)) == sample


def test_positions_split_lines_as_physical_lines() -> None:
    """analysis.positions splits a text without \r its own faster way: the same lines."""
    from workersafe.analysis.positions import Positions

    for sample in ("", "\n", "\n\n", "a", "a\n", "a\n\nb", "a\x0cb\x85c\u2028d\ne", SAMPLE,
                   "x\r\ny\rz\n"):
        assert Positions(sample).lines == physical_lines(sample), sample


def test_noqa_after_a_form_feed_line_is_honoured() -> None:
    """The CLI looked for `# noqa` one line too far down after a \\x0c or \\u2028 (flake8 did
    not): the two front ends disagreed."""
    text = SAMPLE.replace("from torch", "\x0c\nx = 1  # \u2028\nfrom torch", 1)
    line = SAMPLE_LINE + 2
    lines = text.split("\n")
    assert "# expect: WS101" in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace("# expect: WS101", "# noqa: WS101")
    engine = Engine(Config())
    assert [(f.line, f.code) for f in engine.check_text("t.py", text)] == [(line, "WS101")]
    assert engine.check_text("t.py", "\n".join(lines)) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX stack limits")
@pytest.mark.skipif(sys.version_info < (3, 11), reason=(
    "before 3.11 CPython's own ast.parse has no recursion guard when it builds the tree: with a "
    "2 MiB stack it crashes on this file whatever the recursion limit (flake8 does too)"))
def test_depth_check_is_safe_under_a_raised_recursion_limit(tmp_path: Path) -> None:
    """The guard asks Python's parser first; at a recursion limit some caller raised to
    10,000, Python 3.11's parser accepted 29,000 levels and overflowed a 2 MiB stack (SIGSEGV).
    It now runs with at most 1,000 levels of room, whatever the caller's limit."""
    import resource

    script = (
        "import sys\n"
        "from workersafe.config import Config\nfrom workersafe.engine import Engine\n"
        "sys.setrecursionlimit(10_000)\n"
        f"text = {CANDIDATE_HEADER!r} + 'x = ' + '+'.join(['1'] * 29_000) + '\\n'\n"
        "found = Engine(Config()).check_text('deep.py', text)\n"
        "print([f.code for f in found], found[0].message)\n"
        "assert sys.getrecursionlimit() == 10_000\n")

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (2 * 1024 * 1024, resource.RLIM_INFINITY))

    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, preexec_fn=small_stack, cwd=tmp_path)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.startswith("['WS001'] cannot analyse this file: too deeply nested")
