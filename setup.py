"""The build: workersafe as pure Python, and, where mypyc (mypy's compiler) and a C compiler are
at hand, its per-file analysis (`workersafe/analysis/`, the walk that dominates a check)
compiled too, as black ships itself. Same code, same results; the compiled walk costs about half.

- `WORKERSAFE_PURE=1` builds pure Python only; without mypyc (Python 3.9, or mypy not
  installable) the build is pure Python as well.
- A module that fails to compile is left out, and with it the whole compiled build (the
  modules call each other natively: they run compiled together or not at all).
- `workersafe/_compiled-<python>.txt` records, for each compiled module, a checksum of the
  source it was compiled from. On import, `workersafe/compiled.py` falls back to the pure
  modules if any source differs (an edited checkout installed with `pip install -e .`): an
  edit is never shadowed by an older build. `workersafe --version` says which build runs.
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
COMPILED_PACKAGE = "workersafe/analysis"
GROUP = "workersafe_native"  # the shared library's module: workersafe_native__mypyc
RECORD = f"_compiled-{sys.implementation.cache_tag}.txt"  # one per Python: builds coexist


def compiled_sources() -> list[str]:
    """The modules compiled (paths relative to src/): analysis/ without its package file."""
    return sorted(f"{COMPILED_PACKAGE}/{path.name}"
                  for path in (SRC / COMPILED_PACKAGE).glob("*.py") if path.name != "__init__.py")


def native_extensions() -> list:
    if os.environ.get("WORKERSAFE_PURE", "") not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # Python 3.9 (mypy 2 runs on 3.10+), or no mypy in the build
        return []
    here = os.getcwd()
    os.chdir(SRC)  # mypyc names modules by their path: from src/, `workersafe.analysis.x`
    try:
        # (the build's own environment may lack the libraries other modules import: only
        # analysis/'s types matter; the running Python's version, not the type check's 3.10)
        options = ["--ignore-missing-imports",
                   "--python-version", "%d.%d" % sys.version_info[:2]]
        extensions = mypycify([*options, *compiled_sources()], opt_level="3", group_name=GROUP,
                              target_dir=str(HERE / "build" / "mypyc"))
    except (Exception, SystemExit) as exc:  # mypy's errors exit: build pure, say why
        print(f"workersafe: building pure Python (mypyc refused: {exc})", file=sys.stderr)
        return []
    finally:
        os.chdir(here)
    for extension in extensions:
        # mypyc's sources are relative to src/ (where it ran), as is its build/ directory
        extension.sources = [str(SRC / s) if not os.path.isabs(s) else s
                             for s in extension.sources]
        extension.include_dirs = [str(SRC / d) if not os.path.isabs(d) else d
                                  for d in extension.include_dirs]
    return extensions


class BuildNative(build_ext):
    """build_ext that never fails the install: a compiler error leaves the pure build, and the
    record of what was compiled is written next to the package (in place for `-e`)."""

    def finalize_options(self) -> None:
        # mypyc runs here, not when setup.py is read: pip reads it for metadata too
        self.distribution.ext_modules = native_extensions()
        super().finalize_options()

    def run(self) -> None:
        built = bool(self.extensions)
        try:
            if built:
                super().run()
        except Exception as exc:  # no C compiler, a compile error: pure Python it is
            print(f"workersafe: building pure Python (compiling failed: {exc})", file=sys.stderr)
            built = False
        package = Path(self.get_ext_fullpath("workersafe.analysis.walker")).parent.parent
        record = package / RECORD
        outputs = [Path(self.get_ext_fullpath(e.name)) for e in self.extensions]
        if not built or not all(path.exists() for path in outputs):
            # all or nothing (see the module's docstring), an earlier build's too
            modules = [s[:-3].replace("/", ".") for s in compiled_sources()]
            for name in [*modules, f"{GROUP}__mypyc"]:
                path = Path(self.get_ext_fullpath(name))
                if path.exists():
                    path.unlink()
            if record.exists():
                record.unlink()
            return
        lines = [f"group {GROUP}"]
        for source in compiled_sources():
            module = source[:-3].replace("/", ".")
            stat = (SRC / source).stat()  # (a source unchanged since: no checksum to take)
            lines.append(f"{module} {zlib.crc32((SRC / source).read_bytes()):08x} "
                         f"{stat.st_size} {stat.st_mtime_ns}")
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text("\n".join(lines) + "\n", encoding="utf-8")


# A stand-in, so that build_ext runs and the wheel is tagged for this platform; BuildNative
# replaces it with mypyc's extensions (or none).
setup(ext_modules=[Extension("workersafe.analysis.walker", sources=[])],
      cmdclass={"build_ext": BuildNative})
