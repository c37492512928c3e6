"""Runtime proof for an ordinary project (issue 22): fixtures/runtime/project_three_datasets
has three dataset modules (HDF5 with an array derived from the file, LMDB, SQLite with a
cursor) and two scripts (a loader per dataset, a Subset, a ConcatDataset of two; a dict of
datasets with a loader each built in a loop by a helper that gets the dataset as a parameter,
chaining the script's own worker_init_fn).

Unfixed, the project fails in the first configuration where the bug shows: spawn cannot
pickle the handles, or (racing) forked workers share the zip archive's file offset. Fixed with each strategy, it
re-checks clean, a second fix changes nothing, and every loader of both scripts gives the
items of num_workers=0 under fork 0/1/4, 4 persistent, spawn 2 and forkserver 2 (the program
runs every configuration in one process, to keep the time small).

fixtures/runtime/project_reopen holds the shapes whose statements cannot leave `__init__` (a
local set with the archive read after an if/else, an LMDB environment used through a local for
other work, a connection made from a local rebound later, a reader object whose own class
opens the environment, built in an if): `worker-init` reopens what the parent opened, with
the same arguments, and the same configurations must pass.

fixtures/runtime/project_module_handle opens a zip archive at import in store.py; one dataset
reads it as `store.ARCHIVE`, the other imports it from a helper module that passes it on
(`from store import ARCHIVE` in tools.py). Forked workers share the archive's offset. The
default fix rewrites every spelling to the accessor (`store.get_archive()`), along the chain.

fixtures/runtime/project_root_package is a repository whose root is a package (`__init__.py`),
run from the root: shared/store.py opens the archive at import, the root's common.py passes
it on, and the dataset imports it as `from common import ARCHIVE`. Linked only once a module
of the root is known by its own name (`common`); the fix rewrites common.py and the dataset."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from runtime_harness import PROGRAMS, ZIP_FAILURES, Config, Target, run_program, \
    run_workersafe, workersafe_command

pytestmark = pytest.mark.runtime

# The files whose findings the fix must report fixed, with the code of each.
PROJECTS = {
    "project_three_datasets": {"frames.py": "WS101", "labels.py": "WS101",
                               "captions.py": "WS101"},
    "project_reopen": {"images.py": "WS101", "shards.py": "WS101", "tables.py": "WS101",
                       "features.py": "WS101"},
    "project_module_handle": {"store.py": "WS102"},
    "project_root_package": {"shared/store.py": "WS102"},
}
RUNS = [("project_three_datasets", "worker-init"), ("project_three_datasets", "lazy"),
        ("project_reopen", "worker-init"), ("project_module_handle", "default"),
        ("project_root_package", "default")]
TIMEOUT = 600.0
# The bug as these projects show it: a handle spawn cannot pickle, or an archive whose offset
# forked workers share (the fork configurations run first, and that one is a race).
SYMPTOMS = re.compile("|".join(("cannot be pickled", "cannot pickle", *ZIP_FAILURES)))


def _copy(tmp_path: Path, project: str) -> Path:
    target = tmp_path / project
    shutil.copytree(PROGRAMS / project, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _target(root: Path) -> Target:
    return Target("http://unused.invalid", Path("/dev/null"), extra_env={"WS_DATA_DIR": str(root)})


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_unfixed_project_crashes(tmp_path: Path, project: str) -> None:
    root = _copy(tmp_path, project)
    outcome = run_program(root / "run_project.py", _target(root), Config(), TIMEOUT)
    assert not outcome.ok, outcome.describe()
    assert outcome.wrong_items > 0 or SYMPTOMS.search(outcome.error), outcome.describe()


@pytest.mark.parametrize(("project", "strategy"), RUNS, ids=[f"{p}-{s}" for p, s in RUNS])
def test_fixed_project_works_everywhere(tmp_path: Path, project: str, strategy: str) -> None:
    command = workersafe_command()
    if command is None:
        pytest.skip("workersafe is not installed")
    root = _copy(tmp_path, project)
    chosen = [] if strategy == "default" else ["--strategy", strategy]
    fixed = run_workersafe(command, ["fix", "--no-cache", *chosen, "."], root)
    for path, code in PROJECTS[project].items():
        assert re.search(rf"^{re.escape(path)}:\S+ {code} fixed", fixed.stdout, re.M), \
            fixed.stdout
    assert " 0 left" in fixed.stdout, fixed.stdout
    if strategy == "worker-init":  # no fallback: every loader of both scripts is wired
        assert "lazy" not in fixed.stdout, fixed.stdout
        for script in ("train.py", "evaluate.py"):
            text = (root / script).read_text()
            assert text.count("def open_worker_handles(") == 1, script
        if project == "project_three_datasets":
            assert "previous=seed_worker" in (root / "evaluate.py").read_text()
    check = run_workersafe(command, ["check", "--no-cache", "."], root)
    assert check.returncode == 0, check.stdout + check.stderr
    again = run_workersafe(command, ["fix", "--diff", "--no-cache", "."], root)
    assert again.returncode == 0 and again.stdout == "", again.stdout
    outcome = run_program(root / "run_project.py", _target(root), Config(), TIMEOUT)
    assert outcome.ok, outcome.describe()
    assert outcome.summary is not None and outcome.summary["items"] > 0, json.dumps(
        outcome.summary)
