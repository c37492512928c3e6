"""Where workersafe's own things are on disk, and the walk up to a project root."""

from __future__ import annotations

import os
from typing import Iterator, Optional

# The cache folder (facts cache, quiet files, the project index), in the project root.
CACHE_DIR_NAME = ".workersafe_cache"
# The project index in it (`index.py`).
INDEX_FILE = "index.json"


def ancestors(path: str) -> Iterator[str]:
    """`path` made absolute, then each directory above it, up to the filesystem root."""
    current = os.path.abspath(path)
    while True:
        yield current
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def find_index_dir(filename: str) -> Optional[str]:
    """The nearest `.workersafe_cache/index.json` above `filename` (here, not in `index.py`:
    the flake8 plugin asks for every file, and imports the index only when there is one)."""
    for directory in ancestors(os.path.dirname(os.path.abspath(filename))):
        candidate = os.path.join(directory, CACHE_DIR_NAME)
        if os.path.isfile(os.path.join(candidate, INDEX_FILE)):
            return candidate
    return None
