"""Baseline: `ast.parse` of every ``.py`` file under the given paths, in one process.

What any Python linter pays to read a tree (issue 21's floor). Files that do not parse are
counted and skipped. Usage: ``python bench/ast_floor.py PATH...``
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    files = lines = failed = 0
    for arg in argv:
        root = Path(arg)
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            if not path.is_file():
                continue
            source = path.read_bytes()
            try:
                ast.parse(source, str(path))
            except (SyntaxError, ValueError):
                failed += 1
            files += 1
            lines += source.count(b"\n")
    print(f"parsed {files} files, {lines} lines ({failed} failed)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
