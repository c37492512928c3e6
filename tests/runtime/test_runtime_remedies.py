"""Runtime proof for the WS3xx rules: the remedies people write, run for real against the
local TLS server, fail where the rules say, and `workersafe check` reports them.

- worker_init_session.py: the accepted answer's remedy (None in `__init__`, a worker_init_fn
  sets `get_worker_info().dataset.session`) works with forked workers but fails with
  `num_workers=0` (WS311; WS301 when such a loader is in the code).
- worker_init_session.py on a train split (WS_HOLDOUT=8: the loader gets a `Subset`) fails
  with 2 workers (WS302).
- lazy_session_parent_first.py: a lazy session without a process check, opened by a sanity
  check in the parent, is shared by the forked workers (WS303).
- worker_init_robust.py: the robust form (an opener `__init__` calls, re-run per worker
  through wrappers, dropped when pickled) passes every configuration, and is not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from runtime_harness import PROGRAMS, Config, Outcome, Target, record, run_program, run_workersafe
from runtime_harness import workersafe_command

pytestmark = pytest.mark.runtime

MAX_TRIES = 5  # failures that are races are retried; the AttributeErrors show every time
NONE_SESSION = (r"AttributeError: 'NoneType' object has no attribute 'get'",)
SHARED_SESSION = (
    r"requests\.exceptions\.(SSLError|ConnectionError|ChunkedEncodingError)",
    r"DECRYPTION_FAILED_OR_BAD_RECORD_MAC",
    r"JSONDecodeError",
)


@dataclass(frozen=True)
class Case:
    program: str
    config: Config
    failures: tuple[str, ...]  # empty: the run must succeed (the remedy's own case)
    subset: bool = False  # WS_SUBSET=1 (worker_init_robust.py)
    holdout: int = 0  # WS_HOLDOUT: train on a split without every n-th item (a Subset)

    @property
    def stage(self) -> str:
        return "as-written-subset" if self.subset or self.holdout else "as-written"

    @property
    def label(self) -> str:
        split = f"-holdout{self.holdout}" if self.holdout else ""
        return f"{self.program}-{self.config.label}{'-subset' if self.subset else ''}{split}"

    @property
    def env(self) -> dict[str, str]:
        return {**({"WS_SUBSET": "1"} if self.subset else {}),
                **({"WS_HOLDOUT": str(self.holdout)} if self.holdout else {})}


CASES = (
    Case("worker_init_session", Config(workers=0, epochs=1), NONE_SESSION),
    Case("worker_init_session", Config(workers=4), ()),  # where the remedy works
    Case("worker_init_session", Config(workers=2), NONE_SESSION, holdout=8),
    Case("lazy_session_parent_first", Config(workers=4), SHARED_SESSION),
    Case("lazy_session_parent_first", Config(workers=0, epochs=1), ()),  # no fork: fine
    *(Case("worker_init_robust", config, (), subset)
      for config in (Config(workers=0, epochs=1), Config(workers=1), Config(workers=4),
                     Config(workers=4, persistent=True),
                     Config(workers=2, context="spawn", epochs=1),
                     Config(workers=2, context="forkserver", epochs=1))
      for subset in (False, True)),
)


def _shows(outcome: Outcome, failures: tuple[str, ...]) -> bool:
    return outcome.wrong_items > 0 or any(re.search(p, outcome.error) for p in failures)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_remedy_as_written(case: Case, runtime_target: Target) -> None:
    path = PROGRAMS / f"{case.program}.py"
    runtime_target = replace(runtime_target, extra_env={**runtime_target.extra_env, **case.env})
    outcomes: list[Outcome] = []
    for _ in range(MAX_TRIES if case.failures else 1):
        outcome = run_program(path, runtime_target, case.config)
        outcomes.append(outcome)
        if not case.failures:
            record(case.program, case.stage, case.config, outcome)
            assert outcome.ok, f"the remedy's own case failed: {outcome.describe()}"
            assert outcome.summary is not None
            assert outcome.summary["items"] == case.config.items * case.config.epochs
            return
        if _shows(outcome, case.failures):
            record(case.program, case.stage, case.config, outcome, tries=len(outcomes))
            return
        if not outcome.ok:
            pytest.fail(f"failed, but not with an expected error: {outcome.describe()}",
                        pytrace=False)
    runs = "\n".join(outcome.describe() for outcome in outcomes)
    pytest.fail(f"the hole never showed in {MAX_TRIES} runs:\n{runs}")


# (program, text on the reported line, code)
EXPECTED_FINDINGS = (
    ("worker_init_session", "self.session = None", "WS311"),
    ("worker_init_session", "dataset.session = requests.Session()", "WS302"),
    ("lazy_session_parent_first", "self.session = requests.Session()", "WS303"),
)


@pytest.mark.parametrize(("program", "text", "code"), EXPECTED_FINDINGS,
                         ids=lambda value: str(value)[:40])
def test_check_reports_the_hole(program: str, text: str, code: str, tmp_path: Path) -> None:
    command = workersafe_command()
    if command is None:
        pytest.skip("workersafe is not importable")
    path = PROGRAMS / f"{program}.py"
    lines = path.read_text().splitlines()
    line = next(n for n, content in enumerate(lines, 1) if content.strip() == text)
    result = run_workersafe(command, ["check", str(path), str(PROGRAMS / "runtime_driver.py")],
                            tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(rf"{re.escape(path.name)}:{line}:\d+: {code} ", result.stdout), \
        result.stdout


def test_check_is_quiet_on_the_robust_form(tmp_path: Path) -> None:
    command = workersafe_command()
    if command is None:
        pytest.skip("workersafe is not importable")
    args = ["check", "--select", "WS", str(PROGRAMS / "worker_init_robust.py"),
            str(PROGRAMS / "runtime_driver.py")]
    result = run_workersafe(command, args, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
