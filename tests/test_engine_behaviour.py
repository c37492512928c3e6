"""The engine's promises that are not about rule semantics: prefilter, lazy libcst import,
cache, parallel parsing, index for flake8, deterministic output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from expectations import FIXTURES
from workersafe.config import Config
from workersafe.engine import Engine

EXAMPLE = FIXTURES.parent / "examples" / "remote_images"
PROJECTS = FIXTURES / "projects"


def _run(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workersafe", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=300)


def test_files_without_tokens_are_never_parsed(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("import os\n\ndef f():\n    return os.getcwd()\n")
    (tmp_path / "handles_only.py").write_text("import requests\nS = requests.Session()\n")
    result = Engine(Config()).check_paths([str(tmp_path)])
    assert result.stats.files == 2
    assert result.stats.parsed == 0


@pytest.mark.parametrize("tail, candidate", [
    ('"""Benchmark DataLoaders, Datasets and DataPipes_ with this."""', False),
    ("from torch.utils.data import IterableDataset", True),
    # a comment is prose too (aistore's `# ... notably PyTorch DataLoader workers under`)
    ("x = 1  # notably PyTorch DataLoader workers", False),
    ("# the loader: DataLoader", False),
    # a `#` inside a string opens no comment: the word after it is code
    ("url, ds = 'http://x/#top', MyDataset", True),
    # a worker_init_fn reaching its dataset names no dataset word in code: a comment counts
    ("# DataLoader\nget_worker_info().dataset.db = db('x')", True),
])
def test_dataset_words_in_prose_do_not_make_a_candidate(tmp_path: Path, tail: str,
                                                        candidate: bool) -> None:
    """torch's own autograd/profiler.py: `import sqlite3`, `sqlite3.connect(...)` and, in a
    docstring, "DataLoaders with num_workers": code names torch's classes only as whole
    identifiers (or identifier ends, `IterableDataset`), not in a docstring or a comment."""
    handle = "import sqlite3\n\ndef db(path):\n    return sqlite3.connect(path)\n"
    (tmp_path / "code.py").write_text(handle + "\n" + tail + "\n")
    result = Engine(Config(), link=False).check_paths([str(tmp_path)])
    assert (result.stats.candidates, result.stats.parsed) == (int(candidate), int(candidate))


@pytest.mark.parametrize("text, named", [
    ("loader = DenseDataLoader(ds)", True),  # a word ending in another ("DataLoader")
    ("rows = MyDataThing()", True),  # a configured base: only its whole word counts
    ("rows = OtherDataThing()", False),  # ("DataThing" alone is no word)
    ("c = Corpus()", True),  # a configured base without "Data"
    ("# Corpus()\nx = 1", False),
    ('"""Corpus"""\nx = DataThing', False),
    ("DataLoaders = 1", False),  # no word ends there
    ("dls = DataLoaders.from_dsets(a, b)", True),
])
def test_dataset_words_configured_or_ending_others(text: str, named: bool) -> None:
    from workersafe.config import Config
    from workersafe.prefilter import Prefilter

    prefilter = Prefilter(Config().registry(), ("MyDataThing", "Corpus"))
    assert prefilter.mentions_dataset(text + "\n") is named


def test_libcst_not_imported_without_candidates(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("x = 1\n")
    # a handle file and a dataset file that do not link: the repo-wide closure runs too
    (tmp_path / "db.py").write_text("import sqlite3\nCONN = sqlite3.connect('x.db')\n")
    (tmp_path / "ds.py").write_text("import os\nfrom torch.utils.data import Dataset\n")
    code = ("import sys\nfrom workersafe.cli import main\nrc = main(['check', '--no-cache', "
            f"{str(tmp_path)!r}])\nprint(rc, 'libcst' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["0", "False"], proc.stderr


def test_a_check_that_finds_imports_no_dataclasses_module(tmp_path: Path) -> None:
    """The records the analysis makes and copies, and the cache's format, run without the
    `dataclasses` module and the `inspect` it imports (~5 ms of every run, a twentieth of a
    300-file tree's check): cold, with the cache written, and warm, read from it. (A finding
    the rewriter decides loads it to say `[fixable]`, and libcst uses them: this one's row
    refuses the fix, a video reader a forked worker hangs dropping.)"""
    (tmp_path / "ds.py").write_text(
        "import cv2\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Clips(Dataset):\n    def __init__(self, path):\n"
        "        self.cap = cv2.VideoCapture(path)\n\n"
        "    def __getitem__(self, i):\n        return self.cap.read()\n\n"
        "loader = DataLoader(Clips('a.mp4'), num_workers=2)\n")
    code = ("import sys\nfrom workersafe.cli import main\n"
            "rc = main(['check', '--cache-dir', sys.argv[1], '--stats', sys.argv[2]])\n"
            "print(rc, [m for m in ('dataclasses', 'inspect') if m in sys.modules])\n")
    for run in ("cold", "warm"):
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"),
                               str(tmp_path / "ds.py")], capture_output=True, text=True,
                              timeout=120)
        assert "WS1" in proc.stdout and proc.stdout.splitlines()[-1] == "1 []", \
            (run, proc.stdout + proc.stderr)
        assert ('"cache_hits": 1' in proc.stderr) == (run == "warm"), proc.stderr


def test_a_refusal_the_registry_decides_loads_no_rewriter(tmp_path: Path) -> None:
    """A finding whose handle's row refuses the fix (a video reader a forked worker hangs
    dropping) is marked "not fixable" in `fix`'s own words without loading libcst; one the
    rewriter decides loads it (the control)."""
    reader = ("import cv2\nfrom torch.utils.data import DataLoader, Dataset\n\n"
              "class Clips(Dataset):\n    def __init__(self, path):\n"
              "        self.cap = cv2.VideoCapture(path)\n\n"
              "    def __getitem__(self, i):\n        return self.cap.read()\n\n"
              "loader = DataLoader(Clips('a.mp4'), num_workers=2)\n")
    code = ("import sys\nfrom workersafe.cli import main\nrc = main(['check', '--no-cache', "
            "'--strategy', '{strategy}', {path!r}])\nprint(rc, 'libcst' in sys.modules)\n")
    for name, text, loaded in (("clips.py", reader, "False"),
                               ("archive.py", reader.replace("cv2.VideoCapture", "zipfile.ZipFile")
                                .replace("import cv2", "import zipfile"), "True")):
        folder = tmp_path / name[:-3]
        folder.mkdir()
        (folder / name).write_text(text)
        for strategy in ("worker-init", "lazy"):
            proc = subprocess.run(
                [sys.executable, "-c", code.format(strategy=strategy, path=str(folder))],
                capture_output=True, text=True, timeout=120)
            assert proc.stdout.split()[-2:] == ["1", loaded], proc.stdout + proc.stderr
    checked = _run("check", "--no-cache", cwd=tmp_path / "clips").stdout.decode()
    note = checked.partition("[not fixable: ")[2].rpartition("]")[0]
    assert note.startswith("a forked worker hangs when it drops"), checked
    fixed = _run("fix", "--diff", "--no-cache", cwd=tmp_path / "clips")
    assert f"not fixed: {note}\n" in (fixed.stdout + fixed.stderr).decode()


def test_a_warm_check_says_fixable_without_planning_again(tmp_path: Path) -> None:
    """Whether `fix` can fix a finding is kept in the cache: the warm `check` after a cold one
    says it without libcst (a file naming no handle and no dataset, which the warm run does
    not read, counts by its size and mtime). After an edit to any file the fix is planned
    again: here the archive opened for writing, which `fix` refuses."""
    project = tmp_path / "p"
    project.mkdir()
    data = project / "archive.py"
    data.write_text("import zipfile\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
                    "class Clips(Dataset):\n    def __init__(self, path):\n"
                    "        self.zf = zipfile.ZipFile(path)\n\n"
                    "    def __getitem__(self, i):\n        return self.zf.read(str(i))\n\n\n"
                    "loader = DataLoader(Clips('a.zip'), num_workers=2)\n")
    quiet = project / "reset.py"
    hour_ago = time.time() - 3600

    def write_quiet(body: str) -> None:
        quiet.write_text(f"def reset(clips):\n    {body}\n")
        os.utime(quiet, (hour_ago, hour_ago))  # (a file written just now is read again)

    write_quiet("return clips")
    code = ("import sys\nfrom workersafe.cli import main\nrc = main(['check', '--cache-dir', "
            f"{str(tmp_path / 'cache')!r}, {str(project)!r}])\n"
            "print(rc, 'libcst' in sys.modules)\n")

    def check() -> tuple[str, str]:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
        *findings, last = proc.stdout.splitlines()
        assert findings and proc.stderr == "", proc.stdout + proc.stderr
        return "\n".join(findings), last

    runs = [check() for _ in range(3)]
    assert [loaded for _, loaded in runs] == ["1 True", "1 False", "1 False"]
    assert len({out for out, _ in runs}) == 1 and runs[0][0].endswith("[fixable]")
    write_quiet("return None")  # planned again (the answer is the same)
    assert check() == (runs[0][0], "1 True")
    data.write_text(data.read_text().replace("ZipFile(path)", 'ZipFile(path, "w")'))
    edited, loaded = check()
    assert loaded == "1 True" and "[not fixable: zipfile.ZipFile is opened with mode 'w'" \
        in edited, edited


def test_cli_imports_no_linker_rules_or_noqa_when_no_file_is_a_candidate(tmp_path: Path) -> None:
    """`workersafe check` on a tree where no file names both a handle and a dataset parses
    nothing: the analysis, the linker, the rules and the `# noqa` reader stay unimported (the
    run's fixed cost, paid on every small tree)."""
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "db.py").write_text("import sqlite3\nCONN = sqlite3.connect('x.db')\n")
    unwanted = ["workersafe.analysis.extract", "workersafe.parse", "workersafe.link",
                "workersafe.rules", "workersafe.noqa", "workersafe.parallel", "libcst"]
    code = ("import sys\nfrom workersafe.cli import main\nrc = main(['check', '--no-cache', "
            f"'--stats', {str(tmp_path)!r}])\n"
            f"print(rc, [m for m in {unwanted!r} if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.splitlines()[-1] == "0 []", proc.stdout + proc.stderr
    assert '"parsed": 0' in proc.stderr, proc.stderr  # (`--stats`: the JSON it prints)


def test_flake8_plugin_imports_no_analysis_for_plain_files(tmp_path: Path) -> None:
    """A file that creates no handle (most files flake8 checks; here a dataset without one), or
    no dataset or loader (a session without one: no finding in one file alone), is turned away
    by the prefilter before the engine, the analysis or the facts are imported."""
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "ds.py").write_text("from torch.utils.data import Dataset\n\n\n"
                                    "class D(Dataset):\n    pass\n")
    (tmp_path / "client.py").write_text("import requests\n\nSESSION = requests.Session()\n")
    unwanted = ["libcst", "workersafe.engine", "workersafe.facts", "workersafe.analysis",
                "workersafe.link", "workersafe.rules", "workersafe.parse"]
    code = ("import sys\nfrom flake8.main.cli import main\n"
            f"rc = main(['--isolated', '-j1', '--select=WS', {str(tmp_path)!r}])\n"
            f"print(rc, [m for m in {unwanted!r} if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.splitlines()[-1] == "0 []", proc.stdout + proc.stderr


def test_flake8_plugin_imports_only_what_one_file_needs(tmp_path: Path) -> None:
    """flake8 imports the plugin on every run, and a file passing the prefilter pulls in the
    analysis: no TOML parser (no pyproject.toml here), no cache, no file selection, no libcst,
    no project index (there is none), no fixer, language server, guard, notebooks or docs, no
    file reader, report format or parse pool (flake8 reads the file and reports)."""
    target = tmp_path / "ds.py"
    shutil.copy(FIXTURES / "lint" / "alias_from_import_as.py", target)  # one WS101
    unwanted = ["tomllib", "tomli", "libcst", "workersafe.cache", "workersafe.selection",
                "workersafe.index", "workersafe.atomic", "workersafe.fix", "workersafe.fixes",
                "workersafe.lsp", "workersafe.guard", "workersafe.notebook", "workersafe.docs",
                "workersafe.cli", "workersafe.reading", "workersafe.report", "workersafe.parallel",
                "workersafe.exitcodes", "workersafe.codemod"]
    code = ("import sys\nfrom flake8.main.cli import main\n"
            f"rc = main(['--isolated', '--select=WS', {str(target)!r}])\n"
            f"print(rc, [m for m in {unwanted!r} if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert "WS101" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "1 []", proc.stdout + proc.stderr


def test_flake8_plugin_freezes_what_it_keeps_once_after_the_first_candidate(
        tmp_path: Path) -> None:
    """The modules and tables a candidate loads live as long as flake8: they leave the cycle
    collector's care once, after the first candidate (`gc.freeze`), and never for a run whose
    files are all turned away by the prefilter (nothing of ours was loaded)."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x = 1\n")
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    for name in ("one.py", "two.py"):
        shutil.copy(FIXTURES / "lint" / "alias_from_import_as.py", candidates / name)
    # (Python 3.12 starts with objects frozen already: compare with the count at start)
    code = ("import gc, sys\ncalls = []\nfreeze = gc.freeze\nstart = gc.get_freeze_count()\n"
            "gc.freeze = lambda: (calls.append(1), freeze())[1]\n"
            "from flake8.main.cli import main\n"
            "try:\n    main(['--isolated', '-j1', '--select=WS', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print(len(calls), gc.get_freeze_count() > start)\n")
    counts = []
    for folder in (plain, candidates):
        proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                              text=True, timeout=120)
        counts.append(proc.stdout.splitlines()[-1] if proc.stdout else proc.stderr)
    assert counts == ["0 False", "1 True"], counts


def test_second_run_reads_facts_from_cache(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "dataset_and_train_split", project)
    cache = str(tmp_path / "cache")
    first = Engine(Config(), cache_dir=cache).check_paths([str(project)])
    second = Engine(Config(), cache_dir=cache).check_paths([str(project)])
    assert first.stats.parsed > 0 and first.stats.cache_hits == 0
    assert second.stats.parsed == 0 and second.stats.cache_hits == first.stats.parsed
    assert [f.message for f in first.findings] == [f.message for f in second.findings]


def test_edited_file_is_analysed_again(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "zero_workers_other_file", project)
    cache = str(tmp_path / "cache")
    before = Engine(Config(), cache_dir=cache).check_paths([str(project)])
    train = next(p for p in project.rglob("*.py") if "num_workers=0" in p.read_text())
    train.write_text(train.read_text().replace("num_workers=0", "num_workers=4"))
    after = Engine(Config(), cache_dir=cache).check_paths([str(project)])
    assert after.stats.parsed == 1
    assert {f.code for f in before.findings} == set()
    assert "WS101" in {f.code for f in after.findings}


def test_corrupted_cache_entry_is_ignored_with_a_warning(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project)
    first = _run("check", ".", cwd=project)
    entries = list((project / ".workersafe_cache").rglob("*.json"))
    entries = [e for e in entries if e.name != "index.json"]
    assert entries
    for entry in entries:
        entry.write_text("{not json")
    second = _run("check", ".", cwd=project)
    assert second.returncode == first.returncode == 1
    assert second.stdout == first.stdout
    assert b"warning" in second.stderr and b"Traceback" not in second.stderr


def test_parallel_and_serial_agree(tmp_path: Path) -> None:
    serial = Engine(Config(), jobs=1).check_paths([str(PROJECTS)])
    parallel = Engine(Config(), jobs=2)
    import workersafe.parallel as par

    old = par.MIN_PARALLEL_BYTES, par.MIN_PARALLEL_FILES
    par.MIN_PARALLEL_BYTES, par.MIN_PARALLEL_FILES = 0, 2
    try:
        result = parallel.check_paths([str(PROJECTS)])
    finally:
        par.MIN_PARALLEL_BYTES, par.MIN_PARALLEL_FILES = old
    assert result.stats.workers == 2
    assert [(f.path, f.line, f.code, f.message) for f in result.findings] == \
        [(f.path, f.line, f.code, f.message) for f in serial.findings]


def test_flake8_links_against_a_fresh_index(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project)
    flake8 = [sys.executable, "-m", "flake8", "--isolated", "--select=WS", "data.py"]
    alone = subprocess.run(flake8, cwd=project, capture_output=True, text=True, timeout=120)
    assert "WS111" in alone.stdout
    assert _run("check", ".", cwd=project).returncode == 1
    linked = subprocess.run(flake8, cwd=project, capture_output=True, text=True, timeout=120)
    assert "WS101" in linked.stdout and "train.py:" in linked.stdout
    os.utime(project / "train.py", ns=(1, 1))  # another file changed: the index is stale
    stale = subprocess.run(flake8, cwd=project, capture_output=True, text=True, timeout=120)
    assert "WS111" in stale.stdout and "index in .workersafe_cache/ is stale" in stale.stdout
    assert "is stale" not in alone.stdout  # (no index at all: the code alone)
    rebuilt = subprocess.run(flake8 + ["--workersafe-index"], cwd=project, capture_output=True,
                             text=True, timeout=120)
    assert "WS101" in rebuilt.stdout, rebuilt.stderr


def test_flake8_never_trusts_or_rebuilds_an_index_above_the_project(tmp_path: Path) -> None:
    """An index a run left in a folder above the project (`workersafe check` in a home or a
    temporary directory) is not this project's: the plugin neither loads it nor rebuilds it
    (that read everything below it), and `--workersafe-index` builds the project's own."""
    outer = tmp_path / "outer"
    shutil.copytree(EXAMPLE, outer / "other")
    assert _run("check", ".", cwd=outer).returncode == 1
    outer_index = outer / ".workersafe_cache" / "index.json"
    before = outer_index.read_bytes()
    project = outer / "proj"
    shutil.copytree(EXAMPLE, project)
    (project / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    code = ("import sys\nfrom flake8.main.cli import main\n"
            "try:\n    main(['--isolated', '--select=WS', *sys.argv[1:], 'data.py'])\n"
            "except SystemExit:\n    pass\n"
            "print('workersafe.index' in sys.modules)\n")
    plain = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True,
                           text=True, timeout=120)
    assert "WS111" in plain.stdout, plain.stdout + plain.stderr  # single-file knowledge
    assert plain.stdout.splitlines()[-1] == "False", plain.stdout + plain.stderr
    built = subprocess.run([sys.executable, "-c", code, "--workersafe-index"], cwd=project,
                           capture_output=True, text=True, timeout=120)
    assert "WS101" in built.stdout, built.stdout + built.stderr
    assert outer_index.read_bytes() == before
    own = json.loads((project / ".workersafe_cache" / "index.json").read_text())
    assert own["stats"] and all(p.startswith(str(project)) for p in own["stats"]), own["stats"]


def test_flake8_names_a_linked_loader_in_another_folder_as_check_does(tmp_path: Path) -> None:
    """A loader in a folder above the dataset's is named by its path from the project root in
    both front ends (flake8 links through the index, which holds absolute paths: it showed
    `/tmp/.../pkg/loaders.py:8`)."""
    pkg = tmp_path / "pkg"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("")
    (pkg / "data" / "frames.py").write_text(
        "import h5py\nfrom torch.utils.data import Dataset\n\n\nclass Frames(Dataset):\n"
        "    def __init__(self, path):\n        self.h5 = h5py.File(path, 'r')\n\n"
        "    def __len__(self):\n        return len(self.h5['x'])\n\n"
        "    def __getitem__(self, i):\n        return self.h5['x'][i]\n")
    (pkg / "loaders.py").write_text(
        "from torch.utils.data import DataLoader\n\nfrom .data.frames import Frames\n\n\n"
        "def train_loader(path):\n    return DataLoader(Frames(path), num_workers=4)\n")
    check = _run("check", ".", cwd=tmp_path)
    assert b"pkg/loaders.py:7" in check.stdout, check.stdout
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=WS", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "WS101" in flake8.stdout and "pkg/loaders.py:7" in flake8.stdout, flake8.stdout
    assert str(tmp_path) not in flake8.stdout


def test_the_index_holds_each_files_facts_as_the_cache_does(tmp_path: Path) -> None:
    """The index splices in the JSON the facts cache read or wrote for each file: cold or
    warm, the document is the one `json.dumps` would make of the index's data, and it loads
    back to the facts the run linked."""
    from workersafe.facts import to_jsonable
    from workersafe.index import load_index

    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "callers_through_reexport", project)
    for run in ("cold", "warm"):
        assert _run("check", ".", cwd=project).returncode in (0, 1), run
        text = (project / ".workersafe_cache" / "index.json").read_text(encoding="utf-8")
        data = json.loads(text)
        assert text == json.dumps(data, separators=(",", ":")), run
        index = load_index(str(project / ".workersafe_cache"))
        assert index is not None and index.facts, run
        assert {p: to_jsonable(f) for p, f in index.facts.items()} == data["facts"], run
        fresh = Engine(Config(), cache_dir=None).check_paths([str(project)]).facts
        assert set(index.facts) == {os.path.abspath(p) for p, f in fresh.items()
                                    if not f.error}, run


def test_output_order_is_deterministic() -> None:
    runs = [Engine(Config()).check_paths([str(PROJECTS)]).findings for _ in range(2)]
    keys = [[(f.path, f.line, f.col, f.code) for f in run] for run in runs]
    assert keys[0] == keys[1] == sorted(keys[0])


def test_json_schema(tmp_path: Path) -> None:
    proc = _run("check", "--no-cache", "--format", "json", str(EXAMPLE), cwd=tmp_path)
    assert proc.returncode == 1
    rows = json.loads(proc.stdout)
    assert rows and set(rows[0]) == {"path", "line", "col", "end_line", "end_col", "code",
                                     "message", "fixable", "cell"}
    assert rows[0]["code"] == "WS101" and rows[0]["line"] == 12 and rows[0]["col"] == 24


@pytest.mark.parametrize("path", sorted((FIXTURES / "lint").glob("*.py")), ids=lambda p: p.name)
def test_positions_from_pythons_tree_equal_libcsts(path: Path) -> None:
    """Positions come from Python's `ast` (columns converted from UTF-8 bytes to characters);
    every span in the facts must be the span libcst's PositionProvider gives the same call or
    class (the fixer locates nodes by libcst positions)."""
    import libcst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from workersafe.analysis.extract import extract_facts
    from workersafe.parse import ParseError, python_tree
    from workersafe.registry import Registry

    text = path.read_text(encoding="utf-8")
    try:
        tree = python_tree(text)
    except ParseError:
        pytest.skip("not analysed")
    facts = extract_facts(tree, text, path.name, "m", False, Registry())
    positions = MetadataWrapper(libcst.parse_module(text)).resolve(PositionProvider)
    libcst_spans = {(p.start.line, p.start.column, p.end.line, p.end.column)
                    for node, p in positions.items()
                    if isinstance(node, (libcst.Call, libcst.ClassDef))}
    spans = [c.span for c in facts.classes]
    spans += [h.site.span for c in facts.classes for h in (*c.held, *c.class_held)]
    spans += [h.site.span for h in facts.module_handles]
    spans += [loader.span for loader in facts.loaders]
    spans += [a.site.span for loader in facts.loaders for r in loader.datasets
              for a in r.handle_args]
    assert spans or not facts.classes
    for span in spans:
        assert (span.line, span.col, span.end_line, span.end_col) in libcst_spans, span


def _age(tree: Path, seconds: int = 60) -> None:
    """Move every mtime into the past: files written within two seconds are never recorded
    quiet (a change within the same mtime tick would go unseen)."""
    past = time.time() - seconds
    for path in tree.rglob("*.py"):
        os.utime(path, (past, past))


@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_warm_run_that_skips_quiet_files_finds_the_same(tmp_path: Path, name: str) -> None:
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / name, project)
    (project / "notes.py").write_text("'''Unrelated: DataLoaders, requests.'''\nX = 1\n")
    _age(project)
    cache = str(tmp_path / "cache")
    cold = Engine(Config()).check_paths([str(project)])
    warm_engines = [Engine(Config(), cache_dir=cache, skip_quiet=True) for _ in range(2)]
    first, second = (e.check_paths([str(project)]) for e in warm_engines)
    assert first.stats.unread == 0 and second.stats.unread >= 1
    quiet = {f.path for f in second.files} - set(second.sources)
    # An entry script's start method reaches a loader only if no other script imports it:
    # then every file is read to find those importers (a quiet one may be one).
    if not any("set_start_method" in p.read_text(encoding="utf-8")
               for p in project.rglob("*.py")):
        assert str(project / "notes.py") in quiet
    for run in (first, second):
        assert [(f.path, f.line, f.col, f.code, f.message) for f in run.findings] == \
            [(f.path, f.line, f.col, f.code, f.message) for f in cold.findings]


