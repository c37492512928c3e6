"""`workersafe check | fix | rule`: a thin front end over the engine.

Exit codes: 0 clean, 1 findings (or `fix --diff` would change something), 2 usage or
internal error."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from dataclasses import replace
from typing import Optional, Sequence

from . import __version__
from .config import STRATEGIES, Config, ConfigError, discover_config, load_pyproject, split_list
from .exitcodes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, UsageError

# Saying which findings `fix` can fix means planning the fix: cheap for a few files, not for
# hundreds (`--show-fixes` asks for it anyway).
MARK_FIXABLE_FILES = 20


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="workersafe", description=(
        "Find (and fix) handles that PyTorch DataLoader worker processes would share."))
    parser.add_argument("--version", action="version", version=f"workersafe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser("check", help="report findings")
    _common(check)
    check.add_argument("--fix", action="store_true", help="apply fixes (same as `workersafe fix`)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--stats", action="store_true", help="print counters as JSON on stderr")
    check.add_argument("--show-fixes", action="store_true",
                       help="mark fixable findings even in many files (planning costs a parse "
                            "of each file with findings)")
    fix = sub.add_parser("fix", help="rewrite code so each worker creates its own handles")
    _common(fix)
    fix.add_argument("--diff", action="store_true", help="print a diff, write nothing")
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="e.g. WS101")
    rule.add_argument("--all", action="store_true", help="list every rule")
    return parser


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
    parser.add_argument("--cache-dir", help="where the cache lives (default: ./.workersafe_cache)")
    parser.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-j", "--jobs", type=int, default=0,
                        help="worker processes for parsing (default: CPU count when it pays)")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="fix strategy (default: worker-init, or the config's fix-strategy)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return EXIT_ERROR
        if args.command == "rule":
            return _rule(args)
        config = _config(args)
        if args.command == "fix" or getattr(args, "fix", False):
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
    updates = {}
    if args.select:
        updates["select"] = tuple(split_list(args.select))
    if args.ignore:
        updates["ignore"] = tuple(split_list(args.ignore))
    if args.extend_exclude:
        updates["extend_exclude"] = config.extend_exclude + tuple(split_list(args.extend_exclude))
    if args.strategy:
        updates["fix_strategy"] = args.strategy
    return replace(config, **updates)


def make_engine(args: argparse.Namespace, config: Config):  # type: ignore[no-untyped-def]
    from .engine import Engine

    cache_dir = None
    if config.cache and not args.no_cache:
        cache_dir = args.cache_dir or os.path.join(os.getcwd(), ".workersafe_cache")
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
        findings = engine.check_bytes(name, sys.stdin.buffer.read())
        stats = None
    else:
        try:
            result = engine.check_paths(paths)
        except DiscoveryError as exc:
            raise UsageError(str(exc)) from None
        findings, stats = result.findings, result.stats
        _write_index(engine, paths, result)
        files_with_findings = {f.path for f in findings if f.plan}
        if args.show_fixes or len(files_with_findings) <= MARK_FIXABLE_FILES:
            findings = _mark_fixable(engine, result, config)
    sys.stdout.write(FORMATS[args.format](findings))
    if args.stats and stats is not None:
        print(json.dumps(stats.as_dict()), file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _mark_fixable(engine, result, config: Config) -> list:  # type: ignore[no-untyped-def]
    """Say in each message whether `workersafe fix` can fix it (planning only, no writes)."""
    from dataclasses import replace as _replace

    if not any(f.plan for f in result.findings):
        return result.findings
    from .fix.rewrite import Rewriter

    try:
        _, outcomes = Rewriter(engine, result, config.fix_strategy).run()
    except Exception:  # noqa: BLE001 - marking is a courtesy; never fail a check over it
        return result.findings
    verdict = {(o.finding.path, o.finding.span, o.finding.code): o for o in outcomes}
    marked = []
    for finding in result.findings:
        outcome = verdict.get((finding.path, finding.span, finding.code))
        if outcome is None or finding.code == "WS001":
            marked.append(_replace(finding, fixable=False))
        elif outcome.status == "fixed":
            marked.append(_replace(finding, message=finding.message + " [fixable]",
                                   fixable=True))
        else:
            marked.append(_replace(finding, message=f"{finding.message} [not fixable: "
                                                    f"{outcome.note}]", fixable=False))
    return marked


def _write_index(engine, paths: list[str], result) -> None:  # type: ignore[no-untyped-def]
    """A whole-directory, linked run leaves an index the flake8 plugin can link against."""
    if engine.cache_dir and engine.link and any(os.path.isdir(p) for p in paths):
        from .index import write_index

        write_index(engine.cache_dir, paths, result.facts, [f.path for f in result.files])


def _fix(args: argparse.Namespace, config: Config) -> int:
    try:
        from .fix.apply import run_fix
    except ImportError as exc:
        if not (exc.name or "").startswith("workersafe.fix"):
            raise
        print("workersafe: error: `workersafe fix` is not implemented in this version",
              file=sys.stderr)
        return EXIT_ERROR

    run = run_fix(args.paths or ["."], config, make_engine(args, config),
                  diff=getattr(args, "diff", False))
    return run.exit_code


def _rule(args: argparse.Namespace) -> int:
    from .docs import rule_docs

    docs = rule_docs()
    if args.all or not args.code:
        for code, doc in sorted(docs.items()):
            summary = textwrap.shorten(doc.short, width=72, placeholder="...")
            print(f"{code}  {doc.name:31} {summary}")
        return EXIT_CLEAN
    doc = docs.get(args.code.upper())
    if doc is None:
        print(f"workersafe: error: unknown rule {args.code!r} "
              f"(known: {', '.join(sorted(docs))})", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(doc.text if doc.text.endswith("\n") else doc.text + "\n")
    return EXIT_CLEAN
