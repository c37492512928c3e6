"""Fuzzing: mutated fixtures and grammar-generated programs never make the engine, the flake8
plugin or the fixer raise. Bounded in CI; WORKERSAFE_FUZZ=long for a longer run."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expectations import FIXTURES
from workersafe.config import Config
from workersafe.discovery import SourceFile
from workersafe.engine import Engine
from workersafe.fix.apply import fix_result
from workersafe.flake8_plugin import WorkerSafeChecker
from workersafe.source import decode

LONG = os.environ.get("WORKERSAFE_FUZZ") == "long"
EXAMPLES = 400 if LONG else 20
FIXTURE_TEXTS = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "lint").glob("*.py"))]
ENGINE = Engine(Config(), link=False)
fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG,
                suppress_health_check=list(HealthCheck))


def _mutate(text: str, data: st.DataObject) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 4))):
        choice = data.draw(st.sampled_from(["delete", "bracket", "nul", "long", "deep", "swap"]))
        index = data.draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            break
        if choice == "delete":
            del lines[index]
        elif choice == "bracket":
            lines[index] = lines[index].rstrip("\n") + data.draw(st.sampled_from("([{)]}")) + "\n"
        elif choice == "nul":
            lines[index] = "\x00" + lines[index]
        elif choice == "long":
            lines[index] = "x = '" + "a" * 100_000 + "'\n"  # a huge line
        elif choice == "deep":
            lines[index] = "y = " + "(" * 300 + "1" + ")" * 300 + "\n"
        else:
            other = data.draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
    return "".join(lines)


def _never_raises(text: str) -> None:
    ENGINE.check_text("fuzz.py", text)
    ENGINE.check_bytes("fuzz.py", text.encode("utf-8", "surrogatepass"))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # flake8 reports E999 and runs no plugin
    list(WorkerSafeChecker(tree, text.splitlines(keepends=True), "fuzz.py").run())


@fuzz
@given(st.data())
def test_mutated_fixtures(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(FIXTURE_TEXTS))
    _never_raises(_mutate(text, data))


@settings(max_examples=EXAMPLES // 2, deadline=None, derandomize=not LONG,
          suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(text: str) -> None:
    _never_raises(text)


@fuzz
@given(st.data())
def test_fix_writes_verified_code_or_nothing(data: st.DataObject) -> None:
    text = _mutate(data.draw(st.sampled_from(FIXTURE_TEXTS)), data)
    path = "fuzz.py"
    try:
        source = decode(path, text.encode("utf-8", "surrogatepass"))
    except Exception:
        return
    engine = Engine(Config())
    result = engine.check_sources([SourceFile(path, "fuzz", False, ".")], {path: source})
    fixed = fix_result(engine, result, "worker-init")
    for new in fixed.new_sources.values():
        compile(new, path, "exec")
