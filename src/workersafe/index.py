"""The project index: what a whole-repository `workersafe check` learned, for the flake8 plugin.

`workersafe check DIR` (with the cache on) writes `.workersafe_cache/index.json`: the stat of
every file it discovered and the facts of every file it parsed. The plugin, checking one file,
finds the nearest index; when no other indexed file changed on disk since (size and mtime), it
links the file being checked against the rest of the project and reports confirmed findings.
Otherwise it falls back to single-file knowledge (or, with `workersafe-index = true`, rebuilds
the index first)."""

from __future__ import annotations

import json
import os
from typing import Callable, Optional

from . import __version__
from .atomic import atomic_replace
from .facts import FACTS_VERSION, FileFacts, from_jsonable, to_jsonable
from .paths import INDEX_FILE
from .records import record


@record()
class Index:
    root: str  # the directory holding .workersafe_cache
    paths: list[str]  # what the indexing run was given (absolute)
    stats: dict[str, tuple[int, int]]  # absolute path → (size, mtime_ns)
    facts: dict[str, FileFacts]  # absolute path → facts

    def fresh(self, except_path: str = "") -> bool:
        for path, (size, mtime) in self.stats.items():
            if path == except_path:
                continue
            try:
                st = os.stat(path)
            except OSError:
                return False
            if (st.st_size, st.st_mtime_ns) != (size, mtime):
                return False
        return True


def write_index(cache_dir: str, paths: list[str], facts: dict[str, FileFacts],
                files: list[str], encoded: Callable[[FileFacts], Optional[str]] = lambda f: None
                ) -> None:
    """`encoded`: a file's facts as JSON when the run has the text already (the facts cache
    read or wrote it): spliced in as it is, not encoded a second time (on a warm run over a
    large tree, encoding every file's facts again was a third of the run)."""
    stats = {}
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        stats[os.path.abspath(path)] = (st.st_size, st.st_mtime_ns)
    head = {
        "version": [FACTS_VERSION, __version__],
        "paths": [os.path.abspath(p) for p in paths],
        "stats": stats,
    }
    texts = []
    for path, f in facts.items():
        if f.error:
            continue
        text = encoded(f)
        if text is None:
            text = json.dumps(to_jsonable(f), separators=(",", ":"))
        texts.append(f"{json.dumps(os.path.abspath(path))}:{text}")
    # the document `json.dumps` would make of `head` with the facts last (the C encoder:
    # json.dump() is not)
    document = json.dumps(head, separators=(",", ":"))[:-1] + ',"facts":{' + ",".join(texts) \
        + "}}"
    os.makedirs(cache_dir, exist_ok=True)
    try:
        atomic_replace(os.path.join(cache_dir, INDEX_FILE), document.encode("utf-8"))
    except OSError:
        pass


def load_index(cache_dir: str) -> Optional[Index]:
    try:
        with open(os.path.join(cache_dir, INDEX_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
        if data.get("version") != [FACTS_VERSION, __version__]:
            return None
        facts = {p: from_jsonable(FileFacts, f) for p, f in data["facts"].items()}
        stats = {p: (int(v[0]), int(v[1])) for p, v in data["stats"].items()}
        return Index(os.path.dirname(cache_dir), list(data["paths"]), stats, facts)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
