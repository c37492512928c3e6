"""See it break, see it fixed.

    python tests/runtime/demo.py [PROGRAM] [--workers N] [--strategy worker-init|lazy]

Starts a local HTTPS item server (certificates from a throwaway ``trustme`` CA), runs PROGRAM
(default: ``examples/remote_images/train.py`` when present, else
``fixtures/runtime/requests_init_warm.py``) with DataLoader workers forked from a parent
whose connection pool is already open, then runs ``workersafe fix`` on a copy and runs the
copy again. Exit status 0 when the program broke before the fix and works after it.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_harness import (  # noqa: E402
    REPO,
    Config,
    Outcome,
    Target,
    run_program,
    run_workersafe,
    workersafe_command,
    write_zip_archive,
)
from tls_server import ItemServer, make_test_ca  # noqa: E402

DEFAULT_PROGRAMS = (
    REPO / "examples" / "remote_images" / "train.py",
    REPO / "fixtures" / "runtime" / "requests_init_warm.py",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", nargs="?", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--strategy", choices=("worker-init", "lazy"), default="worker-init")
    return parser.parse_args(argv)


def default_program() -> Path:
    return next(path for path in DEFAULT_PROGRAMS if path.exists())


def show(title: str, outcome: Outcome) -> None:
    print(f"{title}: {outcome.describe()}")


def local_modules(program: Path) -> list[Path]:
    """The program and the modules next to it that it imports (``from data import ...``)."""
    tree = ast.parse(program.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    siblings = [program.with_name(f"{name}.py") for name in sorted(names)]
    return [program, *(path for path in siblings if path.exists())]


def fix_copy(program: Path, workdir: Path, strategy: str) -> Path | None:
    """Copy the program (and its local modules), fix the copy, print the diff."""
    command = workersafe_command()
    if command is None:
        print("workersafe is not installed: `pip install -e .` first to see the fix")
        return None
    originals = local_modules(program)
    copies = [Path(shutil.copy2(path, workdir / path.name)) for path in originals]
    args = ["fix", *(copy.name for copy in copies), "--strategy", strategy]
    result = run_workersafe(command, args, workdir)
    print(f"\n$ workersafe {' '.join(args)}")
    print((result.stdout + result.stderr).rstrip())
    for original, copy in zip(originals, copies):
        print(diff(original, copy), end="")
    return copies[0]


def diff(original: Path, fixed: Path) -> str:
    return "".join(
        difflib.unified_diff(
            original.read_text().splitlines(keepends=True),
            fixed.read_text().splitlines(keepends=True),
            fromfile=f"{original.name} (before)",
            tofile=f"{fixed.name} (after)",
        )
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    program = (args.program or default_program()).resolve()
    config = Config(workers=args.workers)
    with tempfile.TemporaryDirectory(prefix="workersafe-demo-") as tmp:
        workdir = Path(tmp)
        ca = make_test_ca(workdir)
        server = ItemServer(ca.server_context).start(lifetime=600)
        try:
            target = Target(
                server.base_url, ca.bundle, data_file=write_zip_archive(workdir / "items.zip", 256)
            )
            print(f"server {server.base_url}; {program.name} with {config.label}, 3 epochs\n")
            before = run_program(program, target, config)
            show("before the fix", before)
            fixed = fix_copy(program, workdir, args.strategy)
            if fixed is None:
                return 1
            after = run_program(fixed, target, config)
            show("after the fix ", after)
        finally:
            server.stop()
    return 0 if not before.ok and after.ok else 1


if __name__ == "__main__":
    sys.exit(main())
