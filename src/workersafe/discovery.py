"""Discovery: command-line paths → Python files, with module names for linking.

Honours `.gitignore` (through `git ls-files` when the path is in a git work tree) and the
`exclude`/`extend-exclude` globs. Symlinks to directories are not followed (no loops)."""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import re
from typing import Callable, Iterable, Iterator, Optional

from .paths import ancestors
from .records import record


@record(frozen=True)
class SourceFile:
    path: str  # as shown to the user
    module: str  # dotted module name ("" when unknown)
    is_package: bool  # an __init__.py
    root: str  # the directory module names are relative to


NOTEBOOK_SUFFIX = ".ipynb"
SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)  # notebooks: their code cells, joined (notebook.py)


class DiscoveryError(Exception):
    """A path given on the command line does not exist or cannot be read."""


def discover(paths: Iterable[str], exclude: Iterable[str] = ()) -> list[SourceFile]:
    forget_paths()
    patterns = tuple(exclude)
    found: dict[str, SourceFile] = {}
    for path in paths:
        if not os.path.exists(path):
            raise DiscoveryError(_missing(path))
        if os.path.isdir(path):
            root = _source_root(path)
            for file_path, absolute in _walk(path, patterns):
                shown = os.path.normpath(file_path)
                if shown not in found:
                    found[shown] = _source_file(file_path, root, absolute)
        elif os.path.isfile(path):
            found.setdefault(os.path.normpath(path),
                             _source_file(path, _package_root(os.path.dirname(path) or ".")))
        else:  # a pipe (`<(cat x.py)`), a device: `check -` reads standard input
            raise DiscoveryError(f"{path}: not a file or directory (for standard input: -)")
    return sorted(found.values(), key=lambda f: f.path)


def _missing(path: str) -> str:
    """Why a path given on the command line names nothing to read (a link inside a walked
    directory that leads nowhere is skipped; one given by name is an error, as a missing file)."""
    if not os.path.islink(path):
        return f"{path}: no such file or directory"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path}: a symbolic link loop"
    return f"{path}: a broken symbolic link (to {os.readlink(path)!r}, which does not exist)"


def forget_paths() -> None:
    """Forget what the path caches below learnt: they answer from the working directory and
    the files on disk as they were (a long-running process, the language server or a test
    run, may change either between two runs)."""
    for cached in (_packages_of, _package_chain, _is_package_dir, _absolute):
        cached.cache_clear()
    _ROOT_PACKAGES.clear()


# The directories checked that are packages themselves (`repo/__init__.py`): their scripts,
# run from there, import `repo/common.py` as `common` (`module_spellings`).
_ROOT_PACKAGES: set[str] = set()


def _source_root(directory: str) -> str:
    """Module names are relative to this: the directory, its `src/`, or above a package."""
    if os.path.isfile(os.path.join(directory, "__init__.py")):
        _ROOT_PACKAGES.add(_absolute(directory))
        return _package_root(directory)
    return directory


def _top_package(directory: str, depth: int) -> str:
    """The topmost of `depth` nested packages ending at `directory` (absolute)."""
    top = _absolute(directory)
    for _ in range(depth - 1):
        top = os.path.dirname(top)
    return top


def _package_root(directory: str) -> str:
    """The first directory upwards that is not a package."""
    for current in ancestors(directory):
        if not os.path.isfile(os.path.join(current, "__init__.py")):
            break
    return current


def _source_file(path: str, root: str, absolute: Optional[str] = None) -> SourceFile:
    return SourceFile(os.path.normpath(path), module_name(path, root, absolute),
                      os.path.basename(path) == "__init__.py", root)


