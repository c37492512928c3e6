"""The flake8 plugin's cost in instructions, not time: `flake8_ratio.py`'s two venvs and file,
each side run once under callgrind (valgrind), with `PYTHONHASHSEED=0`. The counts are exact
and do not move with the machine's load, so a change of a few per cent of the plugin's cost
shows where a CPU-time ratio measured on a shared machine cannot; they do not see memory
stalls or page faults (the plugin's share of time is larger than its share of instructions).

Usage: ``python bench/flake8_instructions.py --src OLD/src --src src [--quiet]``
(`--quiet`: a file naming no handle, the plugin's fixed cost per process). ~40 s a side.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_worstcase  # noqa: E402
from flake8_ratio import ensure_venvs  # noqa: E402

_RUN = ("import sys\nfrom flake8.main import application\n"
        "application.Application().run(sys.argv[1:])\n")
_TOTAL = re.compile(r"Collected\s*:\s*(\d+)")


def instructions(python: Path, argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(python),
             "-c", _RUN, *argv], cwd=cwd, env={**env, "PYTHONHASHSEED": "0"},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = _TOTAL.search(proc.stderr)
    if found is None:
        raise RuntimeError(f"callgrind gave no total:\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", required=True,
                        help="a workersafe source tree (the directory holding workersafe/)")
    parser.add_argument("--quiet", action="store_true",
                        help="check a small file naming no handle instead of the 3,022 lines")
    parser.add_argument("--venvs", type=Path, default=HERE / "out",
                        help="where the two venvs are (made when missing)")
    args = parser.parse_args(argv)
    bare, plugin = ensure_venvs(args.venvs.resolve())
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.quiet:
            target = Path(tmp) / "plain.py"
            target.write_text("import os\n\n\ndef cwd():\n    return os.getcwd()\n")
        else:
            target = gen_worstcase.generate_single_file(Path(tmp) / "big_dataset.py", 3000, 1235)
        flags = ["--select=WS", "--output-file=/dev/null", target.name]
        alone = instructions(bare.parent / "python", flags, target.parent, base_env)
        print(f"| {target.name}, callgrind | instructions | added to flake8 alone |")
        print("|---|---|---|")
        print(f"| flake8 alone | {alone / 1e6:,.1f}M | |")
        for src in args.src:
            compileall.compile_dir(str(src.resolve() / "workersafe"), quiet=1)
            count = instructions(plugin.parent / "python", flags, target.parent,
                                 {**base_env, "PYTHONPATH": str(src.resolve())})
            print(f"| with the plugin, {src} | {count / 1e6:,.1f}M "
                  f"| +{(count - alone) / 1e6:,.1f}M ({(count - alone) / alone:+.2%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
