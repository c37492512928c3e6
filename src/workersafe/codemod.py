"""`workersafe fix` as a libcst codemod, for people who run codemods that way:

    python -m libcst.tool initialize .          # once; then add "workersafe" to `modules`
    python -m libcst.tool codemod codemod.WorkerSafeCommand src/

Each file is fixed on its own (a DataLoader in another file is not visible to a codemod), with
the same planning and verification as `workersafe fix`; `--strategy lazy` is available."""

from __future__ import annotations

import argparse
import os

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

from .config import STRATEGIES, Config
from .discovery import SourceFile, module_name
from .engine import Engine
from .fix.apply import fix_result
from .source import decode


class WorkerSafeCommand(CodemodCommand):
    DESCRIPTION = "Create fork-unsafe handles (sessions, files, connections) per DataLoader worker."

    def __init__(self, context: CodemodContext, strategy: str = "worker-init") -> None:
        super().__init__(context)
        self.strategy = strategy

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--strategy", choices=STRATEGIES, default="worker-init",
                                help="how each worker gets its own handle")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        path = self.context.filename or "module.py"
        source = decode(path, tree.bytes)
        file = SourceFile(path, module_name(path, os.path.dirname(path) or "."),
                          os.path.basename(path) == "__init__.py", os.path.dirname(path) or ".")
        engine = Engine(Config(fix_strategy=self.strategy))
        result = engine.check_sources([file], {path: source})
        fixed = fix_result(engine, result, self.strategy)
        for outcome in fixed.outcomes:
            if outcome.status != "fixed":
                self.warn(f"{outcome.finding.code} line {outcome.finding.line}: {outcome.note}")
        new = fixed.new_sources.get(path)
        if new is None:
            raise SkipFile("nothing to fix")
        return cst.parse_module(new)
