"""`workersafe guard -- SCRIPT [ARGS...]`: run SCRIPT as `__main__` exactly as
`python SCRIPT ARGS` would (`sys.argv[0]` as typed, `sys.path[0]` the script's real folder
(symbolic links resolved), `__main__`'s attributes, its exit code, its traceback), with the
guard installed."""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import runpy
import sys
import traceback
import types
from types import TracebackType
from typing import IO, Optional

from ..exitcodes import EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED
from .hook import install, uninstall


def _exit_code(code: object) -> int:
    """What the interpreter makes of `SystemExit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _script_traceback(tb: Optional[TracebackType], script: str) -> Optional[TracebackType]:
    """The traceback from the script's first frame on (runpy's and ours left out)."""
    start = tb
    while start is not None and os.path.abspath(start.tb_frame.f_code.co_filename) != script:
        start = start.tb_next
    return start


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)


def _run_file(path: str) -> None:
    """Run the file as `python` runs a script: a fresh `__main__` module (`__file__` absolute,
    `__spec__` and `__package__` None, a source loader) in `sys.modules` while it runs;
    `sys.argv` left as it is (runpy would set `sys.argv[0]` to the absolute path)."""
    with open(path, "rb") as handle:
        source = handle.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __package__=None, __spec__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path),
                         __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def run_script(script: str, args: list[str], strict: bool = False, format: str = "text",
               output: Optional[str] = None, stream: Optional[IO[str]] = None) -> int:
    path = os.path.abspath(script)
    if not os.path.exists(path):
        print(f"workersafe guard: can't open file {script!r}: no such file", file=sys.stderr)
        return EXIT_ERROR
    try:
        guard = install(strict=strict, format=format, output=output, stream=stream)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "torch":
            raise
        print("workersafe guard: error: the guard needs torch (pip install torch)",
              file=sys.stderr)
        return EXIT_ERROR
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *args]
    # python puts the folder of the script's real file first (a directory or zip archive with
    # a `__main__.py`: itself)
    folder = os.path.dirname(os.path.realpath(path)) if os.path.isfile(path) and \
        not _is_zip(path) else path
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    try:
        if folder == path:
            runpy.run_path(script, run_name="__main__")  # sets sys.argv[0] to what it is given
        else:
            _run_file(path)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = EXIT_INTERRUPTED
    except BaseException as exc:  # noqa: BLE001 - the script's error, shown as Python would
        traceback.print_exception(type(exc), exc, _script_traceback(exc.__traceback__, path))
        code = 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        for out in (sys.stdout, sys.stderr):
            try:
                out.flush()
            except (OSError, ValueError):
                pass
    raised = guard.raised
    uninstall()
    if raised and code == 0:
        return EXIT_FINDINGS  # strict: a loader was stopped, even if the script carried on
    return code
