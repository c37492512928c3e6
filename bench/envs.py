"""The tools under test: the main venv, the bare flake8 venv, workersafe's options."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Distributions making up flake8 itself; a bare venv gets exactly these versions.
FLAKE8_CORE = ("flake8", "pyflakes", "pycodestyle", "mccabe")
REPORTED_PACKAGES = (*FLAKE8_CORE, "libcst", "ruff", "torch", "workersafe")
WORKERSAFE_DIST = "workersafe"

_VERSIONS_CODE = """
import json, sys
from importlib import metadata
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""

_FLAKE8_PLUGIN_DISTS_CODE = """
import json
from importlib import metadata
dists = set()
for group in ("flake8.extension", "flake8.report"):
    for ep in metadata.entry_points(group=group):
        if ep.dist is not None:
            dists.add(ep.dist.name)
print(json.dumps(sorted(dists)))
"""


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def has(self, name: str) -> bool:
        return self.bin(name).exists()

    def versions(self, names: tuple[str, ...] = REPORTED_PACKAGES) -> dict[str, str | None]:
        out = _run([str(self.python), "-c", _VERSIONS_CODE, *names])
        return json.loads(out)

    def python_version(self) -> str:
        return _run([str(self.python), "-c", "import sys; print(sys.version.split()[0])"]).strip()

    def flake8_plugin_dists(self) -> list[str]:
        return json.loads(_run([str(self.python), "-c", _FLAKE8_PLUGIN_DISTS_CODE]))


def ensure_bare_venv(main: Venv, dest: Path, log=print) -> Venv:
    """A venv with flake8 (same versions as ``main``) and every flake8 plugin of ``main``
    except workersafe: the honest "without the plugin" side. Reused when it already matches.
    """
    wanted = _pins(main)
    bare = Venv(dest)
    if bare.python.exists() and _pins(bare) == wanted:
        return bare
    log(f"creating {dest} with {' '.join(wanted)}")
    subprocess.run([str(main.python), "-m", "venv", "--clear", str(dest)], check=True)
    subprocess.run([str(bare.python), "-m", "pip", "install", "--quiet", *wanted], check=True)
    if _pins(bare) != wanted:
        raise RuntimeError(f"bare venv has {_pins(bare)}, wanted {wanted}")
    return bare


def _pins(venv: Venv) -> list[str]:
    dists = {d for d in venv.flake8_plugin_dists() if d.lower() != WORKERSAFE_DIST}
    names = tuple(sorted(dists | set(FLAKE8_CORE)))
    return [f"{name}=={version}" for name, version in venv.versions(names).items() if version]


def flake8_has_plugin(venv: Venv) -> bool:
    """flake8 lists every registered plugin in ``--version``."""
    return WORKERSAFE_DIST in _run([str(venv.bin("flake8")), "--version"])


def byte_compile_workersafe(venv: Venv) -> str | None:
    """Write workersafe's .pyc files, as a regular `pip install` does. An editable install
    compiles on first import, unless PYTHONDONTWRITEBYTECODE is set (as on the machines here):
    then every timed run would compile the whole package again (~60 ms), a cost no installed
    user pays, while the tools it is compared with (flake8, libcst) come byte-compiled.
    Returns the package directory, or None when workersafe is not installed."""
    code = "import os, workersafe; print(os.path.dirname(workersafe.__file__))"
    proc = subprocess.run([str(venv.python), "-c", code], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return None
    package = proc.stdout.strip()
    subprocess.run([str(venv.python), "-m", "compileall", "-q", package], check=True)
    return package


def workersafe_options(venv: Venv) -> set[str] | None:
    """Options shown by ``workersafe check --help``; None when the CLI is not installed."""
    exe = venv.bin("workersafe")
    if not exe.exists():
        return None
    proc = subprocess.run([str(exe), "check", "--help"], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return None
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", proc.stdout))


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
