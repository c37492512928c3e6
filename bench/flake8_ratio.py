"""flake8 with the workersafe plugin against the same flake8 without it, on the 3,022-line
candidate file (`gen_worstcase.generate_single_file`, seed 1235: `run.py`'s file3k corpus),
with one or more workersafe sources side by side in one run (issue 24: at most 1.10x).

Two venvs of the same Python with the same flake8 pins (those of the running Python): `bare`
(flake8 alone) and `plugin` (plus workersafe installed editable from this checkout, without
its dependencies: the plugin needs none). Which workersafe the plugin runs is `PYTHONPATH`:
one `--src` per side, e.g. the tree before a change and after it. The sides alternate,
`--reps` times; CPU is user+sys of each flake8 process (`getrusage(RUSAGE_CHILDREN)`); the
median is kept. Every `--src` is byte-compiled first, as `pip install` leaves a package.

Usage: ``python bench/flake8_ratio.py --src OLD/src --src src --reps 11``
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import envs  # noqa: E402
import gen_worstcase  # noqa: E402


def ensure_venvs(where: Path) -> tuple[Path, Path]:
    main = envs.Venv(Path(sys.prefix))
    pins = [f"{n}=={v}" for n, v in main.versions(envs.FLAKE8_CORE).items() if v]
    made = []
    for name in ("bare", "plugin"):
        venv = envs.Venv(where / f"venv-{name}")
        if not venv.has("flake8"):
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv.root)], check=True)
            subprocess.run([str(venv.python), "-m", "pip", "install", "--quiet", *pins],
                           check=True)
            if name == "plugin":
                subprocess.run([str(venv.python), "-m", "pip", "install", "--quiet",
                                "--no-deps", "-e", str(HERE.parent)], check=True)
        made.append(venv.bin("flake8"))
    return made[0], made[1]


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code not in (0, 1):
        raise RuntimeError(f"{argv} exited {code}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", required=True,
                        help="a workersafe source tree (the directory holding workersafe/)")
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--venvs", type=Path, default=HERE / "out",
                        help="where the two venvs are (made when missing)")
    args = parser.parse_args(argv)
    bare, plugin = ensure_venvs(args.venvs.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        target = gen_worstcase.generate_single_file(Path(tmp) / "big_dataset.py", 3000, 1235)
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        sides: list[tuple[str, list[str], dict[str, str]]] = [
            ("flake8 alone", [str(bare), "--select=WS", target.name], base_env)]
        for src in args.src:
            compileall.compile_dir(str(src.resolve() / "workersafe"), quiet=1)
            sides.append((f"with the plugin, {src}", [str(plugin), "--select=WS", target.name],
                          {**base_env, "PYTHONPATH": str(src.resolve())}))
        times: dict[str, list[float]] = {name: [] for name, _, _ in sides}
        for rep in range(args.reps):
            for name, command, env in sides if rep % 2 == 0 else sides[::-1]:
                times[name].append(cpu_of(command, target.parent, env))
    alone = statistics.median(times["flake8 alone"])
    print(f"| {target.name} (3,022 lines), median of {args.reps} | CPU | ratio to flake8 alone |")
    print("|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} s | {median / alone:.2f}x |")
    print(f"(load average at the end: {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
