"""Prepare the benchmark corpora reproducibly.

The corpora live outside the repository on purpose: ``bench/out/`` is git-ignored, and
ruff, workersafe (and any tool honouring ``.gitignore``) would skip files under it; ruff
also skips any path under a ``site-packages`` folder by default, hence the torch copy.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

import gen_mlrepos
import gen_worstcase


@dataclass(frozen=True)
class Corpus:
    name: str
    path: Path  # a folder, or the single file
    files: int
    lines: int
    tokens_per_line: float | None = None  # code density: libcst cost follows tokens

    def describe(self) -> str:
        density = f", {self.tokens_per_line:.1f} tokens/line" if self.tokens_per_line else ""
        return f"{self.name}: {self.files} files, {self.lines:,} lines{density} ({self.path})"


@dataclass(frozen=True)
class Corpora:
    torch: Corpus
    torch_flake8: Corpus  # the whole torch copy, or a deterministic subset of it
    worst: Corpus
    file3k: Corpus
    ml: Corpus  # candidate-heavy: generated ML repositories (gen_mlrepos.py)


def find_torch(python: Path) -> Path:
    """The installed torch package folder, found without importing torch."""
    code = ("import importlib.util; s = importlib.util.find_spec('torch'); "
            "print(list(s.submodule_search_locations)[0])")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def copy_py_tree(src: Path, dest: Path) -> list[Path]:
    """Copy every ``.py`` file under ``src`` to ``dest`` (same layout); return the copies."""
    files = [p for p in sorted(src.rglob("*.py")) if "__pycache__" not in p.parts and p.is_file()]
    return _copy(files, src, dest)


def stride_subset(files: list[Path], root: Path, dest: Path, count: int) -> list[Path]:
    """Copy every k-th file (sorted order, k = ceil(len/count)) of ``root`` to ``dest``."""
    step = max(1, -(-len(files) // count))
    return _copy(files[::step], root, dest)


def _copy(files: list[Path], root: Path, dest: Path) -> list[Path]:
    copies = []
    for path in files:
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copies.append(target)
    return copies


def prepare(work: Path, python: Path, worst_lines: int, seed: int,
            flake8_subset: int, ml_lines: int = 120_000) -> Corpora:
    """Wipe ``work`` and build every corpus in it."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    torch_src = find_torch(python)
    torch_files = copy_py_tree(torch_src, work / "torch")
    torch = _corpus("torch", work / "torch", torch_files)
    torch_flake8 = torch
    if flake8_subset:
        dest = work / "torch-subset" / "torch"
        subset = stride_subset(torch_files, work / "torch", dest, flake8_subset)
        torch_flake8 = _corpus(f"torch subset (every k-th of {len(torch_files)})", dest, subset)
    worst_files = gen_worstcase.generate_corpus(work / "worst", worst_lines, seed)
    worst = _corpus("worst-case", work / "worst", worst_files, density=True)
    file3k = gen_worstcase.generate_single_file(work / "file3k" / "big_dataset.py", 3000,
                                                seed + 1)
    gen_worstcase.check_syntax([*worst_files, file3k])  # libcst: bare_parse.py fails loudly
    ml_files = gen_mlrepos.generate_corpus(work / "ml", ml_lines, seed)
    return Corpora(torch, torch_flake8, worst,
                   _corpus("3k-line file", file3k, [file3k], density=True),
                   _corpus("ML repositories", work / "ml", ml_files, density=True))


def _corpus(name: str, path: Path, files: list[Path], density: bool = False) -> Corpus:
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    tokens = sum(_count_tokens(p) for p in files) if density else 0
    return Corpus(name, path, len(files), lines, tokens / lines if density and lines else None)


_LAYOUT_TOKENS = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                  tokenize.DEDENT, tokenize.ENDMARKER}


def _count_tokens(path: Path) -> int:
    """Significant tokens (layout and comments excluded); real code has ~3.5-5 a line."""
    text = path.read_text(encoding="utf-8")
    return sum(1 for tok in tokenize.generate_tokens(io.StringIO(text).readline)
               if tok.type not in _LAYOUT_TOKENS)


def inside_git_worktree(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in [path, *path.parents])
