"""`pytest --workersafe-guard`: the runtime guard over a test suite (a `pytest11` entry point).
Off unless the option is given; off, this module is all that is imported (no torch, nothing
else of workersafe)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workersafe")
    group.addoption("--workersafe-guard", action="store_true", default=False,
                    help="report live handles DataLoader workers would share, when they start")
    group.addoption("--workersafe-guard-strict", action="store_true", default=False,
                    help="as --workersafe-guard, and raise before any worker starts")


def pytest_configure(config: pytest.Config) -> None:
    strict = bool(config.getoption("workersafe_guard_strict"))
    if strict or config.getoption("workersafe_guard"):
        from .guard import install

        install(strict=strict)
        config._workersafe_guard = True  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    if not getattr(config, "_workersafe_guard", False):
        return
    from .guard import current

    guard = current()
    if guard is None:
        return
    terminalreporter.write_sep("-", f"workersafe guard: {len(guard.findings)} finding(s)")
    for finding in guard.findings:
        terminalreporter.write_line(finding.text())


def pytest_unconfigure(config: pytest.Config) -> None:
    if getattr(config, "_workersafe_guard", False):
        from .guard import uninstall

        uninstall()
