"""Reference floor: read every ``.py`` file and search it for a few substrings.

The cheapest conceivable prefilter, for context next to ``workersafe check`` on a tree.
Usage: ``python bench/floor_scan.py DIR``
"""

from __future__ import annotations

import os
import sys

NEEDLES = (b"DataLoader", b"Dataset", b"requests", b"h5py", b"sqlite3", b"Session")


def main(argv: list[str]) -> int:
    hits = 0
    for root in argv:
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name), "rb") as fh:
                        data = fh.read()
                    hits += any(needle in data for needle in NEEDLES)
    print(f"{hits} files hold a needle", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
