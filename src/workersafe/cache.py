"""On-disk cache of per-file facts, keyed by content: a second run over an unchanged tree costs
little more than hashing. Versioned; safe under concurrent runs (atomic renames); a damaged
entry is ignored with a warning."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Optional

from . import __version__
from .atomic import atomic_replace
from .discovery import SourceFile
from .facts import FACTS_VERSION, FileFacts, from_jsonable, to_jsonable
from .registry import Registry


class FactsCache:
    def __init__(self, directory: str, registry: Registry) -> None:
        self.root = os.path.join(directory, f"v{FACTS_VERSION}-{__version__}")
        self.salt = _registry_fingerprint(registry)
        self.warned = False
        self._ready = False
        # the JSON of the facts this run read or wrote (by id, with the facts kept alive): the
        # project index holds the same text (`encoded`), not a second encoding of each
        self._encoded: dict[int, tuple[FileFacts, str]] = {}

    def key(self, file: SourceFile, text: str) -> str:
        import hashlib

        digest = hashlib.blake2b(digest_size=20)
        for part in (self.salt, file.path, file.module, str(file.is_package), text):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".json")

    def get(self, file: SourceFile, text: str) -> Optional[FileFacts]:
        path = self._path(self.key(file, text))
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            facts: FileFacts = from_jsonable(FileFacts, json.loads(text))
            self._encoded[id(facts)] = (facts, text)
            return facts
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self.warn(f"ignoring damaged cache entry {path}: {type(exc).__name__}")
            return None

    def put(self, file: SourceFile, text: str, facts: FileFacts) -> None:
        encoded = self.write_json(self._path(self.key(file, text)), to_jsonable(facts))
        self._encoded[id(facts)] = (facts, encoded)

    def encoded(self, facts: FileFacts) -> Optional[str]:
        """The JSON of `facts` as this run read it from the cache or wrote it, or None."""
        found = self._encoded.get(id(facts))
        return found[1] if found is not None and found[0] is facts else None

    def read_json(self, path: str) -> Any:
        """A JSON entry of the cache; None when it is missing or damaged (then with a
        warning, once)."""
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self.warn(f"ignoring damaged cache entry {path}: {type(exc).__name__}")
            return None

    def write_json(self, path: str, data: object) -> str:
        """Atomically (a temp file renamed over); a failure warns once and is otherwise ignored.
        The JSON text written (or that failed to be)."""
        text = json.dumps(data, separators=(",", ":"))  # the C encoder: json.dump() is not
        try:
            self._prepare()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_replace(path, text.encode("utf-8"))
        except OSError as exc:
            self.warn(f"cannot write the cache ({exc.strerror or exc}); continuing without it")
        return text

    def _prepare(self) -> None:
        if self._ready:
            return
        base = os.path.dirname(self.root)
        os.makedirs(base, exist_ok=True)
        marker = os.path.join(base, ".gitignore")
        if not os.path.exists(marker):
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write("# created by workersafe\n*\n")
        self._ready = True

    def warn(self, message: str) -> None:
        if not self.warned:
            print(f"workersafe: warning: {message}", file=sys.stderr)
            self.warned = True


def _registry_fingerprint(registry: Registry) -> str:
    import hashlib

    rows = sorted(repr(t) for t in registry.types.values())
    return hashlib.blake2b("\n".join(rows).encode(), digest_size=8).hexdigest()


# a file modified this recently may change again within its mtime's tick
RACY_NS = 2_000_000_000


class QuietFiles:
    """Files that named no handle and no dataset when last read, with the size and mtime they
    had then. A warm run does not read such a file again while both are unchanged (a file's
    text decides its prefilter verdict; reading and testing every file was most of a warm
    run on a large tree). Files modified within the last two seconds are not recorded: a write
    within the same mtime tick could keep both."""

    def __init__(self, cache: FactsCache, prefilter_salt: str) -> None:
        self.cache = cache
        self.path = os.path.join(cache.root, f"quiet-{cache.salt}-{prefilter_salt}.json")
        self.started_ns = time.time_ns()
        self.entries = self._load()

    def _load(self) -> dict[str, list[int]]:
        data = self.cache.read_json(self.path)
        if data is None:
            return {}
        if isinstance(data, dict) and all(
                isinstance(v, list) and len(v) == 2 for v in data.values()):
            return data
        # (not a path → [size, mtime] table)
        self.cache.warn(f"ignoring damaged cache entry {self.path}: ValueError")
        return {}

    def unchanged(self, paths: list[str]) -> set[str]:
        """Those of `paths` recorded quiet and unchanged since."""
        out = set()
        for path in paths:
            recorded = self.entries.get(os.path.abspath(path))
            if recorded is not None and recorded == size_and_mtime(path):
                out.add(path)
        return out

    def record(self, quiet: set[str], loud: set[str]) -> None:
        """`quiet`: files read in this run that named nothing; `loud`: the others."""
        entries = dict(self.entries)
        for path in loud:
            entries.pop(os.path.abspath(path), None)
        for path in quiet:
            stamp = size_and_mtime(path)
            if stamp is not None and stamp[1] < self.started_ns - RACY_NS:
                entries[os.path.abspath(path)] = stamp
            else:
                entries.pop(os.path.abspath(path), None)
        if entries != self.entries:
            self.cache.write_json(self.path, entries)
            self.entries = entries


def size_and_mtime(path: str) -> Optional[list[int]]:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_size, status.st_mtime_ns]