def test_quiet_file_read_when_the_linking_needs_it(tmp_path: Path) -> None:
    """The worker_init_fn lives in a file that names no handle and no dataset: a warm run
    leaves it unread until the loader refers to it, then reads it (and its `# noqa`)."""
    (tmp_path / "ds.py").write_text(
        "import requests\nfrom torch.utils.data import Dataset\n\n\nclass D(Dataset):\n"
        "    def __init__(self):\n        self.s = requests.Session()\n\n"
        "    def __getitem__(self, i):\n        return self.s.get(str(i))\n")
    (tmp_path / "helpers.py").write_text("def seed(worker_id):\n    return worker_id\n")
    (tmp_path / "train.py").write_text(
        "from torch.utils.data import DataLoader\nfrom ds import D\nfrom helpers import seed\n\n"
        "loader = DataLoader(D(), num_workers=2, worker_init_fn=seed)\n")
    _age(tmp_path)
    cache = str(tmp_path / "cache")
    cold = Engine(Config()).check_paths([str(tmp_path)])
    for _ in range(2):
        warm = Engine(Config(), cache_dir=cache, skip_quiet=True).check_paths([str(tmp_path)])
        assert [(f.path, f.code, f.message) for f in warm.findings] == \
            [(f.path, f.code, f.message) for f in cold.findings]
    assert warm.stats.unread == 1
    assert str(tmp_path / "helpers.py") in warm.sources  # read on demand
    assert str(tmp_path / "helpers.py") in warm.facts


