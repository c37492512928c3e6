"""`workersafe fix` when notebooks are among the files: the fixer rewrites the joined code of
each notebook like any module; the new cells go back into the notebook's JSON in its own
layout (notebook.rewrite), and the notebook is replaced atomically, only if it is still the
one that was read."""

from __future__ import annotations

import argparse
import difflib
import sys

from .records import replace
from .config import Config
from .engine import CheckResult, Engine
from .exitcodes import EXIT_ERROR, UsageError
from .findings import Finding
from .fixes import FixResult, atomic_write, render_diff, report_outcomes, rewrite, write_all
from .notebook import NotebookWriteError, changed_cells, in_cells, is_notebook, load
from .notebook import rewrite as rewrite_notebook
from .source import SourceError


def has_notebooks(engine: Engine, paths: list[str]) -> bool:
    from .discovery import DiscoveryError

    try:
        return any(is_notebook(f.path) for f in engine.discover(paths))
    except DiscoveryError:
        return False  # `fix` reports it


def run_fix(args: argparse.Namespace, config: Config, engine: Engine) -> int:
    from .discovery import DiscoveryError

    try:
        result = engine.check_paths(args.paths or ["."])
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    fixed = rewrite(engine, result, config.fix_strategy).result
    assert fixed is not None
    notebooks: dict[str, tuple[bytes, bytes]] = {}  # path → (bytes on disk, new bytes)
    failures: list[tuple[str, str]] = []
    for path in [p for p in fixed.new_sources if is_notebook(p)]:
        try:
            notebooks[path] = _new_notebook(path, result, fixed.new_sources[path])
        except (OSError, NotebookWriteError) as exc:
            failures.append((path, str(exc)))
    if failures:  # a fix across files is written whole or not at all
        note = f"not fixed: {failures[0][1]}"
        for outcome in fixed.outcomes:
            if outcome.status == "fixed":
                outcome.status, outcome.note = "failed", note
        fixed, notebooks = FixResult({}, fixed.outcomes), {}
    texts = {p: s.text for p, s in result.sources.items() if is_notebook(p)}
    located = in_cells([o.finding for o in fixed.outcomes], texts)
    shown = FixResult(fixed.new_sources, [replace(o, finding=_shown(f)) for o, f in zip(
        fixed.outcomes, located)])
    plain = FixResult({p: b for p, b in fixed.new_sources.items() if not is_notebook(p)},
                      fixed.outcomes, fixed.providers)
    if getattr(args, "diff", False):
        sys.stdout.write(render_diff(result, plain) + _cell_diffs(notebooks))
        report_outcomes(shown, sys.stderr, diff_only=True)
        return fixed.exit_code(diff_only=True)
    write_failures = write_all(result, plain)
    for path, (old, new) in sorted(notebooks.items()):
        try:
            atomic_write(path, old, new)
        except OSError as exc:
            write_failures.append((path, exc.strerror or str(exc)))
    report_outcomes(shown, sys.stdout, diff_only=False)
    for path, message in failures + write_failures:
        print(f"{path}: not written: {message}", file=sys.stderr)
    return EXIT_ERROR if failures or write_failures else fixed.exit_code(diff_only=False)


def _cell_diffs(notebooks: dict[str, tuple[bytes, bytes]]) -> str:
    """The notebooks' changes cell by cell, as the notebook shows them (magics as written),
    each headed `a/nb.ipynb:cell N`."""
    chunks: list[str] = []
    for path, (old, new) in sorted(notebooks.items()):
        for number, before, after in changed_cells(old, new):
            chunks.extend(difflib.unified_diff(
                _lines(before), _lines(after), fromfile=f"a/{path}:cell {number}",
                tofile=f"b/{path}:cell {number}"))
    return "".join(chunks)


def _lines(text: str) -> list[str]:
    """A cell's lines for a diff, each ending with a newline (a cell's last line has none)."""
    return [line if line.endswith("\n") else line + "\n"
            for line in text.splitlines(keepends=True)]


def _shown(finding: Finding) -> Finding:
    """The fix report prints `path:line:col`: in a notebook, `path:cell N:line:col`."""
    if finding.cell is None:
        return finding
    return replace(finding, path=f"{finding.path}:cell {finding.cell}")


def _new_notebook(path: str, result: CheckResult, new_code: bytes) -> tuple[bytes, bytes]:
    """The notebook on disk and as fixed; NotebookWriteError if it cannot be written back:
    changed since it was read, or invalid by nbformat's whole schema, which `check` does not
    ask of it (a code cell without `outputs`, say: Jupyter runs it, `fix` does not rewrite it)."""
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        code = load(raw).code
    except SourceError as exc:
        raise NotebookWriteError(str(exc)) from None
    if code != result.sources[path].text:
        raise NotebookWriteError("the notebook changed on disk while fixing")
    return raw, rewrite_notebook(raw, new_code.decode("utf-8"))
