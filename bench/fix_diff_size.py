"""The size of the diff `workersafe fix` writes: added lines per fixed class (issue 22).

    PYTHONPATH=src python bench/fix_diff_size.py [--src OTHER/src] [--per-case]

Each case is copied to a temporary folder and fixed there (`workersafe fix --no-cache`, the
strategy its `# workersafe-fix:` comment names, else the default `worker-init`), with the
`workersafe` of `--src` (default: the one on PYTHONPATH). Counted per case: the `+` lines of
the unified diff of every file the fix changed (blank lines included: a reviewer reads them
too), and the fixed classes (a class whose source text changed). Corpora:
- goldens: the fix fixtures (fixtures/fix/*.py and its folders; refused cases skipped);
- runtime: the runtime programs (fixtures/runtime/*.py with their driver, and the projects),
  real dataset shapes that tests/runtime runs before and after the fix.
Cases whose fix changes no class (module-level handles) count their lines but no class; the
totals say how many.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "fix"
RUNTIME = ROOT / "fixtures" / "runtime"
OPTIONS = re.compile(r"#\s*workersafe-fix:\s*(\{.*\})")


@dataclass
class Case:
    corpus: str
    name: str
    files: list[Path]  # the inputs (relative layout kept under `root`)
    root: Path
    strategy: str


@dataclass
class Measured:
    case: Case
    added: int
    classes: int
    strategies: str  # as `fix` reported them ("worker-init", "lazy", or both)


def golden_cases() -> list[Case]:
    cases = []
    for path in sorted(FIX.iterdir()):
        if path.is_file() and (path.suffix != ".py" or path.name.endswith(".fixed.py")):
            continue
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*.py") if not p.name.endswith(".fixed.py"))
        text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
        if "expect-unfixable:" in text:
            continue
        match = OPTIONS.search(text)
        strategy = json.loads(match.group(1)).get("strategy", "") if match else ""
        cases.append(Case("goldens", path.stem, files, path.parent if path.is_file() else path,
                          strategy))
    return cases


def runtime_cases() -> list[Case]:
    cases = []
    driver = RUNTIME / "runtime_driver.py"
    for path in sorted(RUNTIME.glob("*.py")):
        if path == driver:
            continue
        cases.append(Case("runtime", path.stem, [path, driver], RUNTIME, ""))
    for folder in sorted(p for p in RUNTIME.iterdir() if p.is_dir()):
        cases.append(Case("runtime", folder.name, sorted(folder.glob("*.py")), folder, ""))
    return cases


def classes(source: str) -> dict[str, str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    return {node.name: ast.get_source_segment(source, node) or ""
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def measure(case: Case, src: str) -> Measured:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "case"
        work.mkdir()
        copies = []
        for path in case.files:
            target = work / path.relative_to(case.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copies.append((path, target))
        cmd = [sys.executable, "-m", "workersafe", "fix", "--no-cache", "."]
        if case.strategy:
            cmd += ["--strategy", case.strategy]
        env = {**os.environ, "PYTHONPATH": src}
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)
        added = changed = 0
        for path, target in copies:
            old = path.read_text(encoding="utf-8", errors="replace")
            new = target.read_text(encoding="utf-8", errors="replace")
            if old == new:
                continue
            diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            added += sum(1 for line in diff if line.startswith("+")
                         and not line.startswith("+++"))
            before, after = classes(old), classes(new)
            changed += sum(1 for name, text in after.items() if before.get(name) != text)
        used = sorted(set(re.findall(r"\b(worker-init|lazy)\b", proc.stdout)))
        return Measured(case, added, changed, "+".join(used))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=os.environ.get("PYTHONPATH", str(ROOT / "src")),
                        help="the src folder of the workersafe to measure")
    parser.add_argument("--per-case", action="store_true", help="print every case")
    args = parser.parse_args()
    results = [measure(case, args.src) for case in [*golden_cases(), *runtime_cases()]]
    if args.per_case:
        for m in results:
            print(f"{m.case.corpus:8} {m.case.name:45} {m.strategies:18} "
                  f"+{m.added:4} classes {m.classes}")
    print("| corpus | strategy | cases | fixed classes | added lines | per class |")
    print("|---|---|---:|---:|---:|---:|")
    for corpus in ("goldens", "runtime"):
        for label, keep in (("worker-init only", lambda s: s == "worker-init"),
                            ("lazy only", lambda s: s == "lazy"),
                            ("all", lambda s: True)):
            rows = [m for m in results if m.case.corpus == corpus and m.classes
                    and keep(m.strategies)]
            added = sum(m.added for m in rows)
            fixed = sum(m.classes for m in rows)
            ratio = f"{added / fixed:.1f}" if fixed else "-"
            print(f"| {corpus} | {label} | {len(rows)} | {fixed} | {added} | {ratio} |")


if __name__ == "__main__":
    main()