def module_name(path: str, root: str, absolute: Optional[str] = None) -> str:
    """`absolute`: `os.path.abspath(path)`, when the caller has it."""
    if absolute is None:
        absolute = os.path.abspath(path)
    absolute_root = _absolute(root)
    if absolute.startswith(absolute_root) and absolute[len(absolute_root):][:1] == os.sep:
        rel = absolute[len(absolute_root) + 1:]  # the common case, without relpath's cost
    else:
        rel = os.path.relpath(absolute, absolute_root)
    if rel.startswith(".."):
        rel = os.path.basename(path)
    stem = rel[:-3] if rel.endswith(".py") else rel[:-6] if rel.endswith(".ipynb") else rel
    parts = stem.split(os.sep)
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def module_spellings(path: str, module: str) -> tuple[str, ...]:
    """Other names `path` (known as `module`) may be imported by, besides `module` itself:
    - relative to the directory above its topmost regular package (`helpers/mylib/ds.py`,
      with `mylib/__init__.py` and no `helpers/__init__.py`, is `mylib.ds` once `helpers/` is
      on `sys.path`);
    - with the `src.` prefix that `module` lacks (`src/` stripped as a layout directory, but
      `from src.data import X` works from the directory above `src/`, whether `src/` is a
      namespace directory or a package);
    - relative to the checked root when the root itself is a package (`repo/__init__.py`:
      `repo/baselines/data.py` is `repo.baselines.data`, and `baselines.data` for the scripts
      run from the root; `repo/common.py` is `common` only when `repo/` is the directory
      checked, not for any package's module below it)."""
    directory = os.path.dirname(path) or "."
    is_init = os.path.basename(path) == "__init__.py"
    out: list[str] = []
    packages = _packages_of(directory)
    if packages:
        stem = os.path.basename(path)[:-3] if path.endswith(".py") else ""
        names = packages if is_init else packages + (stem,)
        if all(n.isidentifier() for n in names):
            out.append(".".join(names))
            if module == out[-1] and (len(names) > 2 or len(names) == 2 and _top_package(
                    directory, len(packages)) in _ROOT_PACKAGES):
                out.append(".".join(names[1:]))
    if "src" in path and module:
        base = directory if is_init else os.path.splitext(path)[0]
        parts, chain = module.split("."), _absolute(base).split(os.sep)
        if chain[-len(parts):] == parts and len(chain) > len(parts) \
                and chain[-len(parts) - 1] == "src":
            out.append("src." + module)
    return tuple(dict.fromkeys(n for n in out if n and n != module))


@functools.lru_cache(maxsize=4096)
def _packages_of(directory: str) -> tuple[str, ...]:
    return _package_chain(os.path.abspath(directory))


@functools.lru_cache(maxsize=4096)
def _package_chain(directory: str) -> tuple[str, ...]:
    """Names of the regular packages from the topmost one down to `directory` (absolute);
    empty when `directory` is not a package."""
    if not _is_package_dir(directory):
        return ()
    parent = os.path.dirname(directory)
    above = _package_chain(parent) if parent != directory else ()
    return above + (os.path.basename(directory),)