def test_quiet_file_that_changes_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("X = 1\n")
    _age(tmp_path)
    cache = str(tmp_path / "cache")
    for _ in range(2):
        run = Engine(Config(), cache_dir=cache, skip_quiet=True).check_paths([str(tmp_path)])
    assert run.stats.unread == 1 and run.findings == []
    (tmp_path / "train.py").write_text(
        "import requests\nfrom torch.utils.data import Dataset, DataLoader\n\n\n"
        "class D(Dataset):\n    def __init__(self):\n        self.s = requests.Session()\n\n"
        "    def __getitem__(self, i):\n        return self.s.get(str(i))\n\n\n"
        "loader = DataLoader(D(), num_workers=2)\n")
    run = Engine(Config(), cache_dir=cache, skip_quiet=True).check_paths([str(tmp_path)])
    assert run.stats.unread == 0 and [f.code for f in run.findings] == ["WS101"]


def test_recently_written_files_are_not_recorded_quiet(tmp_path: Path) -> None:
    (tmp_path / "fresh.py").write_text("X = 1\n")
    cache = str(tmp_path / "cache")
    for _ in range(2):
        run = Engine(Config(), cache_dir=cache, skip_quiet=True).check_paths([str(tmp_path)])
    assert run.stats.unread == 0


@pytest.mark.parametrize("line, expected", [
    ("import a.b as c, d", [(0, "a.b"), (0, "d")]),
    ("import\tnumpy", [(0, "numpy")]),
    ("from ..x.y import z", [(2, "x.y")]),
    ("from . import z", [(1, "")]),
    ("from .import z", [(1, "")]),
    ("from .importer import z", [(1, "importer")]),
    ("import io; from clients import S3", [(0, "io"), (0, "clients")]),
    ("    from h5py import (File,", [(0, "h5py")]),
    ("x = importlib.import_module('a')", [(0, "a")]),  # an import call imports 'a'
    ("# we import nothing here", []),
])
def test_one_import_scanner_for_the_prefilter_and_the_selection(
        line: str, expected: list[tuple[int, str]]) -> None:
    from workersafe.prefilter import import_statements, imported_roots

    assert import_statements(line + "\n") == expected
    assert imported_roots(line) == {name.split(".")[0] for level, name in expected if not level}


