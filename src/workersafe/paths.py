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


# What marks a project's root directory (the flake8 plugin's index lives there).
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git", "tox.ini")


def _marks_project(directory: str) -> bool:
    return any(os.path.exists(os.path.join(directory, m)) for m in PROJECT_MARKERS)


def project_root(filename: str) -> str:
    """The nearest directory above `filename` holding a project marker, else its own
    directory."""
    here = os.path.dirname(os.path.abspath(filename))
    return next((d for d in ancestors(here) if _marks_project(d)), here)


def find_index_dir(filename: str) -> Optional[str]:
    """The nearest `.workersafe_cache/index.json` above `filename`, no higher than the nearest
    directory holding a project marker: an index a run left above the project (in a home or a
    temporary directory) is another program's, and trusting it would make the plugin read, or
    rebuild, everything below it. A file in no project looks all the way up. (Here, not in
    `index.py`: the flake8 plugin asks for every file, and imports the index only when there
    is one.)"""
    for directory in ancestors(os.path.dirname(os.path.abspath(filename))):
        candidate = os.path.join(directory, CACHE_DIR_NAME)
        if os.path.isfile(os.path.join(candidate, INDEX_FILE)):
            return candidate
        if _marks_project(directory):
            return None
    return None
