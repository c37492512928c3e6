"""Writing a fixed file: only over the bytes the fix was made from, never through a symbolic
link or into a read-only file, atomically and durably (see `workersafe.atomic`)."""

from __future__ import annotations

import os
import stat

from ..atomic import atomic_replace


def atomic_write(path: str, expected_old: bytes, new: bytes) -> None:
    """Replace `path` with `new`, unless it changed on disk since it was read."""
    if os.path.islink(path):
        raise OSError(f"{path} is a symbolic link; not writing through it")
    with open(path, "rb") as handle:
        if handle.read() != expected_old:
            raise OSError(f"{path} changed on disk while fixing; not overwritten")
    if not os.access(path, os.W_OK) or not os.access(os.path.dirname(path) or ".", os.W_OK):
        raise PermissionError(13, "permission denied (read-only file or directory)", path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & stat.S_IWUSR:
        raise PermissionError(13, "the file is read-only", path)
    atomic_replace(path, new, mode=mode, durable=True)