@pytest.mark.parametrize("text, names", [
    ("from a import b, c as d", ("b", "c")),
    ("from a import (b, c)", ("b", "c")),
    ("from a import *", ("*",)),
    # a list going on below its line (black's), comments and a trailing comma in it
    ("from a import (\n    b,  # the first (of two)\n    c as d,\n)", ("b", "c")),
    ("from a import (  # why\n    b, c)\nimport os", ("b", "c")),
    # not all known: any name may come from there
    ("from a import (\n    b\n    c)", ()),  # (a syntax error)
    ("from a import b, \\\n    c", ()),
    ("from a import (\n    b,\n", ()),  # never closed
])
def test_the_names_a_from_line_lists(text: str, names: tuple[str, ...]) -> None:
    """The names a `from` import binds, read by the selection to tell which files may name
    a definition; () when they cannot all be read from the text (the file may name any)."""
    from workersafe.prefilter import import_lines

    assert import_lines(text + "\n")[0] == (0, "a", names)
    # an import line's answer is kept for the next text holding it; a list that goes on
    # below its line is read in each text
    again = import_lines(f"import io\n{text}\nimport sys\n")
    assert again[:2] == [(0, "io", None), (0, "a", names)] and again[-1] == (0, "sys", None)


def test_a_list_below_its_line_is_read_in_each_text() -> None:
    """The same opening line, listing other names below it in another text."""
    from workersafe.prefilter import import_lines

    for below in ("b,\n    c,\n)", "d\n)", "e, f)"):
        expected = tuple(w.strip() for w in below.rstrip(")").replace("\n", "").split(",")
                         if w.strip())
        assert import_lines(f"from a import (\n    {below}\n") == [(0, "a", expected)]


