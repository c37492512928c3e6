"""Linking helpers whose cases are easier to state as data than as fixture projects: module
spellings from a real directory layout, the prefilter's import calls, `requires-python`; the
latent message of a class a registry builds by a name known only at run time; how a message
names the method `__init__` runs to create the handle."""

from __future__ import annotations

from pathlib import Path

import pytest

from workersafe.config import Config, target_from_requires
from workersafe.discovery import discover, module_aliases, module_spellings
from workersafe.engine import Engine
from workersafe.prefilter import Prefilter, imported_roots
from workersafe.registry import DEFAULT_REGISTRY


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


@pytest.mark.parametrize("files, path, spellings", [
    (["helpers/mylib/__init__.py", "helpers/mylib/ds.py"], "helpers/mylib/ds.py",
     {"helpers.mylib.ds", "mylib.ds"}),
    (["helpers/mylib/__init__.py", "helpers/mylib/sub/__init__.py", "helpers/mylib/sub/ds.py"],
     "helpers/mylib/sub/ds.py", {"helpers.mylib.sub.ds", "mylib.sub.ds"}),
    (["src/data/__init__.py", "src/data/dataset.py"], "src/data/dataset.py",
     {"data.dataset", "src.data.dataset"}),
    (["src/__init__.py", "src/datasets.py"], "src/datasets.py", {"datasets", "src.datasets"}),
    (["src/__init__.py", "src/pkg/__init__.py"], "src/pkg/__init__.py", {"pkg", "src.pkg"}),
    (["scripts/train.py"], "scripts/train.py", {"scripts.train"}),  # no package: no guess
    (["pkg/__init__.py", "pkg/data.py"], "pkg/data.py", {"pkg.data"}),
])
def test_module_spellings(tmp_path: Path, files: list[str], path: str, spellings: set[str]
                          ) -> None:
    _tree(tmp_path, files)
    found = {f.path: f for f in discover([str(tmp_path)])}
    source = found[str(tmp_path / path)]
    assert {source.module, *module_spellings(source.path, source.module)} == spellings


def test_an_alias_two_files_could_claim_is_dropped(tmp_path: Path) -> None:
    _tree(tmp_path, ["a/mylib/__init__.py", "a/mylib/ds.py", "b/mylib/__init__.py",
                     "b/mylib/ds.py", "src/data.py", "data.py"])
    files = discover([str(tmp_path)])
    aliases = module_aliases((f.path, f.module) for f in files)
    assert "mylib.ds" not in aliases and "mylib" not in aliases  # a/ or b/: unknown
    assert "src.data" in aliases  # src/data.py is `data` and `src.data`; ./data.py keeps `data`
    assert "data" not in aliases  # a module name is never an alias


@pytest.mark.parametrize("line", [
    'lmdb = importlib.import_module("lmdb")',
    "h5py = optional_import('h5py')",
    'env = __import__("lmdb").open(path)',
    'lmdb = try_import("lmdb.cffi")',
])
def test_import_calls_count_as_imports(line: str) -> None:
    module = line.split('"')[1] if '"' in line else line.split("'")[1]
    assert module.split(".")[0] in imported_roots(f"import os\n{line}\n")
    text = f"from torch.utils.data import Dataset\n{line}\nX = 1\n" \
           "class D(Dataset):\n    def __init__(self):\n        self.f = h5py.File('x')\n" \
           "        self.env = lmdb.open('y')\n"
    assert Prefilter(DEFAULT_REGISTRY).single_file_candidate(text)


def test_import_words_without_a_module_string_are_not_imports() -> None:
    assert imported_roots("x = reimport(name)\ny = import_module(f'{a}')\n") == set()


@pytest.mark.parametrize("spec, target", [
    (">=3.9", "py39"), (">=3.10,<4", "py310"), ("~=3.11", "py311"), ("==3.12.*", "py312"),
    (">=3.14", "py314"), (">=3.7", "py39"), (">=3.15", "py314"), ("<4", ""), ("", ""),
    (">= 3.13, != 3.13.1", "py313"),
])
def test_target_from_requires_python(spec: str, target: str) -> None:
    assert target_from_requires(spec) == target


PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


@pytest.mark.parametrize("case, registry", [
    ("registry_build_type_from_config", "DATASETS"),  # `DATASETS.build(cfg["train"])`
    ("registry_function_name_from_argv", "register_dataset"),  # `get_dataset(args.dataset)`
    ("registry_build_from_cfg", "DATASETS"),  # `build_from_cfg(cfg, DATASETS)` in a helper
    ("registry_build_constant_type_other_class", ""),  # built by a constant name: another
])
def test_latent_message_names_the_registry_a_runtime_name_reads(case: str, registry: str
                                                                ) -> None:
    """A registered class a lookup by a name known only at run time may build stays latent,
    and says why; one that a constant name leaves out says only that no loader uses it."""
    result = Engine(Config()).check_paths([str(PROJECTS / case)])
    messages = [f.message for f in result.findings if f.code == "WS111"]
    assert len(messages) == 1
    named = f"built by name through registry {registry}, the name known only at run" \
        in messages[0]
    assert named == bool(registry)
    assert (" found in the checked files" in messages[0]) == (not registry)


LINT = Path(__file__).resolve().parent.parent / "fixtures" / "lint"


@pytest.mark.parametrize("case, created", [
    # ZCls's LMDBDataset: `open_lmdb` alone reads as a lazy opener each worker runs
    ("neg_ws303_opener_run_by_init",
     "lmdb.open created in Images.open_lmdb (run by __init__ through _load_classes) is shared"),
    ("ws101_helper_called_from_init",
     "sqlite3.connect created in Annotations._connect (run by __init__) is shared"),
    ("ws111_lazy_getstate_fork_no_loader",
     "zipfile.ZipFile created in Archive._archive (run by __init__) would be shared"),
    ("dataclass_post_init_handle", "h5py.File created in Frames.__post_init__ is shared"),
])
def test_message_names_how_init_runs_the_creating_method(case: str, created: str) -> None:
    result = Engine(Config()).check_paths([str(LINT / f"{case}.py")])
    messages = [f.message for f in result.findings if f.code in ("WS101", "WS111")]
    assert len(messages) == 1
    assert messages[0].startswith(created)
