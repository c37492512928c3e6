"""Baseline: parse every ``.py`` file under the given paths with libcst, in one process.

No metadata, no visitors: the floor any libcst-based checker pays. Exit 2 on a parse error.
Usage: ``python bench/bare_parse.py PATH...``
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst


def iter_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for arg in paths:
        path = Path(arg)
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def main(argv: list[str]) -> int:
    lines = 0
    for path in iter_files(argv):
        source = path.read_bytes()
        try:
            libcst.parse_module(source)
        except libcst.ParserSyntaxError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        lines += source.count(b"\n")
    print(f"parsed {lines} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