@pytest.mark.parametrize("text", [
    "naïve = café(x)\n",  # a letter beyond ASCII inside a word: "na" and "ve" are no words
    "data—load(ds)  # an em dash is no word's: `load` is one\n",
    "load\u00a0(x); ünïcode_load = 1\n",  # no-break space ends a word; `_` joins one
    "x = 'Grüße'\nload(x)\n",
    "\ud800load = 1\n",  # a lone surrogate (undecodable bytes kept as such)
    "plain ascii: load(x)\n",
])
def test_words_are_found_whole_beyond_ascii(text: str) -> None:
    """The selection's word search finds a name where `\\b<name>\\b` would, in any text:
    ASCII texts are split as bytes, the others too, with only the tokens holding characters
    beyond ASCII split by the regex (a character there may or may not be a word's)."""
    import re

    from workersafe.prefilter import forget_words, words_pattern

    names = {"na", "ve", "load", "café", "x", "Grüße", "ds", "is"}
    pattern = words_pattern(names)
    assert pattern is not None
    try:
        assert pattern.found(text) == {w for w in re.findall(r"\w+", text) if w in names}
    finally:
        forget_words()


@pytest.mark.parametrize("text", [
    "fooas(x)\n",  # `as` right after the name: the call-site pattern's `as(?!\w)`
    "foo\n", "foo", "foo\r\n", "foo\t# note\n", "foo  \\\n(x)\n", "from m import foo as f\n",
    "xfoo(1); foo_bar(2); _foo(3)\n",  # the name inside other words only
    "é foo é\n", "fooé(x)\n", "naïve(x) = ve\n", "\ud800foo(x)\n",
    "obj.foo (x)\nfoo.__doc__\n", "for ds in datasets: DataLoader(ds)\n",
    "from torch.utils.data import DataLoader as DL, DataLoader as DataLoader as x\n",
    "MyDataLoader as Y\nDataLoader\tas\tZ\n", "",
])
def test_word_tests_by_find_answer_as_the_regexes_they_replace(text: str) -> None:
    """The selection's text tests that find a name's occurrences with `str.find` (a regex
    starting with a look-behind or `\\b` tries every position of the text) answer as those
    regexes, at the edges of words beyond ASCII too."""
    import re

    from workersafe.prefilter import spells_word
    from workersafe.selection import _loader_aliases, _may_call

    for name in ["foo", "ve", "na", "ds", "DataLoader", "x", "é", ""]:
        whole = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")
        assert spells_word(text, name) == (whole.search(text) is not None), name
        call = re.compile(r"(?<!\w)" + re.escape(name) + r"[ \t\r\f]*(?:[(),;#\\]|as(?!\w)|$)",
                          re.M)
        if name:
            assert _may_call(text, name) == (call.search(text) is not None), name
    aliases = re.findall(r"\bDataLoader[ \t]+as[ \t]+(\w+)", text)
    assert _loader_aliases({"a.py": text}, {"a.py"}) == tuple(sorted(set(aliases)))


@pytest.mark.parametrize("text, expected", [
    ("def val(net, dataset):\n    return DataLoader(dataset, batch_size=2)\n", True),
    ("def val(net, data: Dataset = None):\n    DataLoader(dataset=data)\n", True),
    ("def run(datasets):\n    for k, ds in datasets.items():\n        DataLoader(ds)\n", True),
    ("def run(datasets):\n    for ds in datasets:\n        DataLoader(ds, 2)\n", True),
    ("class T:\n    def __init__(self, train_set):\n        self.train_set = train_set\n"
     "    def loader(self):\n        return DataLoader(self.train_set)\n", True),
    ("ds = Items()\nDataLoader(ds, 2)\ndef f(dsx):\n    pass\n", False),  # a longer word
    ("def run(n):\n    for ds in make(n):\n        DataLoader(ds)\n", False),  # over a call
    ("for ds in sets:\n    DataLoader(ds)\ndef f(x, y):\n    pass\n", False),
    ("for a, b, ds in sets:\n    DataLoader(ds)\ndef f(sets):\n    pass\n", False),
    ("class T:\n    def __init__(self):\n        self.data = make()\n"
     "    def loader(self):\n        return DataLoader(self.data)\n", False),
    ("self.data_x = y\nDataLoader(self.data)\n", False),
    ("self.a = self.data = y\nDataLoader(self.data)\n", True),
    ("x = DataLoader (ds)\n", False), ("", False),
])
def test_a_loader_of_a_parameter_is_found_as_the_regexes_per_name_found_it(
        text: str, expected: bool) -> None:
    """`_loader_of_parameter` reads a text with patterns of its own, as it read it with
    patterns made for each name (the reference below): the same answer."""
    import re

    from workersafe.selection import _LOADER_FIRST_ARG, _LOADER_SELF_ARG, _loader_of_parameter

    def per_name(text: str) -> bool:
        if "DataLoader(" not in text:
            return False
        for match in re.finditer(_LOADER_FIRST_ARG, text):
            name = match.group(1)
            if re.search(rf"def \w+\([^)]*\b{name}\b", text):
                return True
            for loop in re.finditer(rf"\bfor\s+(?:\w+\s*,\s*)?{name}\s+in\s+(\w+)", text):
                if re.search(rf"def \w+\([^)]*\b{loop.group(1)}\b", text):
                    return True
        attrs = [match.group(1) for match in re.finditer(_LOADER_SELF_ARG, text)]
        return any(re.search(rf"self\.{attr}\s*=\s*\w+\s*$", text, re.M) for attr in attrs)

    assert _loader_of_parameter(text) == per_name(text) == expected


