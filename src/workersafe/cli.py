"""`workersafe check | fix | rule`: a thin front end over the engine.

Exit codes: 0 clean, 1 findings (or `fix --diff` would change something), 2 usage or
internal error."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, NoReturn, Optional, Sequence

from .records import replace
from . import __version__, compiled
from .config import (
    STRATEGIES, Config, ConfigError, check_codes, discover_config, load_pyproject, split_list,
)
from .paths import CACHE_DIR_NAME
from .exitcodes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, UsageError
from .ruletable import BY_CODE, UNREADABLE

if TYPE_CHECKING:
    from .engine import CheckResult, Engine
    from .findings import Finding
    from .source import Source

# Saying which findings `fix` can fix means planning the fix: cheap for a few files, not for
# hundreds (`--show-fixes` asks for it anyway).
MARK_FIXABLE_FILES = 20


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


COMMANDS = ("check", "fix", "server", "guard", "rule")


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The whole command line; `only`: the command given (the first argument), whose parser
    alone is then built (each costs argparse's set-up and its translation lookups: ~1 ms of
    every run's start for the five)."""

    def wanted(command: str) -> bool:
        return only is None or only == command

    parser = _Parser(prog="workersafe", description=(
        "Find (and fix) handles that PyTorch DataLoader worker processes would share."))
    parser.add_argument("--version", action="version",
                        version=f"workersafe {__version__} ({compiled.status})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if wanted("check"):
        _check_options(sub.add_parser("check", help="report findings", description=(
            "Report handles that DataLoader worker processes would share. Python files and "
            "Jupyter notebooks (.ipynb: code cells checked as one module; a finding names its "
            "cell, `nb.ipynb:cell 3:8:24:`, and JSON output has a `cell` field, null outside "
            "notebooks).")))
    if wanted("fix"):
        fix = sub.add_parser("fix", help="rewrite code so each worker creates its own handles",
                             description=(
                                 "Rewrite code so each DataLoader worker creates its own "
                                 "handles. Notebooks (.ipynb) are rewritten cell by cell and "
                                 "written back in their own JSON layout; the report names the "
                                 "cell (`nb.ipynb:cell 3:8:24:`). Exit 1 while a finding is "
                                 "left unfixed (with --diff: also when it would change a "
                                 "file), 0 when every finding was fixed."))
        _common(fix)
        fix.add_argument("--diff", action="store_true", help="print a diff, write nothing")
    if wanted("server"):
        sub.add_parser("server", help="run the language server (LSP over stdio; needs the "
                                      "extra workersafe[lsp])",
                       description="A language server for editors: diagnostics as you type, "
                                   "a quick fix per finding, fix all, ignore with # noqa. "
                                   "Speaks LSP on standard input/output. Install with: pip "
                                   "install 'workersafe[lsp]'. Set-up: docs/editors.md.")
    if wanted("guard"):
        _guard_parser(sub)
    if wanted("rule"):
        rule = sub.add_parser("rule", help="print a rule's documentation")
        rule.add_argument("code", nargs="?", help="e.g. WS101")
        rule.add_argument("--all", action="store_true", help="list every rule")
    return parser


def _check_options(check: argparse.ArgumentParser) -> None:
    _common(check)
    check.add_argument("--fix", action="store_true", help="apply fixes (same as `workersafe fix`)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--stats", action="store_true", help="print counters as JSON on stderr")
    check.add_argument("--show-fixes", action="store_true",
                       help="mark fixable findings even in many files (planning costs a parse "
                            "of each file with findings)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: .); '-' reads standard input")
    parser.add_argument("--select", help="comma-separated code prefixes to report")
    parser.add_argument("--ignore", help="comma-separated code prefixes to skip")
    parser.add_argument("--extend-exclude", help="more comma-separated globs to skip")
    parser.add_argument("--config", help="a pyproject.toml to read instead of searching")
    parser.add_argument("--stdin-filename", help="the name to report for standard input")
    parser.add_argument("--no-link", action="store_true",
                        help="check each file on its own (no cross-file linking)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--cache-dir", help=f"where the cache lives (default: ./{CACHE_DIR_NAME})")
    parser.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-j", "--jobs", type=int, default=0,
                        help="worker processes for parsing (default: the CPUs other "
                             "processes leave idle, when there is enough work)")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="fix strategy (default: worker-init, or the config's fix-strategy)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        given = sys.argv[1:] if argv is None else list(argv)
        command = given[0] if given and given[0] in COMMANDS else None
        args = build_parser(command).parse_args(given)
        if args.command is None:
            build_parser().print_help()
            return EXIT_ERROR
        if args.command == "rule":
            return _rule(args)
        if args.command == "server":
            return _server()
        if args.command == "guard":
            return _guard(args)
        config = _config(args)
        fixing = args.command == "fix" or getattr(args, "fix", False)
        with _fewer_collections(none=not fixing):
            if fixing:
                return _fix(args, config)
            return _check(args, config)
    except UsageError as exc:
        print(f"workersafe: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ConfigError as exc:
        print(f"workersafe: configuration error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("workersafe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as exc:  # noqa: BLE001 - report, with the exit code for internal errors
        print(f"workersafe: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("WORKERSAFE_DEBUG"):
            raise
        return EXIT_ERROR


@contextmanager
def _fewer_collections(none: bool = False) -> Iterator[None]:
    """The cyclic garbage collector's work cut for one run: what is loaded so far (modules,
    tables) frozen out of its scans, and a young-generation collection every 10,000
    allocations rather than 700. A run builds hundreds of thousands of objects with no
    reference cycle (trees, facts, the cache's JSON), and each collection rescanned them:
    measured, -26% CPU on a warm run of the ML corpus, -12% on pytorch_geometric, -2 to -6%
    cold, the same peak memory (bench/RESULTS.md). Restored afterwards (tests call `main`).

    `none`: no collection at all while it runs (`check`). What a check builds lives until
    its report (texts, facts, the linked project), and each collection scanned it again for
    nothing: on pytorch_geometric 15 collections cost 0.07 s of a 1.0 s cold check. The
    garbage with cycles it leaves is small (9,000 objects, about 60 per file parsed there;
    84,000 on the ML corpus, whose findings the fixer also plans: the same peak memory),
    freed by the next collection after the run. `fix` writes libcst trees: it collects."""
    import gc

    threshold = gc.get_threshold()
    enabled = gc.isenabled()
    # objects someone else froze could not be told from ours afterwards: then none is frozen
    # (seen on 3.12 under pytest, which had frozen some)
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(10_000, *threshold[1:])
    if none:
        gc.disable()
    try:
        yield
    finally:
        if none and enabled:
            gc.enable()
        gc.set_threshold(*threshold)
        if freeze:
            gc.unfreeze()


def _config(args: argparse.Namespace) -> Config:
    if args.config:
        config = load_pyproject(args.config)
    else:
        starts = [p for p in args.paths if p != "-"]
        if "-" in args.paths and args.stdin_filename:
            starts = [args.stdin_filename]  # an editor's buffer: its file's project decides
        config = discover_config(starts or ["."])
    for note in config.notes:
        print(f"workersafe: note: {note}", file=sys.stderr)
    updates: dict[str, Any] = {}
    for option in ("select", "ignore"):
        value = getattr(args, option)
        if value:
            codes = tuple(split_list(value))
            try:  # an unknown code: a usage error (exit 2) naming it, as ruff does
                check_codes(codes, f"--{option}")
            except ConfigError as exc:
                raise UsageError(str(exc)) from None
            updates[option] = codes
    if args.extend_exclude:
        updates["extend_exclude"] = config.extend_exclude + tuple(split_list(args.extend_exclude))
    if args.strategy:
        updates["fix_strategy"] = args.strategy
    return replace(config, **updates)


def make_engine(args: argparse.Namespace, config: Config) -> Engine:
    from .engine import Engine

    cache_dir = None
    if config.cache and not args.no_cache:
        cache_dir = args.cache_dir or os.path.join(os.getcwd(), CACHE_DIR_NAME)
    return Engine(config, link=not args.no_link, prefilter=not args.no_prefilter,
                  jobs=args.jobs, cache_dir=cache_dir, skip_quiet=args.command == "check")


def _check(args: argparse.Namespace, config: Config) -> int:
    from .discovery import DiscoveryError
    from .report import FORMATS

    engine = make_engine(args, config)
    paths = args.paths or ["."]
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("'-' (standard input) cannot be mixed with other paths")
        name = args.stdin_filename or "stdin"
        findings = _check_stdin(engine, name, sys.stdin.buffer.read())
        stats = None
    else:
        try:
            result = engine.check_paths(paths)
        except DiscoveryError as exc:
            raise UsageError(str(exc)) from None
        findings, stats = result.findings, result.stats
        if not stats.files:  # `check docs/`: exit 0, but not as if the code had been checked
            print(f"workersafe: note: no Python files or notebooks found in {' '.join(paths)}",
                  file=sys.stderr)
        _write_index(engine, paths, result)
        files_with_findings = {f.path for f in findings if f.plan}
        if files_with_findings and (args.show_fixes
                                    or len(files_with_findings) <= MARK_FIXABLE_FILES):
            from .fixable import mark_fixable

            findings = mark_fixable(engine, result, config)
        findings = _in_cells(findings, result.sources)
    sys.stdout.write(FORMATS[args.format](findings))
    if args.stats and stats is not None:
        import json

        print(json.dumps(stats.as_dict()), file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _check_stdin(engine: Engine, name: str, raw: bytes) -> list[Finding]:
    from .facts import Span
    from .findings import Finding
    from .notebook import is_notebook, notebook_source
    from .source import SourceError

    if name == "stdin" and _notebook_json(raw):
        name = "stdin.ipynb"
    if not is_notebook(name):
        return engine.check_bytes(name, raw)
    try:
        source = notebook_source(name, raw)
    except SourceError as exc:
        return [Finding(name, Span(1, 0, 1, 0), UNREADABLE, f"cannot analyse this file: {exc}")]
    return _in_cells(engine.check_text(name, source.text), {name: source})


def _notebook_json(raw: bytes) -> bool:
    """`cat nb.ipynb | workersafe check -`, with no --stdin-filename to say it is a notebook:
    its JSON is a valid Python expression, read as one it would pass as clean."""
    if not raw.lstrip()[:1] == b"{" or b'"nbformat"' not in raw or b'"cells"' not in raw:
        return False
    import json

    try:
        data = json.loads(raw)
    except ValueError:
        return False
    return isinstance(data, dict) and "nbformat" in data and "cells" in data


def _in_cells(findings: list[Finding], sources: dict[str, Source]) -> list[Finding]:
    """Findings in notebooks are reported by cell and line within the cell. (The notebook
    module is imported only when a notebook was read: ~5 ms of a run's start-up.)"""
    from .discovery import NOTEBOOK_SUFFIX

    texts = {p: s.text for p, s in sources.items() if p.endswith(NOTEBOOK_SUFFIX)}
    if not texts:
        return findings
    from .notebook import in_cells

    return in_cells(findings, texts)


def _write_index(engine: Engine, paths: list[str], result: CheckResult) -> None:
    """A whole-directory, linked run leaves an index the flake8 plugin can link against."""
    if engine.cache_dir and engine.link and any(os.path.isdir(p) for p in paths):
        from .index import write_index

        write_index(engine.cache_dir, paths, result.facts, [f.path for f in result.files],
                    engine.cache.encoded if engine.cache else lambda f: None)


def _fix(args: argparse.Namespace, config: Config) -> int:
    try:
        from .fix.apply import run_fix
    except ImportError as exc:
        if not (exc.name or "").startswith("workersafe.fix"):
            raise
        print("workersafe: error: `workersafe fix` is not implemented in this version",
              file=sys.stderr)
        return EXIT_ERROR

    engine = make_engine(args, config)
    from .notebook_fix import has_notebooks

    if "-" not in args.paths and has_notebooks(engine, args.paths or ["."]):
        from .notebook_fix import run_fix as run_notebook_fix

        return run_notebook_fix(args, config, engine)
    run = run_fix(args.paths or ["."], config, engine, diff=getattr(args, "diff", False))
    return run.exit_code


# --- `workersafe guard`: the runtime check (workersafe/guard/, docs/guard.md) ----------------
def _guard_parser(sub: Any) -> None:
    guard = sub.add_parser(
        "guard", help="run a script, checking each DataLoader as its workers start",
        usage="workersafe guard [--strict] [--format {text,json}] [--output FILE] -- "
              "SCRIPT [ARGS...]",
        description="Run SCRIPT as `python SCRIPT ARGS` would, with the runtime guard: when a "
                    "DataLoader starts worker processes, report the live handles its dataset "
                    "holds that the workers would share (or that will not pickle into spawn "
                    "workers), on standard error. Exit code: the script's (--strict: 1 if a "
                    "loader was stopped). Details: docs/guard.md.")
    guard.add_argument("--strict", action="store_true",
                       help="raise before any worker starts (the run exits non-zero)")
    guard.add_argument("--format", choices=("text", "json"), default="text")
    guard.add_argument("--output", metavar="FILE",
                       help="also append each finding to FILE (one JSON object a line)")
    guard.add_argument("script", metavar="SCRIPT")
    guard.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS")


def _guard(args: argparse.Namespace) -> int:
    from .guard.run import run_script

    return run_script(args.script, list(args.script_args), strict=args.strict,
                      format=args.format, output=args.output)


def _server() -> int:
    # The start-up imports (pygls's protocol types: thousands of classes; the engine) build
    # objects that live as long as the server: no cycle collection while they are made (each
    # would walk all that came before: ~40 ms of the first diagnostics' ~0.3 s of CPU), and
    # none of the later ones walks them again (`freeze`).
    import gc

    gc.disable()
    try:
        from .lsp.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs", "attrs"):
            raise
        print("workersafe: error: `workersafe server` needs the language server extra: "
              "pip install 'workersafe[lsp]'", file=sys.stderr)
        return EXIT_ERROR
    finally:
        gc.freeze()
        gc.enable()
    return serve()


def _rule(args: argparse.Namespace) -> int:
    from .docs import rule_docs

    if args.all or not args.code:
        import textwrap

        for code, rule in sorted(BY_CODE.items()):
            summary = textwrap.shorten(rule.summary, width=72, placeholder="...")
            print(f"{code}  {rule.name:31} {summary}")
        return EXIT_CLEAN
    code = args.code.upper()
    if code not in BY_CODE:
        print(f"workersafe: error: unknown rule {args.code!r} "
              f"(known: {', '.join(sorted(BY_CODE))})", file=sys.stderr)
        return EXIT_ERROR
    text = rule_docs()[code].text
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_CLEAN
