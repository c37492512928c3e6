"""The README as a newcomer reads it: short, and its quickstart true. Every `$ ` command in a
```console block of README.md is run (from a copy of the checkout's examples/), and what it
prints (stdout, then stderr) must be exactly the lines the README shows under it.

When the output changes on purpose (a new fix shape), regenerate the README's blocks by
re-pasting what `python tests/test_readme.py` prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 200


@dataclass(frozen=True)
class Shown:
    command: str
    output: str  # the lines the README shows under it, each ending in a newline


def shown_commands(text: str) -> list[Shown]:
    out = []
    for block in re.findall(r"^```console\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        command, lines = None, []
        for line in block.splitlines(keepends=True):
            if line.startswith("$ "):
                if command is not None:
                    out.append(Shown(command, "".join(lines)))
                command, lines = line[2:].strip(), []
            elif command is not None:
                lines.append(line)
        if command is not None:
            out.append(Shown(command, "".join(lines)))
    return out


def run_shown(command: str, cwd: Path) -> str:
    argv = shlex.split(command)
    assert argv[0] == "workersafe", f"the README runs only workersafe here: {command}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKERSAFE_")}
    proc = subprocess.run([sys.executable, "-m", "workersafe", *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout + proc.stderr


def _checkout_copy(dest: Path) -> Path:
    shutil.copytree(ROOT / "examples", dest / "examples")
    return dest


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines (at most {MAX_LINES})"


def test_quickstart_output_is_what_the_readme_shows(tmp_path: Path) -> None:
    shown = shown_commands(README.read_text(encoding="utf-8"))
    commands = [s.command for s in shown]
    assert "workersafe check examples/remote_images" in commands
    assert "workersafe fix --diff examples/remote_images" in commands
    cwd = _checkout_copy(tmp_path)
    for item in shown:
        assert run_shown(item.command, cwd) == item.output, item.command
    # the diff is shown whole, never elided
    diff = next(s.output for s in shown if "fix --diff" in s.command)
    assert "..." not in diff and "+++ b/examples/remote_images/train.py" in diff


def main() -> None:
    """Print the README's console blocks with today's output, ready to paste."""
    with tempfile.TemporaryDirectory() as scratch:
        cwd = _checkout_copy(Path(scratch))
        for item in shown_commands(README.read_text(encoding="utf-8")):
            print(f"$ {item.command}")
            print(run_shown(item.command, cwd), end="")
            print("----")


if __name__ == "__main__":
    main()


def test_readme_says_how_to_install_run_and_test() -> None:
    """The install command and the two commands (run it; run the tests) are in the README's
    console blocks, as written: one edit that regenerated the blocks emptied them unnoticed."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```console\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    for command in ('pip install -e .', "workersafe check .", "python -m pytest"):
        assert command in commands, f"README.md shows no `{command}`"
    assert all(block.strip() for block in blocks), "an empty console block in README.md"
