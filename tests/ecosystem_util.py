"""Helpers for the ecosystem tests: run the real tools (workersafe, flake8, pre-commit, git) as a
user would, in scratch directories."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "remote_images"

# One file holding a dataset and the DataLoader that runs it: confirmed (WS101) both for the CLI
# and for flake8, which sees one file at a time.
SINGLE_FILE = '''\
import requests
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __init__(self, urls):
        self.urls = urls
        self.session = requests.Session()

    def __getitem__(self, i):
        return self.session.get(self.urls[i], timeout=10).content


loader = DataLoader(Remote(["u"]), num_workers=4)
'''
SINGLE_FILE_AT = (8, 24)

# A dataset module with no DataLoader (the language server and notebook tests add one).
REMOTE_DATASET = '''\
import requests
from torch.utils.data import Dataset


class RemoteImages(Dataset):
    def __init__(self, urls):
        self.urls = urls
        self.session = requests.Session()

    def __len__(self):
        return len(self.urls)

    def __getitem__(self, index):
        return self.session.get(self.urls[index]).content
'''  # line, 1-based column of `requests.Session()`


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without variables that would change the tools' behaviour here."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLAKE8", "WORKERSAFE", "PRE_COMMIT", "GIT_"))}
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, stdin: Optional[str] = None, timeout: float = 300,
        env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env if env is not None else clean_env())


def workersafe(*args: str, cwd: Path, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "workersafe", *args], cwd, stdin)


def flake8(*args: str, cwd: Path, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "flake8", *args], cwd, stdin)


def copy_example(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("data.py", "train.py"):
        shutil.copy2(EXAMPLE / name, dest / name)
    return dest
