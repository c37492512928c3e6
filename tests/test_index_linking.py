"""The flake8 plugin's confirmed mode links each file against the index of its project. A file
unchanged since the index reads the index's project linked once (not the whole program
linked again per file); a changed file is linked with its new facts."""

from __future__ import annotations

import os
from pathlib import Path

from workersafe.config import Config
from workersafe.engine import Engine
from workersafe.index import Index

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "wrapper_built_by_caller_of_loader_function"


def _index(engine: Engine) -> Index:
    result = engine.check_paths([str(PROJECT)])
    facts = {os.path.abspath(p): f for p, f in result.facts.items() if not f.error}
    return Index(str(PROJECT), [str(PROJECT)], {p: (0, 0) for p in facts}, facts)


def test_unchanged_files_share_one_linked_project() -> None:
    engine = Engine(Config())
    index = _index(engine)
    remote = PROJECT / "remote.py"
    train = PROJECT / "train.py"
    found = engine.check_text_in_project(str(remote), remote.read_text(), index)
    assert [(f.code, f.line) for f in found] == [("WS101", 8)]
    assert len(engine._linked) == 1
    linked = engine._linked[id(index)][1]
    assert engine.check_text_in_project(str(train), train.read_text(), index) == []
    assert engine._linked[id(index)][1] is linked  # read again, not linked again


def test_a_changed_file_is_linked_with_its_new_facts() -> None:
    engine = Engine(Config())
    index = _index(engine)
    remote = PROJECT / "remote.py"
    text = remote.read_text()
    assert [(f.code, f.line) for f in engine.check_text_in_project(str(remote), text, index)] \
        == [("WS101", 8)]
    # edited in the editor: a line above moves the finding, the handle gone removes it
    moved = engine.check_text_in_project(str(remote), "# edited\n" + text, index)
    assert [(f.code, f.line) for f in moved] == [("WS101", 9)]
    gone = text.replace("self.session = requests.Session()", "self.session = None")
    assert gone != text
    assert engine.check_text_in_project(str(remote), gone, index) == []
