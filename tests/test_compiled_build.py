"""The mypyc-compiled analysis (setup.py, workersafe/compiled.py) against its pure Python source.

- Both builds give the same facts, byte for byte, on every fixture file (a compiled module may
  not behave as its source: a generator drained before the list it reads grew did once).
- A source edited after compiling is run as source, never shadowed by the older build.
Skipped where this install is pure Python (Python 3.9, `WORKERSAFE_PURE=1` at install, no
compiler): there is nothing compiled to compare.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import workersafe
from workersafe import compiled

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(workersafe.__file__).resolve().parent

needs_compiled = pytest.mark.skipif(
    compiled.status != "compiled",
    reason=f"this install runs the analysis as {compiled.status}: nothing compiled to compare")

DUMP = r"""
import json, sys
from pathlib import Path
from workersafe import compiled
from workersafe.config import Config
from workersafe.facts import to_jsonable
from workersafe.parse import file_facts

registry = Config().registry()
print(compiled.status)
for root in sys.argv[1:]:
    for path in sorted(Path(root).rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        facts = file_facts(text, str(path), path.stem, path.name == "__init__.py", registry)
        print(json.dumps([str(path), to_jsonable(facts)], sort_keys=True))
"""


def _run(code: str, *args: str, pure: bool = False, path: str = "") -> list[str]:
    env = dict(os.environ)
    env.pop("WORKERSAFE_PURE", None)
    if pure:
        env["WORKERSAFE_PURE"] = "1"
    if path:
        env["PYTHONPATH"] = path
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=True)
    return done.stdout.splitlines()


@needs_compiled
def test_the_compiled_and_the_pure_analysis_give_the_same_facts() -> None:
    roots = [str(ROOT / "fixtures" / name) for name in ("lint", "projects", "fix", "notebooks")
             if (ROOT / "fixtures" / name).is_dir()]
    native = _run(DUMP, *roots)
    pure = _run(DUMP, *roots, pure=True)
    assert native[0] == "compiled"
    assert pure[0].startswith("pure Python")
    assert len(native) > 300  # every fixture file, not an empty walk
    different = [a.split('"', 2)[1] for a, b in zip(native[1:], pure[1:]) if a != b]
    assert len(native) == len(pure) and not different, different[:10]


WHICH = r"""
import workersafe
import workersafe.analysis.walker as walker
print(workersafe.compiled.status)
print(walker.__file__)
"""


@needs_compiled
def test_a_source_edited_after_compiling_runs_as_source(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "workersafe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for lib in PACKAGE.parent.glob("workersafe_native__mypyc*"):
        shutil.copy2(lib, site / lib.name)
    status, walker = _run(WHICH, path=str(site))
    assert status == "compiled" and not walker.endswith(".py")

    edited = site / "workersafe" / "analysis" / "nodes.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    status, walker = _run(WHICH, path=str(site))
    assert status.startswith("pure Python: ") and "nodes.py changed" in status
    assert walker.endswith("walker.py")  # every compiled module, not only the edited one
