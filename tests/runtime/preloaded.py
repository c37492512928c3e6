"""A runtime program's interpreter with torch already imported: the harness's fork server.

Importing torch costs about a second of CPU, and the runtime suite runs some seven hundred
programs. This process imports torch and numpy once, then waits for requests on its stdin (one
JSON line each: the program, its environment, its directory and where its output goes). For
each it forks a child that becomes the program: its own session (process group), a fresh
environment, stdin from /dev/null, stdout and stderr into the files named, the program's
directory first on ``sys.path``, and the program run as ``__main__`` with its path as
``sys.argv[0]``, as ``python program.py`` runs it. The child then ends as that interpreter
would: ``SystemExit`` gives the exit code, an uncaught exception its traceback and 1, non-daemon
threads are joined and ``atexit`` runs. This server answers ``{"pid": ...}`` when the child
starts and ``{"returncode": ...}`` (negative: the signal) when it ends; one request at a time.

What differs from a fresh interpreter: torch and numpy are imported before the program's
first line (any program of the suite imports them first anyway), and the interpreter's flags
are this process's. Spawned and forkserver workers are fresh interpreters as always: they
import the program's main module by its path, as for any script.
"""

from __future__ import annotations

import gc
import io
import json
import os
import runpy
import sys


def _serve(requests: io.TextIOWrapper, replies: io.TextIOWrapper) -> dict[str, object]:
    """Answer requests until stdin closes (then exit); return the request in a forked child."""
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            return request
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()
    raise SystemExit(0)


def _become(request: dict[str, object]) -> str:
    """Turn this forked child into the requested program's process; return its path."""
    os.setsid()
    program = str(request["program"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    # Unbuffered, as the harness asks of every program (PYTHONUNBUFFERED).
    sys.stdin = open(0, closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False),
                                  line_buffering=True, write_through=True)
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False),
                                  errors="backslashreplace", line_buffering=True,
                                  write_through=True)
    environ = request["env"]
    assert isinstance(environ, dict)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in environ.items()})
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    os.chdir(str(request["cwd"]))
    sys.path[0] = os.path.dirname(program)
    return program


def main() -> None:
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import torch.utils.data  # noqa: F401

    # What is loaded now stays: no child's collector walks it, nor copies its pages to do so
    # (a fresh interpreter's exit costs ~0.4 s with torch loaded, a frozen one's about half).
    gc.freeze()

    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # nothing of this process reaches the reply channel by accident
    os.close(null)
    program = _become(_serve(requests, replies))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
