"""Regenerate fixtures/fix golden outputs with the current fixer (then review `git diff`).

    python scripts/regen_fix_goldens.py [CASE ...]

Cases marked `# expect-unfixable:` are left alone, unless fixed in part (they have goldens). A golden is only (re)written for a file the
fixer changes; review every diff before committing it: goldens are the contract."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "fix"
OPTIONS = re.compile(rb"#\s*workersafe-fix:\s*(\{.*\})")


def inputs(case: Path) -> list[Path]:
    if case.is_file():
        return [case]
    return sorted(p for p in case.rglob("*.py") if not p.name.endswith(".fixed.py"))


def regenerate(case: Path) -> None:
    files = inputs(case)
    partly = any(p.with_name(p.name[:-3] + ".fixed.py").exists() for p in files)
    if any(b"expect-unfixable:" in p.read_bytes() for p in files) and not partly:
        return  # refused whole: nothing is written (a case fixed in part has goldens)
    options: dict = {}
    for path in files:
        match = OPTIONS.search(path.read_bytes())
        if match:
            options = json.loads(match.group(1))
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / case.name
        if case.is_file():
            shutil.copyfile(case, target)
        else:
            shutil.copytree(case, target, ignore=shutil.ignore_patterns("*.fixed.py"))
        cmd = [sys.executable, "-m", "workersafe", "fix", "--no-cache", str(target)]
        if "strategy" in options:
            cmd += ["--strategy", options["strategy"]]
        # run from where the test runs it (tests/test_fix_fixtures._run_fix): a case folder is
        # its own project root, so its modules import each other by their bare names
        subprocess.run(cmd, capture_output=True, cwd=target if target.is_dir() else tmp,
                       timeout=300)
        for path in files:
            copied = target if case.is_file() else target / path.relative_to(case)
            golden = path.with_name(path.name[:-3] + ".fixed.py")
            if copied.read_bytes() != path.read_bytes():
                golden.write_bytes(copied.read_bytes())
            elif golden.exists():
                golden.unlink()


def main(names: list[str]) -> None:
    cases = [p for p in sorted(FIX.iterdir()) if (p.is_dir() or not p.name.endswith(".fixed.py"))
             and p.suffix in (".py", "")]
    for case in cases:
        if not names or case.stem in names:
            regenerate(case)


if __name__ == "__main__":
    main(sys.argv[1:])
