"""Notebooks end to end: `workersafe check` and `fix` on real .ipynb files that nbformat wrote
(and validates after the fix). Code cells are one module; findings name the cell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
from ecosystem_util import ROOT, workersafe  # noqa: E402
from notebook_util import (  # noqa: E402
    DATASET_CELL, LOADER_CELL, code_of, read_valid, write_notebook,
)

SESSION_AT = "cell 3:8:24"  # markdown title is cell 1, `urls = ...` cell 2, dataset cell 3


def _project(tmp_path: Path) -> Path:
    write_notebook(tmp_path / "explore.ipynb",
                   ["urls = ['https://example.invalid/a']", DATASET_CELL, LOADER_CELL])
    return tmp_path / "explore.ipynb"


def test_check_links_cells_and_reports_the_cell(tmp_path: Path) -> None:
    _project(tmp_path)
    done = workersafe("check", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    line = done.stdout.strip()
    assert line.startswith(f"explore.ipynb:{SESSION_AT}: WS101 requests.Session created in "
                           "RemoteImages.__init__"), line
    assert "(num_workers=4, explore.ipynb:cell 4:3)" in line  # the DataLoader's cell, linked

    rows = json.loads(workersafe("check", "explore.ipynb", "--format", "json",
                                 cwd=tmp_path).stdout)
    assert [(r["cell"], r["line"], r["col"], r["end_line"]) for r in rows] == [(3, 8, 24, 8)]


def test_diff_shows_the_cells_as_written(tmp_path: Path) -> None:
    """`fix --diff` of a notebook: each changed cell apart, headed with its number, IPython
    lines as the user wrote them (not the masked joined module the fixer rewrites)."""
    notebook = write_notebook(tmp_path / "explore.ipynb",
                              ["%matplotlib inline\nurls = ['https://example.invalid/a']",
                               DATASET_CELL, "%%time\n" + LOADER_CELL])
    before = notebook.read_bytes()
    done = workersafe("fix", "--diff", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    headers = [line for line in done.stdout.splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers == ["--- a/explore.ipynb:cell 3", "+++ b/explore.ipynb:cell 3",
                       "--- a/explore.ipynb:cell 4", "+++ b/explore.ipynb:cell 4"], done.stdout
    assert " %%time\n" in done.stdout and "workersafe" not in done.stdout.replace(
        "(workersafe)", "")
    assert notebook.read_bytes() == before  # a diff writes nothing


def test_sarif_region_is_within_the_cell(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _project(tmp_path)
    log = json.loads(workersafe("check", ".", "--format", "sarif", cwd=tmp_path).stdout)
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    result = log["runs"][0]["results"][0]
    location = result["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "explore.ipynb"
    assert location["physicalLocation"]["region"]["startLine"] == 8
    assert location["logicalLocations"] == [{"name": "cell 3", "kind": "notebookCell"}]
    assert result["properties"] == {"cell": 3}


def test_ipython_syntax_is_masked_and_positions_stay(tmp_path: Path) -> None:
    cells = [
        "%matplotlib inline\n!pip install requests\nfiles = !ls\n%load_ext autoreload\n"
        "label = ('%d files'\n         % len(files))  # Python, not a magic",
        ("markdown", "Some *prose* with `code`."),
        "%%bash\necho this is not python (\n",
        "DataLoader?\n" + DATASET_CELL.replace(
            "        self.urls = urls\n",
            "        self.urls = urls\n        if urls:\n            %time len(urls)\n"),
        "%%time\n" + LOADER_CELL.replace("RemoteImages(urls)", "RemoteImages(['u'])"),
        ("raw", "not code at all ("),
    ]
    write_notebook(tmp_path / "magic.ipynb", cells)
    done = workersafe("check", "magic.ipynb", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WS001" not in done.stdout
    # cell 5: `DataLoader?` is line 1, so the session is on line 11 (two lines were added)
    assert done.stdout.startswith("magic.ipynb:cell 5:11:24: WS101"), done.stdout
    assert "magic.ipynb:cell 6:4)" in done.stdout  # after the %%time line


def test_dataset_module_and_notebook_loader_link(tmp_path: Path) -> None:
    (tmp_path / "remote.py").write_text(DATASET_CELL + "\n")
    write_notebook(tmp_path / "train.ipynb", [
        "from remote import RemoteImages\nurls = ['u']", LOADER_CELL])
    done = workersafe("check", ".", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("remote.py:8:24: WS101"), done.stdout
    assert "train.ipynb:cell 3:3" in done.stdout


def test_walk_includes_notebooks_but_not_checkpoints(tmp_path: Path) -> None:
    _project(tmp_path)
    checkpoints = tmp_path / ".ipynb_checkpoints"
    checkpoints.mkdir()
    write_notebook(checkpoints / "explore-checkpoint.ipynb", [DATASET_CELL, LOADER_CELL])
    done = workersafe("check", ".", cwd=tmp_path)
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["explore.ipynb"]


def test_fix_rewrites_cells_and_keeps_the_format(tmp_path: Path) -> None:
    notebook = _project(tmp_path)
    clean = write_notebook(tmp_path / "clean.ipynb", ["print('no handles here')"])
    before = notebook.read_bytes()
    clean_before, clean_stat = clean.read_bytes(), clean.stat()
    old = json.loads(before)

    done = workersafe("fix", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # every finding fixed
    assert f"explore.ipynb:{SESSION_AT}: WS101 fixed" in done.stdout

    new = read_valid(notebook)  # nbformat validates the notebook written back
    data = json.loads(notebook.read_bytes())
    assert (data["nbformat"], data["nbformat_minor"]) == (old["nbformat"], old["nbformat_minor"])
    assert data["metadata"] == old["metadata"]
    assert list(data) == list(old)
    for old_cell, new_cell in zip(old["cells"], data["cells"]):
        assert list(new_cell) == list(old_cell)  # key order, ids, outputs, counts
        for key in ("id", "outputs", "execution_count", "metadata", "cell_type"):
            assert new_cell.get(key) == old_cell.get(key)
    assert len(data["cells"]) == len(old["cells"])
    assert data["cells"][1] == old["cells"][1]  # the untouched code cell
    assert "def open_handles(self):" in new.cells[2].source
    assert "def open_worker_handles(" in new.cells[2].source
    assert "worker_init_fn=open_worker_handles" in new.cells[3].source
    assert not new.cells[2].source.endswith("\n")  # as nbformat keeps a cell's last line
    text = notebook.read_text()
    assert text.endswith("}\n") and text.startswith('{\n "cells": [\n  {\n')  # 1-space indent
    assert clean.read_bytes() == clean_before and clean.stat().st_mtime_ns == \
        clean_stat.st_mtime_ns

    again = workersafe("check", ".", cwd=tmp_path)
    assert again.returncode == 0, again.stdout
    compile(code_of(notebook), "explore.ipynb", "exec")
    second = workersafe("fix", ".", cwd=tmp_path)
    assert second.returncode == 0 and "0 fixed" in second.stdout


def test_fix_restores_magics_and_other_layouts(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "magic.ipynb", [
        "%matplotlib inline\nurls = ['u']", DATASET_CELL, "!echo hi\n" + LOADER_CELL])
    # a notebook written by another tool: 2-space indent, ASCII escapes, no final newline,
    # sources as single strings
    data = json.loads(path.read_text())
    for cell in data["cells"]:
        cell["source"] = "".join(cell["source"])
    data["metadata"]["title"] = "Bilder \u00fcber Netz"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=True))
    done = workersafe("fix", "magic.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    text = path.read_text()
    assert not text.endswith("\n") and '\n  "cells": [' in text and "\\u00fc" in text
    fixed = json.loads(text)
    cells = fixed["cells"]
    assert all(isinstance(c["source"], str) for c in cells)
    assert cells[1]["source"] == "%matplotlib inline\nurls = ['u']"
    assert cells[3]["source"].startswith("!echo hi\n")
    assert "worker_init_fn=open_worker_handles" in cells[3]["source"]
    assert "pass  # workersafe-magic" not in text
    nbformat.validate(nbformat.from_dict(fixed))


def test_fix_keeps_time_magic_statements_on_one_line(tmp_path: Path) -> None:
    """`%time <statement>` is analysed as the statement IPython runs: a loader it makes is
    fixed, and written back as one `%time` line (the line magic takes one line); one the
    fix cannot put back on one line (a comment of its own) is left unwritten, not broken."""
    timed = LOADER_CELL.replace("loader = ", "%time loader = ")
    path = write_notebook(tmp_path / "timed.ipynb", ["urls = ['u']", DATASET_CELL, timed])
    done = workersafe("fix", "timed.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    loader = read_valid(path).cells[3].source
    assert loader.splitlines()[-1] == (
        "%time loader = DataLoader(RemoteImages(urls), batch_size=2, num_workers=4, "
        "worker_init_fn=open_worker_handles)"), loader
    assert "workersafe-timed" not in path.read_text()

    commented = write_notebook(tmp_path / "commented.ipynb",
                               ["urls = ['u']", DATASET_CELL, timed + "  # training"])
    before = commented.read_bytes()
    done = workersafe("fix", "commented.ipynb", cwd=tmp_path)
    assert done.returncode != 0 and "could not be restored" in done.stdout + done.stderr
    assert commented.read_bytes() == before


def test_fix_leaves_unfixable_and_invalid_notebooks_byte_identical(tmp_path: Path) -> None:
    bad = tmp_path / "broken.ipynb"
    bad.write_bytes(b'{"cells": [ {"cell_type": "code"')
    invalid = tmp_path / "invalid.ipynb"
    invalid.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "import requests"}],
                                   "nbformat": 4}))
    other = write_notebook(tmp_path / "r.ipynb", [DATASET_CELL, LOADER_CELL])
    data = json.loads(other.read_text())
    data["metadata"]["kernelspec"]["language"] = "R"  # not Python: no code to check
    other.write_text(json.dumps(data, indent=1) + "\n")
    snapshot = {p: p.read_bytes() for p in (bad, invalid, other)}
    check = workersafe("check", ".", cwd=tmp_path)
    assert "broken.ipynb:1:1: WS001 cannot analyse this file: not a notebook" in check.stdout
    assert "invalid.ipynb:1:1: WS001 cannot analyse this file: not a valid notebook" \
        in check.stdout
    assert "r.ipynb" not in check.stdout
    done = workersafe("fix", ".", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert {p: p.read_bytes() for p in snapshot} == snapshot


def test_stdin_notebook(tmp_path: Path) -> None:
    path = _project(tmp_path)
    done = workersafe("check", "--stdin-filename", "nb.ipynb", "-", cwd=tmp_path,
                      stdin=path.read_text())
    assert done.stdout.startswith(f"nb.ipynb:{SESSION_AT}: WS101"), done.stdout + done.stderr


def test_stdin_notebook_without_a_name(tmp_path: Path) -> None:
    """`cat nb.ipynb | workersafe check -`: its JSON parses as a Python expression, so read as
    Python it passed as clean (exit 0); it is read as the notebook it is."""
    path = _project(tmp_path)
    done = workersafe("check", "-", cwd=tmp_path, stdin=path.read_text())
    assert done.stdout.startswith(f"stdin.ipynb:{SESSION_AT}: WS101"), done.stdout + done.stderr
    assert done.returncode == 1


def test_syntax_error_names_the_cell_and_the_rest_is_analysed(tmp_path: Path) -> None:
    """The cell that does not parse is WS001 at that cell and line (the column as flake8
    counts); the other cells are still analysed: the loader's cell names a dataset the broken
    cell defined, so nothing links and nothing else is reported, and no newer-Python hint."""
    write_notebook(tmp_path / "bad.ipynb", [
        "urls = []", DATASET_CELL.replace("def __len__(self):", "def __len__(self:"), LOADER_CELL])
    done = workersafe("check", "bad.ipynb", cwd=tmp_path)
    if sys.version_info >= (3, 10):
        assert done.stdout == ("bad.ipynb:cell 3:10:17: WS001 cannot analyse this file: syntax "
                               "error: '(' was never closed (cell 3, line 10, column 17)\n"), \
            done.stdout
    else:  # Python 3.9's parser reports the line after the unclosed bracket, in the same cell
        assert done.stdout.startswith("bad.ipynb:cell 3:11:"), done.stdout
        assert "invalid syntax (cell 3, line 11, column " in done.stdout, done.stdout
    assert "newer" not in done.stdout


def test_automagic_lines_are_masked_python_lines_are_not(tmp_path: Path) -> None:
    from workersafe.notebook import load

    cell = ("pip install torch requests\ncd data\nrun -i train.py --epochs 2\nls\nreset -f\n"
            "ls = [1]\ntime.sleep(1)\nrun(x)\ncd = 'dir'\nconda install -y lmdb\n"
            "time = (\n    1)\nhistory += [\n    2]\nload_ext: str = 'x'\n")
    path = write_notebook(tmp_path / "auto.ipynb", [cell])
    code = load(path.read_bytes()).code
    kept = [line for line in code.splitlines()[1:] if not line.startswith("pass  # workersafe")]
    # masked: what only IPython runs; kept: Python as it stands (a bare `ls` parses either way),
    # and the first lines of statements that go on over several lines
    assert kept == ["ls", "reset -f", "ls = [1]", "time.sleep(1)", "run(x)", "cd = 'dir'",
                    "time = (", "    1)", "history += [", "    2]", "load_ext: str = 'x'"]
    assert "unparsed" not in code


@pytest.mark.parametrize("layout", ["compact", "tabs", "hand-edited"])
def test_fix_keeps_or_refuses_other_json_layouts(tmp_path: Path, layout: str) -> None:
    path = _project(tmp_path)
    data = json.loads(path.read_text())
    if layout == "compact":
        text = json.dumps(data, separators=(",", ":"))
    elif layout == "tabs":
        text = json.dumps(data, indent="\t") + "\n"
    else:  # no json.dumps settings give these bytes back: refused, nothing written
        text = json.dumps(data, indent=1).replace('"cells": [', '"cells":   [') + "\n"
    path.write_text(text)
    done = workersafe("fix", ".", cwd=tmp_path)
    if layout == "hand-edited":
        assert done.returncode == 2, done.stdout
        assert "cannot be reproduced byte for byte" in done.stderr
        assert path.read_text() == text
        return
    assert done.returncode == 0, done.stdout + done.stderr
    new = path.read_text()
    assert "worker_init_fn=open_worker_handles" in new
    assert json.dumps(json.loads(new), indent="\t" if layout == "tabs" else None,
                      separators=(",", ":") if layout == "compact" else None) + (
        "\n" if layout == "tabs" else "") == new


# (file name, content, what `check` says about it): notebooks that cannot be analysed are a
# WS001 naming the reason, never a traceback, and `fix` leaves them as they are.
BAD_NOTEBOOKS = [
    ("empty.ipynb", b"", "not a notebook (invalid JSON"),
    ("binary.ipynb", b"\x89PNG\r\n\x1a\n\x00\x00", "not a notebook (invalid JSON"),
    ("array.ipynb", b"[]", "not a notebook (the JSON is not an object)"),
    ("cells.ipynb", b'{"cells": 3, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
     "not a notebook (no list of cells)"),
    ("v3.ipynb", json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                             "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1",
                                                        "language": "python", "outputs": []}],
                                             "metadata": {}}]}).encode(),
     "an nbformat 3 notebook: only nbformat 4 is read"),
    ("v5.ipynb", b'{"cells": [], "nbformat": 5, "nbformat_minor": 0, "metadata": {}}',
     "not a notebook (nbformat 5; 4 expected)"),
    ("no_minor.ipynb", b'{"cells": [], "nbformat": 4, "metadata": {}}', "not a valid notebook"),
]


def test_bad_notebooks_are_ws001_and_left_alone(tmp_path: Path) -> None:
    for name, content, _ in BAD_NOTEBOOKS:
        (tmp_path / name).write_bytes(content)
    nothing = nbformat.v4.new_notebook()
    (tmp_path / "no_cells.ipynb").write_text(nbformat.writes(nothing))
    prose = nbformat.v4.new_notebook()
    prose.cells = [nbformat.v4.new_markdown_cell("# Notes"), nbformat.v4.new_raw_cell("((")]
    (tmp_path / "prose.ipynb").write_text(nbformat.writes(prose))
    snapshot = {p: p.read_bytes() for p in tmp_path.glob("*.ipynb")}
    check = workersafe("check", ".", cwd=tmp_path)
    lines = dict(line.split(":1:1: WS001 cannot analyse this file: ", 1)
                 for line in check.stdout.splitlines())
    assert {n: lines.get(n, "")[:len(m)] for n, _, m in BAD_NOTEBOOKS} == {
        n: m for n, _, m in BAD_NOTEBOOKS}, check.stdout
    assert len(lines) == len(BAD_NOTEBOOKS), "no_cells and prose: nothing to report"
    for args in (("fix", "."), ("fix", "--diff", "."), ("check", ".", "--format", "json")):
        done = workersafe(*args, cwd=tmp_path)
        assert "Traceback" not in done.stdout + done.stderr and done.returncode in (0, 1), args
    assert {p: p.read_bytes() for p in tmp_path.glob("*.ipynb")} == snapshot


def test_fix_keeps_every_v4_layout(tmp_path: Path) -> None:
    """nbformat 4.0-4.5 × indent 1/2 × sources as lists/strings × final newline or none, with
    an attachment and IPython lines: fixed, valid, and every other byte as it was."""
    cells = ["%load_ext autoreload\n?DataLoader\nDataLoader?\nurls = ['u']", DATASET_CELL,
             "%%time\n" + LOADER_CELL]
    variants = {}
    for minor in range(6):
        for indent in (1, 2):
            for as_list in (True, False):
                for newline in (True, False):
                    name = f"v4.{minor}-indent{indent}-{'list' if as_list else 'str'}" \
                           f"{'-newline' if newline else ''}.ipynb"
                    path = write_notebook(tmp_path / name, cells, minor=minor)
                    data = json.loads(path.read_text())
                    data["cells"][0]["source"] = "![logo](attachment:logo.png)"
                    data["cells"][0]["attachments"] = {"logo.png": {"image/png": "iVBORw0K"}}
                    for cell in data["cells"]:
                        text = "".join(cell["source"]) if isinstance(cell["source"], list) \
                            else cell["source"]
                        cell["source"] = text.splitlines(True) if as_list else text
                    raw = json.dumps(data, indent=indent, ensure_ascii=False) + (
                        "\n" if newline else "")
                    nbformat.validate(nbformat.reads(raw, as_version=nbformat.NO_CONVERT))
                    path.write_text(raw)
                    variants[path] = raw
    done = workersafe("fix", ".", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    for path, raw in variants.items():
        old, new = json.loads(raw), json.loads(path.read_text())
        nbformat.validate(nbformat.from_dict(new))
        text = path.read_text()
        assert text.endswith("\n") == raw.endswith("\n"), path.name
        assert list(new) == list(old) and new["metadata"] == old["metadata"], path.name
        assert new["nbformat_minor"] == old["nbformat_minor"], path.name
        for before, after in zip(old["cells"], new["cells"]):
            assert list(after) == list(before), path.name
            assert type(after["source"]) is type(before["source"]), path.name
            for key in ("outputs", "attachments", "metadata", "execution_count", "id"):
                assert after.get(key) == before.get(key), (path.name, key)
        assert new["cells"][:2] == old["cells"][:2], path.name  # untouched cells as they were
        loader = "".join(new["cells"][3]["source"])
        assert loader.startswith("%%time\n") and "worker_init_fn=" in loader, path.name
        # the only difference: the two cells the fix rewrote (so the indentation is kept)
        indent = len(raw.split("\n")[1]) - len(raw.split("\n")[1].lstrip())
        new["cells"][2:4] = old["cells"][2:4]
        assert json.dumps(new, indent=indent, ensure_ascii=False) + (
            "\n" if raw.endswith("\n") else "") == raw, path.name
