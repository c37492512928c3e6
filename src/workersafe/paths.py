"""Where workersafe's own things are on disk, and the walk up to a project root."""

from __future__ import annotations

import os
from typing import Iterator

# The cache folder (facts cache, quiet files, the project index), in the project root.
CACHE_DIR_NAME = ".workersafe_cache"


def ancestors(path: str) -> Iterator[str]:
    """`path` made absolute, then each directory above it, up to the filesystem root."""
    current = os.path.abspath(path)
    while True:
        yield current
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent
