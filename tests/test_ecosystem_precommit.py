"""pre-commit, for real: `pre-commit try-repo` builds the hooks of `.pre-commit-hooks.yaml` into
a fresh virtualenv (installing this project and its dependencies from PyPI) and runs them in a
scratch git repository holding the bundled example (dataset in data.py, DataLoader in train.py).

The hook repository is this project's root when its git tree is clean (CI's fresh clone).
In a dirty working tree it is a one-commit snapshot of the files on disk: `try-repo` on a dirty
repository commits only the *tracked* changes (`git add -u`) into its shadow clone, so a new,
untracked file (a new module, or `.pre-commit-hooks.yaml` itself) would silently be missing and
the test would check HEAD instead of the code under test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ecosystem_util import ROOT, clean_env, copy_example, run

# one_python: pre-commit builds its own environment from the hook repository (.ci/other-pythons skips it)
pytestmark = pytest.mark.one_python

HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"


def _env(home: Path) -> dict[str, str]:
    # Identity for scratch commits; no global/system git config (signing, hooks, templates).
    # The hook's environment installs the pure build: compiling it (tests/test_compiled_build)
    # took most of the two environments' three minutes, and the hooks' behaviour is the same.
    return clean_env(
        WORKERSAFE_PURE="1",
        PRE_COMMIT_HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="workersafe tests", GIT_AUTHOR_EMAIL="tests@workersafe.invalid",
        GIT_COMMITTER_NAME="workersafe tests", GIT_COMMITTER_EMAIL="tests@workersafe.invalid",
        PRE_COMMIT_COLOR="never", NO_COLOR="1")


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = run(["git", *args], cwd, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _project_git_files() -> list[str] | None:
    """Files a clone of the working tree would hold (tracked or untracked-not-ignored)."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          cwd=ROOT, capture_output=True, timeout=60)
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def _is_clean_checkout(env: dict[str, str]) -> bool:
    proc = run(["git", "status", "--porcelain"], ROOT, env=env)
    return proc.returncode == 0 and not proc.stdout.strip()


@pytest.fixture(scope="module")
def pc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    assert HOOKS_FILE.is_file(), ".pre-commit-hooks.yaml is missing"
    base = tmp_path_factory.mktemp("precommit")
    env = _env(base / "pre-commit-home")
    if _is_clean_checkout(env):
        hook_repo = ROOT
    else:
        hook_repo = base / "workersafe-snapshot"
        files = _project_git_files()
        if files is None:  # not a git checkout: what pip needs to build the project
            files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                     and p.relative_to(ROOT).parts[0] not in (".git", ".venv", "build")]
        for rel in files:
            top = Path(rel).parts[0]
            src = ROOT / rel
            # the hook install needs the package and the top-level metadata, nothing else
            if (top == "src" or len(Path(rel).parts) == 1) and src.is_file():
                dest = hook_repo / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
        _git(hook_repo, env, "init", "-q")
        _git(hook_repo, env, "add", "-A")
        _git(hook_repo, env, "commit", "-q", "-m", "snapshot of the working tree")
    return {"base": base, "env": env, "hook_repo": hook_repo}


def _user_repo(pc: dict, name: str) -> Path:
    repo = copy_example(pc["base"] / name)
    _git(repo, pc["env"], "init", "-q")
    _git(repo, pc["env"], "add", "-A")
    return repo


def try_repo(pc: dict, repo: Path, hook: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(pc["hook_repo"]), hook, *extra]
    proc = run(cmd, repo, env=pc["env"], timeout=900)
    print(proc.stdout, proc.stderr, sep="\n")  # shown on failure: what the user saw
    return proc


def _configured_repo(pc: dict, name: str, hooks: list[str]) -> Path:
    """A user repository whose .pre-commit-config.yaml uses our hooks, installed as the git
    pre-commit hook (pre-commit's environment is built once, in the shared PRE_COMMIT_HOME)."""
    repo = _user_repo(pc, name)
    rev = _git(pc["hook_repo"], pc["env"], "rev-parse", "HEAD").strip()
    lines = ["repos:", f"-   repo: {pc['hook_repo']}", f"    rev: {rev}", "    hooks:"]
    lines += [f"    -   id: {hook}" for hook in hooks]
    (repo / ".pre-commit-config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _git(repo, pc["env"], "add", ".pre-commit-config.yaml")
    proc = run([sys.executable, "-m", "pre_commit", "install"], repo, env=pc["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return repo


def commit(pc: dict, repo: Path, message: str) -> tuple[int, str]:
    """`git commit`; the hooks' output (git's hook runs write it to stderr) as one text."""
    proc = run(["git", "commit", "-m", message], repo, env=pc["env"], timeout=900)
    print(proc.stdout, proc.stderr, sep="\n")
    return proc.returncode, proc.stderr + proc.stdout


def test_try_repo_check_hook_fails_on_the_example_with_ws101(pc: dict) -> None:
    repo = _user_repo(pc, "try-repo")
    proc = try_repo(pc, repo, "workersafe", "--all-files")
    assert proc.returncode == 1, proc.stderr
    assert "Failed" in proc.stdout
    assert "data.py:12:24: WS101 requests.Session created in RemoteImages.__init__" in proc.stdout
    assert "train.py:36" in proc.stdout  # the linked DataLoader: confirmed, not latent (WS111)
    assert "WS111" not in proc.stdout


def test_commit_fix_hook_fails_then_commit_passes(pc: dict) -> None:
    """`git commit` with both hooks: the fix hook rewrites the example and fails the commit; the
    user stages the fix; the next commit passes both hooks."""
    repo = _configured_repo(pc, "commit-fix", ["workersafe-fix", "workersafe"])
    before = {name: (repo / name).read_text(encoding="utf-8") for name in ("data.py", "train.py")}
    code, out = commit(pc, repo, "add the example")
    if "not implemented" in out:
        pytest.skip("`workersafe fix` is not implemented in this version")
    assert code != 0, "the fix hook must fail the commit when it changed files"
    assert "files were modified by this hook" in out
    after = {name: (repo / name).read_text(encoding="utf-8") for name in before}
    assert after["data.py"] != before["data.py"]
    assert "worker_init_fn" in after["train.py"]

    _git(repo, pc["env"], "add", "-A")  # what the user does next: stage the fix, commit again
    code, out = commit(pc, repo, "add the example")
    assert code == 0, "the commit still fails after the fix hook ran"
    assert out.count("Passed") == 2
    assert "WS1" not in out

    check = run([sys.executable, "-m", "workersafe", "check"], repo)
    assert check.returncode == 0, check.stdout


def test_commit_of_one_changed_file_still_links_the_whole_repo(pc: dict) -> None:
    """Only train.py is staged; the finding is in the unchanged data.py: the hook reports it
    (confirmed WS101: the hook checks the repository, not just the staged file)."""
    repo = _configured_repo(pc, "commit-changed-file", ["workersafe"])
    env = pc["env"]
    _git(repo, env, "commit", "-q", "--no-verify", "-m", "example")
    with open(repo / "train.py", "a", encoding="utf-8") as handle:
        handle.write("# more workers\n")
    _git(repo, env, "add", "train.py")
    code, out = commit(pc, repo, "touch train.py")
    assert code != 0
    assert "data.py:12:24: WS101" in out

    _git(repo, env, "reset", "-q", "--hard")
    (repo / "NOTES.txt").write_text("no python here\n", encoding="utf-8")
    _git(repo, env, "add", "NOTES.txt")
    code, out = commit(pc, repo, "notes")
    assert code == 0  # no Python file in the commit: the hook does not run
    assert "Skipped" in out

    from notebook_util import DATASET_CELL, LOADER_CELL, write_notebook

    write_notebook(repo / "explore.ipynb", ["urls = ['u']", DATASET_CELL, LOADER_CELL])
    _git(repo, env, "add", "explore.ipynb")
    code, out = commit(pc, repo, "a notebook")
    assert code != 0  # a notebook alone in the commit: the hook runs, and checks it
    assert "explore.ipynb:cell 3:8:24: WS101" in out


def test_hooks_file_declares_both_hooks() -> None:
    text = HOOKS_FILE.read_text(encoding="utf-8")
    yaml = pytest.importorskip("yaml")  # ships with pre-commit
    hooks = {h["id"]: h for h in yaml.safe_load(text)}
    assert set(hooks) == {"workersafe", "workersafe-fix"}
    assert hooks["workersafe"]["entry"] == "workersafe check"
    assert hooks["workersafe-fix"]["entry"] == "workersafe fix"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is True
        assert hook["pass_filenames"] is False  # whole-repo linking; see the file's comment


# --- the documented set-ups, as written -----------------------------------------------------

DOCS = [ROOT / "README.md", ROOT / "docs" / "pre-commit.md"]
_SHA = re.compile(r"[0-9a-f]{40}")


def _documented_configs() -> list[str]:
    text = (ROOT / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"^```yaml\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
            if "repos:" in b]


def test_docs_pin_no_tag_that_does_not_exist() -> None:
    """A `rev:` in the docs is a full commit SHA (a placeholder to replace), or a tag the
    repository has: there are none yet, so `v0.1.0` would fail for every user."""
    tags = set()
    if (ROOT / ".git").exists() and shutil.which("git"):
        tags = set(run(["git", "tag"], ROOT).stdout.split())
    for doc in DOCS:
        for rev in re.findall(r"^\s*rev:\s*(\S+)", doc.read_text(encoding="utf-8"), re.MULTILINE):
            assert _SHA.fullmatch(rev) or rev in tags, f"{doc.name}: rev {rev} does not exist"
    configs = _documented_configs()
    assert any("repo: local" in c for c in configs) and any("rev:" in c for c in configs)


@pytest.mark.parametrize("kind", ["pinned", "local"])
def test_documented_config_works_as_written(pc: dict, kind: str) -> None:
    """docs/pre-commit.md's two configs, with only what the user fills in replaced (the clone's
    path and its commit SHA), in a fresh repository holding the example: the check hook fails
    with the confirmed WS101."""
    config = next(c for c in _documented_configs() if ("repo: local" in c) == (kind == "local"))
    if kind == "pinned":
        rev = _git(pc["hook_repo"], pc["env"], "rev-parse", "HEAD").strip()
        config = re.sub(r"(?m)^(\s*- repo:) .*$", rf"\g<1> {pc['hook_repo']}", config)
        config = re.sub(r"(?m)^(\s*rev:) \S+(.*)$", rf"\g<1> {rev}\g<2>", config)
    repo = _user_repo(pc, f"documented-{kind}")
    (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    env = dict(pc["env"], PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                pc["env"].get("PATH", "")]))
    proc = run([sys.executable, "-m", "pre_commit", "run", "workersafe", "--all-files"], repo,
               env=env, timeout=900)
    print(proc.stdout, proc.stderr, sep="\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "data.py:12:24: WS101 requests.Session created in RemoteImages.__init__" in proc.stdout
