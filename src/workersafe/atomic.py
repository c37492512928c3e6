"""The one atomic writer: a temp file in the target's directory, renamed over the target.

A reader, or a crash, sees the old file or the new one, never half of one. A process killed
between creating the temp file and the rename leaves that temp file behind; its name carries
the writer's process id (`.workersafe-<pid>-*.tmp`), so a later run removes the ones whose
writer is gone (`remove_stale_temps`) and never touches a live writer's file."""

from __future__ import annotations

import os
import re
import tempfile
from typing import Optional

TEMP_PREFIX = ".workersafe-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(rf"^{re.escape(TEMP_PREFIX)}(\d+)-.*{re.escape(TEMP_SUFFIX)}$")


def atomic_replace(path: str, data: bytes, mode: Optional[int] = None,
                   durable: bool = False) -> None:
    """Write `data` to `path` through a renamed temp file; `durable` also syncs the data and
    the rename to disk. Raises OSError; never leaves the temp file behind when it raises."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{TEMP_PREFIX}{os.getpid()}-",
                               suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def remove_stale_temps(directory: str) -> list[str]:
    """Remove temp files left in `directory` by writers that no longer run; their paths."""
    removed: list[str] = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        match = _TEMP_NAME.match(name)
        if match is None or _running(int(match.group(1))):
            continue
        path = os.path.join(directory, name)
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: it exists
        return True
    return True
