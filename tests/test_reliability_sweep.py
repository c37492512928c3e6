"""Whole-tree sweeps over this venv's site-packages (torch included, 3.5M lines): no crash, the
exit code findings dictate, every unparsable file reported once with a clear message (see
scripts/sweep.py for the checks).

Measured here (2 cores, Python 3.11, 7,923 files): the prefiltered sweep of everything takes
~4 s; `--no-prefilter` parses every file with libcst: ~100 ms of CPU per 1,000 lines, 5.5 min
for everything, so CI runs it on torch/utils + torch/nn (300 files, 100k lines, ~4 s) and a
deterministic sample of 300 files from every package (~15 s). The full one runs on demand:
`WORKERSAFE_SWEEP=full python -m pytest tests/test_reliability_sweep.py` or
`python scripts/sweep.py --full`."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from expectations import ROOT

# one_python: sweeps the running venv's site-packages (no torch on the other Pythons) (.ci/other-pythons skips it)
pytestmark = pytest.mark.one_python

_spec = importlib.util.spec_from_file_location("sweep", ROOT / "scripts" / "sweep.py")
assert _spec is not None and _spec.loader is not None
sweep_script = importlib.util.module_from_spec(_spec)
sys.modules["sweep"] = sweep_script  # dataclasses look their module up there
_spec.loader.exec_module(sweep_script)

SITE = sweep_script.site_packages()
TORCH = Path(SITE) / "torch"


def _assert_clean(result) -> None:  # type: ignore[no-untyped-def]
    print(sweep_script.report(result, SITE))
    assert not result.problems, "\n".join(result.problems)
    assert result.returncode == (1 if result.findings else 0)


def test_prefiltered_sweep_of_site_packages() -> None:
    result = sweep_script.sweep([SITE], prefilter=True, timeout=1800)
    _assert_clean(result)
    assert result.files > 1000


@pytest.mark.skipif(not TORCH.is_dir(), reason="torch is not installed in this environment")
def test_no_prefilter_sweep_of_torch_utils_and_nn() -> None:
    result = sweep_script.sweep([str(TORCH / "utils"), str(TORCH / "nn")], prefilter=False,
                                timeout=1800)
    _assert_clean(result)
    assert result.stats["parsed"] == result.files > 200


def test_no_prefilter_sweep_of_a_sample_of_every_package() -> None:
    files = sweep_script.sample(SITE, 300)
    result = sweep_script.sweep(files, prefilter=False, timeout=1800)
    _assert_clean(result)
    assert result.stats["parsed"] == result.files == len(files)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("WORKERSAFE_SWEEP") != "full",
                    reason="minutes of libcst time: set WORKERSAFE_SWEEP=full")
def test_no_prefilter_sweep_of_site_packages() -> None:
    result = sweep_script.sweep([SITE], prefilter=False, timeout=7200)
    _assert_clean(result)
    assert result.stats["parsed"] == result.files