@functools.lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def module_aliases(files: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Other spelling → module, over (path, module) pairs: a spelling that is some file's own
    module name, or that two files could claim, is left out (never a guess)."""
    pairs = [(p, m) for p, m in files if m]
    primary = {m for _, m in pairs}
    claims: dict[str, set[str]] = {}
    for path, module in pairs:
        for spelling in module_spellings(path, module):
            if spelling not in primary:
                claims.setdefault(spelling, set()).add(module)
    return {s: next(iter(ms)) for s, ms in claims.items() if len(ms) == 1}


def module_of_import(current_module: str, is_package: bool, level: int, name: str) -> str:
    """Absolute module for `from <level dots><name> import ...` in `current_module`."""
    if level == 0:
        return name
    parts = current_module.split(".") if current_module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if name:
        return f"{base}.{name}" if base else name
    return base


@functools.lru_cache(maxsize=64)
def _absolute(path: str) -> str:
    return os.path.abspath(path)


def _exclusion(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """`path` → excluded by a pattern, matched against its name or its normalised path (one
    compiled expression: fnmatch per pattern and path was a sixth of a warm run on torch)."""
    if not patterns:
        return lambda path: False
    # A pattern without a wildcard matches by equality: a set (the defaults are all such but
    # one; compiling them cost ~0.3 ms of every run's start).
    literal = frozenset(os.path.normcase(p) for p in patterns if not re.search(_WILDCARD, p))
    wild = [p for p in patterns if re.search(_WILDCARD, p)]
    matches = re.compile("|".join(
        f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in wild)).match if wild else None

    def excluded(path: str) -> bool:
        name = os.path.normcase(os.path.basename(path.rstrip(os.sep)))
        normal = os.path.normcase(os.path.normpath(path))
        if name in literal or normal in literal:
            return True
        return matches is not None and bool(matches(name) or matches(normal))

    return excluded


_WILDCARD = r"[*?\[]"  # what fnmatch reads as other than itself (compiled by `re` when used)


def _walk(directory: str, patterns: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """Source files below `directory`, each with its absolute path; symlinked directories are
    not entered. (scandir: a file's type comes with its directory entry, without a stat per
    file; the absolute paths are joined from the directory's, as `os.path.abspath` would make
    them, without asking for the working directory once per file.)"""
    tracked = _git_visible(directory)
    asked = False  # whether git was asked if `directory` is ignored (`_git_ignored`)
    _excluded = _exclusion(patterns)
    pending = [(directory, os.path.abspath(directory))]
    while pending:
        current, absolute_current = pending.pop()
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue  # vanished or unreadable: as os.walk, skip it
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    path = os.path.join(current, name)
                    if not _excluded(path):
                        pending.append((path, os.path.join(absolute_current, name)))
                    continue
                # the paths joined only for a source file (most entries of a tree are not)
                if not name.endswith(SUFFIXES) or name.endswith(".fixed.py"):
                    continue
                path = os.path.join(current, name)
                if _excluded(path) or not entry.is_file():  # is_file follows symlinks
                    continue
            except OSError:
                continue
            absolute = os.path.join(absolute_current, name)
            if tracked is not None and absolute not in tracked:
                if not asked:  # the first file git does not list: is the tree itself ignored?
                    asked = True
                    if _git_ignored(directory):
                        tracked = None  # asked for explicitly: an ignored tree is still checked
                if tracked is not None:
                    continue
            yield path, absolute


def _git_visible(directory: str) -> Optional[set[str]]:
    """Files git tracks or would track (not ignored) below `directory`; None outside git.
    Outside a work tree (no `.git` here or above, no `GIT_DIR`) git is not run at all; inside
    one, `ls-files` fails by itself when git sees no repository. Whether `directory` is
    itself ignored (then nothing is filtered) is asked only if a file is missing from the list
    (`_git_ignored`): most trees list every file, and each git run costs ~3 ms of a check."""
    if not _in_git_work_tree(directory):
        return None
    listed = _git(["-C", directory, "ls-files", "-z", "--cached", "--others",
                   "--exclude-standard", "--", "."], timeout=60)
    if listed is None or listed[0] != 0:
        return None
    base = os.path.abspath(directory)
    names = listed[1].decode("utf-8", "replace").split("\0")
    return {os.path.join(base, p) for p in names if p}


def _git_ignored(directory: str) -> bool:
    """`directory` is ignored by git (or git cannot say: then nothing is filtered either)."""
    ignored = _git(["-C", directory, "check-ignore", "-q", "."], timeout=30)
    return ignored is None or ignored[0] == 0


def _git(args: list[str], timeout: float) -> Optional[tuple[int, bytes]]:
    """(exit code, standard output) of `git ARGS`, standard error dropped; None when git
    cannot be run or takes longer than `timeout` seconds (then it is killed). Spawned with
    `os.posix_spawnp` where there is one: importing `subprocess` costs ~2.5 ms, more than the
    git run it would make (and every check in a work tree makes one); elsewhere `subprocess`."""
    if not hasattr(os, "posix_spawnp"):  # Windows
        import subprocess

        try:
            done = subprocess.run(["git", *args], capture_output=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.returncode, done.stdout
    import select
    import signal
    import time

    read_end, write_end = os.pipe()  # (both close on exec: the child's stdout is a dup)
    try:
        # as `subprocess` starts a child: SIGPIPE as the default, not Python's ignored
        pid = os.posix_spawnp("git", ["git", *args], os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1),
                                            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
                              setsigdef=(signal.SIGPIPE,))
    except OSError:
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
    chunks: list[bytes] = []
    status: Optional[int] = None
    try:
        waiting = select.poll()
        waiting.register(read_end, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not waiting.poll(left * 1000):
                return None  # too long: killed below
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        status = os.waitpid(pid, 0)[1]
    finally:
        os.close(read_end)
        if status is None:  # timed out or interrupted: not left running
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def _in_git_work_tree(directory: str) -> bool:
    """A `.git` (a folder, or a file in a linked work tree or submodule) here or above, or a
    repository named by the environment: only then can git list anything here."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    return any(os.path.exists(os.path.join(d, ".git")) for d in ancestors(directory))