def test_git_ignored_files_are_skipped_in_a_work_tree_and_git_is_not_run_outside_one(
        tmp_path: Path) -> None:
    """Inside a git work tree (a `.git` here or above) discovery lists what git would track;
    outside one, every file, without running git (`subprocess` is not even imported)."""
    for name in ("repo", "plain"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / ".gitignore").write_text("ignored.py\n")
        for file in ("kept.py", "ignored.py"):
            (tmp_path / name / "sub" / file).write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True, timeout=60)
    engine = Engine(Config())
    for root in (tmp_path / "repo", tmp_path / "repo" / "sub"):  # the .git above counts too
        assert [Path(f.path).name for f in engine.discover([str(root)])] == ["kept.py"], root
    code = ("import sys\nfrom workersafe.config import Config\nfrom workersafe.engine import "
            f"Engine\nfiles = Engine(Config()).discover([{str(tmp_path / 'plain')!r}])\n"
            "print(sorted(f.path.rsplit('/', 1)[-1] for f in files), 'subprocess' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if not k.startswith("GIT_")})
    assert proc.stdout.split("\n")[0] == "['ignored.py', 'kept.py'] False", proc.stderr


def test_an_ignored_tree_named_explicitly_is_checked_whole(tmp_path: Path) -> None:
    """A folder git ignores, given as the path to check, is checked with all its files (git
    is asked whether the tree is ignored once a file is missing from its list); its folders
    below and a tracked tree keep git's filter."""
    repo = tmp_path / "repo"
    (repo / "vendored" / "deep").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / ".gitignore").write_text("vendored/\nskipped.py\n")
    for folder in ("vendored", "vendored/deep", "src"):
        for file in ("a.py", "skipped.py"):
            (repo / folder / file).write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    engine = Engine(Config())

    def names(root: Path) -> list[str]:
        return sorted(str(Path(f.path).relative_to(repo)) for f in engine.discover([str(root)]))

    assert names(repo / "vendored") == ["vendored/a.py", "vendored/deep/a.py",
                                        "vendored/deep/skipped.py", "vendored/skipped.py"]
    assert names(repo / "vendored" / "deep") == ["vendored/deep/a.py", "vendored/deep/skipped.py"]
    assert names(repo / "src") == ["src/a.py"]
    assert names(repo) == ["src/a.py"]


