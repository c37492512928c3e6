"""`workersafe server` as an editor uses it: the real server process, a real LSP client
(pygls) over stdio. Every wait is bounded (lsp_client.WAIT, and each test overall)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from ecosystem_util import REMOTE_DATASET  # noqa: E402
from lsp_client import ROOT, Session, apply_edits, run  # noqa: E402
from lsprotocol import types  # noqa: E402

DATASET = REMOTE_DATASET
SAME_FILE_LOADER = textwrap.dedent('''\


    def make_loader(urls):
        from torch.utils.data import DataLoader

        return DataLoader(RemoteImages(urls), num_workers=4)
    ''')
TRAIN = textwrap.dedent('''\
    from torch.utils.data import DataLoader

    from dataset import RemoteImages


    def main(urls):
        loader = DataLoader(RemoteImages(urls), batch_size=8, num_workers=4)
        for batch in loader:
            print(len(batch))
    ''')


def has(code: str):  # noqa: ANN201 - a predicate for Session.diagnostics_where
    return lambda diagnostics: any(d.code == code for d in diagnostics)


def clean(diagnostics: list[types.Diagnostic]) -> bool:
    return not diagnostics


def test_diagnostic_quick_fix_clears_it(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(DATASET + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(tmp_path)
        init = await s.start()
        assert init.server_info is not None and init.server_info.name == "workersafe"
        uri = s.open("data.py")
        found = await s.diagnostics_where(uri, has("WS101"))
        diagnostic = next(d for d in found if d.code == "WS101")
        assert diagnostic.range.start == types.Position(7, 23)  # requests.Session(
        assert diagnostic.source == "workersafe"
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href.endswith("/WS101.md")
        assert diagnostic.related_information, "points at the DataLoader"
        loader = diagnostic.related_information[0].location
        assert loader.uri == uri and loader.range.start.line == 19  # return DataLoader(

        actions = await s.code_actions(uri, [diagnostic])
        titles = [a.title for a in actions]
        assert "workersafe: ignore with # noqa: WS101" in titles
        assert "workersafe: fix all in this file" in titles
        fix = next(a for a in actions if a.is_preferred)
        assert fix.kind == types.CodeActionKind.QuickFix
        fix = await s.resolve(fix)
        assert fix.edit is not None and fix.disabled is None
        assert s.apply(fix.edit) == [uri]
        assert "worker_init_fn=" in s.texts[uri] and "def __getstate__" in s.texts[uri]
        await s.diagnostics_where(uri, clean)
        s.save(uri)
        await s.diagnostics_where(uri, clean)
        compile(s.texts[uri], "data.py", "exec")
        assert await s.stop() == 0

    run(session())


def test_cross_file_fix_edits_both_files(tmp_path: Path) -> None:
    (tmp_path / "dataset.py").write_text(DATASET)
    (tmp_path / "train.py").write_text(TRAIN)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        dataset = s.open("dataset.py")
        # confirmed (WS101) through train.py, which is not even open: the workspace index
        found = await s.diagnostics_where(dataset, has("WS101"))
        diagnostic = next(d for d in found if d.code == "WS101")
        assert "train.py" in diagnostic.message
        related = diagnostic.related_information or []
        assert [r.location.uri for r in related] == [s.uri("train.py")]

        # an unsaved buffer wins over the disk: num_workers=0 in train.py → no hazard
        train = s.open("train.py")
        s.change(train, TRAIN.replace("num_workers=4", "num_workers=0"))
        await s.diagnostics_where(dataset, clean)
        s.change(train, TRAIN)
        found = await s.diagnostics_where(dataset, has("WS101"))

        actions = await s.code_actions(dataset, [d for d in found if d.code == "WS101"])
        fix = await s.resolve(next(a for a in actions if a.is_preferred))
        assert fix.edit is not None and fix.edit.changes is not None
        assert set(fix.edit.changes) == {dataset, train}, "the DataLoader wiring is in train.py"
        s.apply(fix.edit)
        assert "worker_init_fn=open_worker_handles" in s.texts[train]
        await s.diagnostics_where(dataset, clean)
        assert await s.stop() == 0

    run(session())


def test_noqa_action_and_fix_all_without_resolve(tmp_path: Path) -> None:
    text = DATASET.replace(
        "        self.urls = urls\n",
        "        self.urls = urls\n        self.index = requests.Session()  # keep\n"
    ).replace("return self.session.get(", "return self.index.get(self.urls[0]) or "
              "self.session.get(") + SAME_FILE_LOADER
    (tmp_path / "data.py").write_text(text)

    async def session() -> None:
        s = Session(tmp_path, resolve=False)  # a client that wants the edits up front
        await s.start()
        uri = s.open("data.py")
        found = await s.diagnostics_where(uri, lambda d: len(d) == 2)
        first = min(found, key=lambda d: d.range.start.line)
        actions = await s.code_actions(uri, [first])
        noqa = next(a for a in actions if "noqa" in a.title)
        assert noqa.edit is not None
        s.apply(noqa.edit)
        assert "self.index = requests.Session()  # keep  # noqa: WS101\n" in s.texts[uri]
        found = await s.diagnostics_where(uri, lambda d: len(d) == 1)

        actions = await s.code_actions(uri, [], only=[types.CodeActionKind.SourceFixAll])
        assert [a.kind for a in actions] == ["source.fixAll.workersafe"]
        assert actions[0].edit is not None, "computed up front without resolve support"
        s.apply(actions[0].edit)
        await s.diagnostics_where(uri, clean)
        assert await s.stop() == 0

    run(session())


def test_syntax_error_is_ws001_and_the_server_survives(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(DATASET + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("data.py")
        await s.diagnostics_where(uri, has("WS101"))
        s.change(uri, DATASET + "\n    def broken(:\n" + SAME_FILE_LOADER)
        found = await s.diagnostics_where(uri, has("WS001"))
        assert found[0].severity == types.DiagnosticSeverity.Warning
        actions = await s.code_actions(uri, found)
        assert all("WS001" not in a.title for a in actions)
        s.change(uri, "\x00 not python at all \udcff")  # bad input of every kind
        s.change(uri, DATASET + SAME_FILE_LOADER)
        await s.diagnostics_where(uri, has("WS101"))
        assert await s.stop() == 0

    run(session())


def test_a_3000_line_file_answers_quickly(tmp_path: Path) -> None:
    # bench/'s generated 3,000-line candidate file: datasets with handles, DataLoaders, 26
    # findings. A few hundred ms on an idle 2-core machine (docs/editors.md); the bound leaves
    # room for a CI machine running other tests at the same time.
    sys.path.insert(0, str(ROOT / "bench"))
    import gen_worstcase

    path = gen_worstcase.generate_single_file(tmp_path / "big_dataset.py", 3000)
    text = path.read_text()
    assert len(text.splitlines()) >= 3000

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("big_dataset.py")
        found = await s.diagnostics_where(uri, has("WS101"))
        assert len(found) > 20
        s.change(uri, text + "\n")  # warm: the first analysis imported the engine
        await s.diagnostics_where(uri, has("WS101"))
        diagnostics, actions = [], []
        for n in range(3):
            started = time.perf_counter()
            s.change(uri, text + "\n" * (n + 2))
            found = await s.diagnostics_where(uri, has("WS101"))
            diagnostics.append(time.perf_counter() - started - 0.05)  # minus the debounce
            started = time.perf_counter()
            listed = await s.code_actions(uri, [d for d in found if d.code == "WS101"][:1])
            actions.append(time.perf_counter() - started)
            assert any(a.is_preferred for a in listed)
        assert min(diagnostics) < 1.0 and min(actions) < 0.5, (diagnostics, actions)
        assert await s.stop() == 0

    run(session())


def test_large_workspace_answers_the_opened_file_alone_first(tmp_path: Path) -> None:
    """In a workspace of at least WORKERSAFE_LSP_QUICK_FILES files, an opened file is
    answered from its own text first (the dataset's Session is latent: WS111, no DataLoader in
    this file), then by the linked analysis (WS101: train.py's DataLoader reaches it)."""
    project = tmp_path / "p"
    shutil.copytree(ROOT / "fixtures" / "projects" / "dataset_and_train_split", project)

    async def session(quick_files: str) -> list[list[str]]:
        s = Session(project, env={"WORKERSAFE_LSP_QUICK_FILES": quick_files})
        await s.start()
        uri = s.open("data.py")
        await s.diagnostics_where(uri, has("WS101"))
        assert await s.stop() == 0
        return [sorted(str(d.code) for d in found) for u, found in s.history if u == uri]

    assert run(session("2")) == [["WS111"], ["WS101"]]  # two files: large enough here
    assert run(session("3")) == [["WS101"]]  # below the threshold: the linked answer only


@pytest.mark.parametrize("cache", [False, True])
def test_analysis_after_an_edit_extracts_the_changed_file_only(
        tmp_path: Path, cache: bool) -> None:
    """The server keeps the facts it extracted: the analysis after an edit (or an opened file)
    parses that file alone, and reads no other file's facts back from the disk cache (on a
    large repository that costs as much as extracting them again), with the same findings."""
    from workersafe.lsp.state import Workspace

    project = tmp_path / "p"
    shutil.copytree(ROOT / "fixtures" / "projects" / "dataset_and_train_split", project)
    state = Workspace(str(project), cache=cache)
    first = state.analysis().result
    assert first.stats.parsed == 2 and [f.code for f in first.findings] == ["WS101"]
    data = str(project / "data.py")
    state.open(data, (project / "data.py").read_text() + "\n")
    again = state.analysis().result
    assert again.stats.parsed == 1 and again.stats.cache_hits == 1
    assert [f.code for f in again.findings] == ["WS101"]
    state.update(data, (project / "data.py").read_text().replace("requests.Session()", "None"))
    assert state.analysis().result.findings == []


def test_server_start_imports_no_fixer() -> None:
    """The fixer (and libcst) is imported when a fix is asked for, not when the server
    starts: the first diagnostics do not wait for it."""
    code = ("import sys\nimport workersafe.lsp.server\n"
            "print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith("
            "('workersafe.fix', 'workersafe.codemod'))))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_exit_without_shutdown_and_closed_stdin(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "workersafe", "server"], input=b"",
                          capture_output=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        s.client.exit(None)  # no shutdown first: exit code 1, as the protocol says
        assert s.client._server is not None
        await s.wait(s.client._server.wait())
        await s.wait(s.client.stop())
        assert s.client._server.returncode == 1

    run(session())


def test_apply_edits_helper() -> None:
    edit = types.TextEdit(types.Range(types.Position(1, 0), types.Position(2, 0)), "B\n")
    assert apply_edits("a\nb\nc\n", [edit]) == "a\nB\nc\n"


def test_refused_fix_is_disabled_with_the_reason(tmp_path: Path) -> None:
    # a handle that another method replaces (a reconnect) is refused by the fixer
    text = DATASET.replace("    def __len__(self):\n",
                           "    def reconnect(self):\n"
                           "        self.session = requests.Session()\n\n"
                           "    def __len__(self):\n")
    (tmp_path / "data.py").write_text(text + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("data.py")
        found = await s.diagnostics_where(uri, has("WS101"))
        actions = await s.code_actions(uri, found)
        fix = await s.resolve(next(a for a in actions if a.is_preferred))
        assert fix.edit is None and fix.disabled is not None
        assert "reconnect" in fix.disabled.reason  # the fixer's reason
        assert any("noqa" in a.title for a in actions)  # ignoring is still offered
        assert await s.stop() == 0

    run(session())


def test_without_the_extra_server_says_what_to_install(tmp_path: Path) -> None:
    hide = ("import sys; sys.modules['pygls'] = None; from workersafe.cli import main; "
            "sys.exit(main(['server']))")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(ROOT / "src")}, cwd=tmp_path)
    assert done.returncode == 2
    assert "pip install 'workersafe[lsp]'" in done.stderr


def test_bad_configuration_still_serves(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.workersafe]\nselect = 3\n')
    (tmp_path / "data.py").write_text(DATASET + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("data.py")
        await s.diagnostics_where(uri, has("WS101"))
        assert await s.stop() == 0

    run(session())


TWO_DATASETS = DATASET + "\n\n" + DATASET.split("\n\n\n", 1)[1].replace(
    "RemoteImages", "RemoteLabels") + textwrap.dedent('''\


    def make_loaders(urls):
        from torch.utils.data import DataLoader

        return (DataLoader(RemoteImages(urls), num_workers=4),
                DataLoader(RemoteLabels(urls), num_workers=4))
    ''')


def test_quick_fix_of_one_finding_leaves_the_others(tmp_path: Path) -> None:
    # The fix inserts lines above the other dataset and its DataLoader: the other finding
    # moves (and its message names the loader's new line), it is still the same finding.
    (tmp_path / "data.py").write_text(TWO_DATASETS)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("data.py")
        found = await s.diagnostics_where(uri, lambda d: len(d) == 2)
        first = min(found, key=lambda d: d.range.start.line)
        actions = await s.code_actions(uri, [first])
        fix = await s.resolve(next(a for a in actions if a.is_preferred))
        assert fix.disabled is None and fix.edit is not None, fix.disabled
        s.apply(fix.edit)
        loaders = {name: line for line in s.texts[uri].splitlines()
                   for name in ("RemoteImages", "RemoteLabels")
                   if f"DataLoader({name}(" in line}
        assert "worker_init_fn=" in loaders["RemoteImages"], loaders
        assert "worker_init_fn=" not in loaders["RemoteLabels"], loaders
        left = await s.diagnostics_where(uri, lambda d: len(d) == 1)
        assert "RemoteLabels" in left[0].message
        compile(s.texts[uri], "data.py", "exec")
        assert await s.stop() == 0

    run(session())


def test_refused_fix_is_disabled_without_resolve_too(tmp_path: Path) -> None:
    text = DATASET.replace("    def __len__(self):\n",
                           "    def reconnect(self):\n"
                           "        self.session = requests.Session()\n\n"
                           "    def __len__(self):\n")
    (tmp_path / "data.py").write_text(text + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(tmp_path, resolve=False)
        await s.start()
        uri = s.open("data.py")
        found = await s.diagnostics_where(uri, has("WS101"))
        actions = await s.code_actions(uri, found)
        fix = next(a for a in actions if a.is_preferred)
        assert fix.edit is None and fix.disabled is not None
        assert "reconnect" in fix.disabled.reason
        fix_all = next(a for a in actions if a.title == "workersafe: fix all in this file")
        assert fix_all.disabled is not None and "reconnect" in fix_all.disabled.reason
        assert await s.stop() == 0

    run(session())


def test_untitled_and_outside_buffers(tmp_path: Path) -> None:
    workspace, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    (elsewhere / "other.py").write_text(DATASET + SAME_FILE_LOADER)

    async def session() -> None:
        s = Session(workspace)
        await s.start()
        for uri in ("untitled:Untitled-1", (elsewhere / "other.py").as_uri()):
            s.open(uri, DATASET + SAME_FILE_LOADER)
            found = await s.diagnostics_where(uri, has("WS101"))
            related = found[0].related_information or []
            assert [r.location.uri for r in related] == [uri]
            actions = await s.code_actions(uri, found)
            fix = await s.resolve(next(a for a in actions if a.is_preferred))
            assert fix.edit is not None and list(fix.edit.changes or {}) == [uri]
            s.apply(fix.edit)
            await s.diagnostics_where(uri, clean)
        assert not list(workspace.iterdir()), "nothing written for an untitled buffer"
        assert await s.stop() == 0

    run(session())


def test_unreadable_text_is_ws001(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"from torch.utils.data import Dataset\nx = '\xe9'\n")

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        uri = s.open("binary.py", "from torch.utils.data import Dataset\n\x00\x01\x02\n")
        found = await s.diagnostics_where(uri, has("WS001"))
        assert "NUL bytes" in found[0].message
        s.change(uri, DATASET + SAME_FILE_LOADER)
        await s.diagnostics_where(uri, has("WS101"))
        # the editor decoded a Latin-1 file for us: its text is analysed as shown
        latin = s.open("latin.py", "from torch.utils.data import Dataset\nx = '\u00e9'\n")
        await s.diagnostics_where(latin, clean)
        assert await s.stop() == 0

    run(session())


def test_files_changing_on_disk_and_save(tmp_path: Path) -> None:
    (tmp_path / "dataset.py").write_text(DATASET)

    async def session() -> None:
        s = Session(tmp_path)
        await s.start()
        dataset = s.open("dataset.py")
        await s.diagnostics_where(dataset, has("WS111"))  # no DataLoader seen yet
        (tmp_path / "train.py").write_text(TRAIN)  # created by git, another editor...
        s.watched(("train.py", types.FileChangeType.Created))
        await s.diagnostics_where(dataset, has("WS101"))
        (tmp_path / "train.py").write_text(TRAIN.replace("num_workers=4", "num_workers=0"))
        s.watched(("train.py", types.FileChangeType.Changed))
        await s.diagnostics_where(dataset, clean)
        (tmp_path / "train.py").write_text(TRAIN)
        (tmp_path / "pyproject.toml").write_text("[tool.workersafe]\nignore = ['WS101']\n")
        s.watched(("train.py", types.FileChangeType.Changed),
                  ("pyproject.toml", types.FileChangeType.Created))
        await s.diagnostics_where(dataset, clean)
        (tmp_path / "pyproject.toml").unlink()
        s.watched(("pyproject.toml", types.FileChangeType.Deleted))
        await s.diagnostics_where(dataset, has("WS101"))
        (tmp_path / "train.py").unlink()
        s.watched(("train.py", types.FileChangeType.Deleted))
        await s.diagnostics_where(dataset, has("WS111"))
        assert [r.method for r in s.registrations] == [
            types.WORKSPACE_DID_CHANGE_WATCHED_FILES]

        # a save publishes again (the file on disk is the buffer now)
        before = s.publishes
        s.save(dataset)
        await s.next_publish(before)
        # a file deleted while open: its buffer is still analysed, and still fixable
        (tmp_path / "dataset.py").unlink()
        s.watched(("dataset.py", types.FileChangeType.Deleted))
        found = await s.diagnostics_where(dataset, has("WS111"))
        actions = await s.code_actions(dataset, found)
        fix = await s.resolve(next(a for a in actions if a.is_preferred))
        assert fix.edit is not None, fix.disabled
        assert await s.stop() == 0

    run(session())


@pytest.mark.parametrize(("line", "expected"), [
    ("x = 1", "x = 1  # noqa: WS101"),
    ("x = 1  # noqa: E501", "x = 1  # noqa: E501,WS101"),
    ("x = 1  # noqa:E501,B950", "x = 1  # noqa:E501,B950,WS101"),
    ("x = 1  # NOQA: E501 long line", "x = 1  # NOQA: E501,WS101 long line"),
    ("x = 1  # type: ignore  # noqa: E501", "x = 1  # type: ignore  # noqa: E501,WS101"),
    ("x = 1  # keep", "x = 1  # keep  # noqa: WS101"),
])
def test_noqa_edit_appends_to_an_existing_comment(line: str, expected: str) -> None:
    from workersafe.lsp.edits import noqa_edit

    text = f"import os\n{line}\nprint(x)\n"
    edit = noqa_edit(text, 2, "WS101")
    assert (edit.start_line, edit.end_line) == (1, 1)
    assert apply_edits(text, [types.TextEdit(types.Range(
        types.Position(edit.start_line, edit.start_col),
        types.Position(edit.end_line, edit.end_col)), edit.text)]).splitlines()[1] == expected
