"""On-disk cache of per-file facts, keyed by content: a second run over an unchanged tree costs
little more than hashing. Versioned; safe under concurrent runs (atomic renames); a damaged
entry is ignored with a warning."""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

from . import __version__
from .discovery import SourceFile
from .facts import FACTS_VERSION, FileFacts, from_jsonable, to_jsonable
from .registry import Registry

CACHE_DIR_NAME = ".workersafe_cache"


class FactsCache:
    def __init__(self, directory: str, registry: Registry) -> None:
        self.root = os.path.join(directory, f"v{FACTS_VERSION}-{__version__}")
        self.salt = _registry_fingerprint(registry)
        self.warned = False
        self._ready = False

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
                return from_jsonable(FileFacts, json.load(handle))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self._warn(f"ignoring damaged cache entry {path}: {type(exc).__name__}")
            return None

    def put(self, file: SourceFile, text: str, facts: FileFacts) -> None:
        path = self._path(self.key(file, text))
        try:
            self._prepare()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(to_jsonable(facts), handle, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError as exc:
            self._warn(f"cannot write the cache ({exc.strerror or exc}); continuing without it")

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

    def _warn(self, message: str) -> None:
        if not self.warned:
            print(f"workersafe: warning: {message}", file=sys.stderr)
            self.warned = True


def _registry_fingerprint(registry: Registry) -> str:
    import hashlib

    rows = sorted(repr(t) for t in registry.types.values())
    return hashlib.blake2b("\n".join(rows).encode(), digest_size=8).hexdigest()