def test_a_cli_run_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    """`check` and `fix` collect less often while they run (cli._fewer_collections), and put
    the collector's thresholds back, and unfreeze only what they froze: tests and editors call
    `main`. (Frozen objects can be freed during a run, so counts are compared as zero or not.)"""
    import gc

    from workersafe.cli import main

    def state() -> tuple[object, bool, bool]:
        return gc.get_threshold(), gc.get_freeze_count() > 0, gc.isenabled()

    (tmp_path / "ds.py").write_text((FIXTURES / "lint" / "alias_from_import_as.py").read_text())
    before = state()
    assert main(["check", "--no-cache", str(tmp_path)]) == 1
    assert state() == before
    assert main(["check", "--no-cache", "--select", "WS999", str(tmp_path)]) == 2  # usage error
    assert state() == before
    if not before[1]:  # objects frozen by someone else stay frozen (pytest on 3.12 has some)
        gc.freeze()
        try:
            assert main(["check", "--no-cache", str(tmp_path)]) == 1
            assert gc.get_freeze_count() > 0
        finally:
            gc.unfreeze()


def test_without_jobs_the_pool_takes_only_idle_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """`-j` not given: a helper process only where another process leaves a CPU idle (the
    load average, as `make -l`); `-j N` is obeyed whatever the load."""
    import workersafe.parallel as par
    from workersafe.discovery import SourceFile

    files = [SourceFile(f"f{i}.py", f"f{i}", False, ".") for i in range(20)]
    texts = {f.path: "x = 1\n" * 100_000 for f in files}  # 12 MB: enough work for any pool
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    for load, workers in ((0.2, 4), (1.6, 2), (3.4, 1), (9.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert par._worker_count(files, texts, 0) == workers, load
        assert par._worker_count(files, texts, 3) == 3


def test_path_answers_follow_the_working_directory_from_one_run_to_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One process (the language server, a test run) checks two trees one after the other:
    what the first taught the path caches (`mylib` is a package there) must not answer for the
    second, where the same relative directory is not one."""
    from workersafe.discovery import discover, module_spellings

    for name, package in (("a", True), ("b", False)):
        lib = tmp_path / name / "helpers" / "mylib"
        lib.mkdir(parents=True)
        (lib / "ds.py").write_text("x = 1\n")
        if package:
            (lib / "__init__.py").write_text("")
    answers = []
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        files = {f.path: f.module for f in discover(["."])}
        path = os.path.join("helpers", "mylib", "ds.py")
        answers.append(module_spellings(path, files[path]))
    assert answers == [("mylib.ds",), ()]


def test_importers_are_found_in_work_linear_in_the_tree() -> None:
    """The start-method round's importers of a loader's file (`selection._importers`) come
    from one pass over the files' imports, not from a pass over every text per round: on a
    chain of modules each imported by the next, the texts read stay linear in the chain (a
    round per link read every text, quadratic: minutes of substring searches on NVIDIA/NeMo,
    2,600 files). The answer is the same transitive importers either way."""
    from workersafe.discovery import SourceFile
    from workersafe.selection import _importers

    class CountingTexts(dict[str, str]):
        reads = 0

        def __getitem__(self, path: str) -> str:
            CountingTexts.reads += 1
            return super().__getitem__(path)

    for size in (50, 400):
        CountingTexts.reads = 0
        by_path = {f"m{i}.py": SourceFile(f"m{i}.py", f"m{i}", False, ".") for i in range(size)}
        texts = CountingTexts({f"m{i}.py": f"import m{i - 1}\n" if i else "x = 1\n"
                               for i in range(size)})
        texts["other.py"] = "import json\n"  # imports none of them: never an importer
        by_path["other.py"] = SourceFile("other.py", "other", False, ".")
        imports = {p: {t.split()[1]} for p, t in texts.items() if t.startswith("import")}
        by_module = {f.module: p for p, f in by_path.items()}
        found = _importers({"m0.py"}, by_path, texts, lambda p: imports.get(p, set()),
                           by_module)
        assert found == {f"m{i}.py" for i in range(1, size)}
        assert CountingTexts.reads <= 2 * size, (size, CountingTexts.reads)


def test_callers_of_a_loader_helper_parsed_only_where_they_may_lead_to_a_finding(
        tmp_path: Path) -> None:
    """A library's loader helper is called by many scripts, one of them with a dataset whose
    holder keeps a connection: once the linker names that holder's class, only the callers
    that may hand the helper one of its objects are parsed (they spell a name leading to it,
    or a file spelling one imports them), not every caller. The files parsed do not grow
    with the unrelated callers, and the finding is the same."""
    lib = FIXTURES / "projects" / "callers_of_loader_helper_that_pass_other_datasets"
    counts = []
    for callers in (3, 30):
        project = tmp_path / f"p{callers}"
        shutil.copytree(lib, project)
        for i in range(callers):
            (project / "examples" / f"plot{i}.py").write_text(
                "from lib.loaders import make_loader\nfrom lib.numbers import Numbers\n\n"
                f"for batch in make_loader(Numbers(), workers={i % 3}):\n    print(batch)\n")
        result = Engine(Config()).check_paths([str(project)])
        assert [(os.path.relpath(f.path, project), f.line, f.code) for f in result.findings] \
            == [(os.path.join("lib", "store.py"), 8, "WS101")]
        assert not any("plot" in path for path in result.facts)
        counts.append(result.stats.parsed)
    assert counts[0] == counts[1], counts
