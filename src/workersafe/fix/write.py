"""Atomic writes: a temp file in the same directory, fsync, then rename over the original.
A reader (or a crash) sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import stat
import tempfile


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
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".workersafe-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
