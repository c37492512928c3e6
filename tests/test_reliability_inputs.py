"""Bad inputs, each through the CLI (a subprocess, as users run it) and, where it applies,
through flake8: the run never crashes, an unreadable or unparsable file is reported once
(WS001) with a clear message, and a finding in an oddly encoded file is still found at the
right line and column."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from reliability_util import (
    CANDIDATE_HEADER, SAMPLE, SAMPLE_COL, SAMPLE_LINE, assert_clear_ws001, assert_no_crash,
    check, run_cli, run_flake8,
)
from workersafe.config import Config
from workersafe.engine import Engine


def _write(path: Path, data: "bytes | str") -> Path:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def _ws001(run, name: str) -> str:  # type: ignore[no-untyped-def]
    """The one WS001 message for `name` (and there must be exactly one)."""
    found = [f for f in run.findings() if f[3] == "WS001" and os.path.basename(f[0]) == name]
    assert len(found) == 1, run.stdout
    assert_clear_ws001(found[0][4])
    return found[0][4]


def _sample_found(run, name: str, line: int = SAMPLE_LINE, col: int = SAMPLE_COL) -> None:  # type: ignore[no-untyped-def]
    hits = [(os.path.basename(p), ln, c, code) for p, ln, c, code, _ in run.findings()]
    assert (name, line, col, "WS101") in hits, (run.stdout, run.stderr)


# --- syntax errors and old Python ------------------------------------------------------------

# name: (text, lines Python may blame (versions differ), words one of which it says)
SYNTAX_ERRORS = {
    "missing_colon.py": (CANDIDATE_HEADER + "def f()\n    pass\n", (4,), ("",)),
    "unclosed.py": (CANDIDATE_HEADER + "x = (1,\n", (4, 5), ("never closed", "EOF")),
    "bad_indent.py": (CANDIDATE_HEADER + "if True:\npass\n", (5,), ("indented block",)),
    "tab_mix.py": (CANDIDATE_HEADER + "if True:\n\tx = 1\n        y = 2\n", (6,),
                   ("tabs and spaces",)),
    "py2_print.py": (CANDIDATE_HEADER + 'print "x"\n', (4,), ("Missing parentheses",)),
    "py2_exec.py": (CANDIDATE_HEADER + 'exec "x = 1"\n', (4,), ("Missing parentheses",)),
    "py2_octal.py": (CANDIDATE_HEADER + "x = 0777\n", (4,), ("",)),
    "py2_backticks.py": (CANDIDATE_HEADER + "x = `1`\n", (4,), ("",)),
    "py2_ur.py": (CANDIDATE_HEADER + "x = ur'abc'\n", (4,), ("",)),
}


@pytest.fixture(scope="module")
def syntax_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("syntax")
    for name, (text, _, _) in SYNTAX_ERRORS.items():
        _write(root / name, text)
    _write(root / "good.py", SAMPLE)
    return root


def test_syntax_errors_are_reported_once_with_python_s_message(syntax_tree: Path) -> None:
    run = check(["."], syntax_tree)
    assert_no_crash(run)
    assert run.returncode == 1
    _sample_found(run, "good.py")
    for name, (_, lines, words) in SYNTAX_ERRORS.items():
        message = _ws001(run, name)
        assert message.startswith("cannot analyse this file: syntax error: "), message
        assert any(f"(line {line}" in message for line in lines), (name, message)
        assert any(w in message for w in words), (name, message)


def test_syntax_errors_through_flake8(syntax_tree: Path) -> None:
    """flake8 reports E999 itself and never runs an AST plugin on such a file: no crash."""
    run = run_flake8(sorted(SYNTAX_ERRORS) + ["good.py"], syntax_tree)
    assert_no_crash(run)
    codes = run.codes()
    for name in SYNTAX_ERRORS:
        assert any(n == name and c == "E999" for n, _, c in codes), run.stdout
    assert ("good.py", SAMPLE_LINE, "WS101") in codes


def test_syntax_errors_are_placed_where_flake8_places_e999(syntax_tree: Path) -> None:
    """WS001 at the error's own line and column, and the message's column, as flake8 prints
    E999's; none of these plain mistakes gets the newer-Python hint."""
    cli = {(os.path.basename(p), code): (line, col, msg)
           for p, line, col, code, msg in check(["."], syntax_tree).findings()}
    flake8 = {(os.path.basename(p), code): (line, col) for p, line, col, code, _
              in run_flake8(sorted(SYNTAX_ERRORS), syntax_tree).findings()}
    for name in SYNTAX_ERRORS:
        line, col, message = cli[(name, "WS001")]
        assert (line, col) == flake8[(name, "E999")], (name, message)
        assert f"(line {line}, column {col})" in message, (name, message)
        assert "newer" not in message, message


@pytest.mark.parametrize(("code", "needs"), [
    ("type Url = str\n", (3, 12)),
    ("def first[T](items: list[T]) -> T:\n    return items[0]\n", (3, 12)),
    ("class Box[T]:\n    pass\n", (3, 12)),
    ("x = f\"{row[\"id\"]}\"\n", (3, 12)),
    ("match x:\n    case 1:\n        pass\n", (3, 10)),
    ("try:\n    pass\nexcept* ValueError:\n    pass\n", (3, 11)),
    ("try:\n    pass\nexcept ValueError, TypeError:\n    pass\n", (3, 14)),
    ("x = t\"{a}\"\n", (3, 14)),
    ("x = f\"{y!z}\"\n", None),
    ("value = compute(1, 2 3)\n", None),
    ("def f()\n    pass\n", None),
    ("print 'x'\n", None),
])
def test_the_newer_python_hint_only_for_newer_syntax(code: str,
                                                     needs: "tuple[int, int] | None") -> None:
    """Under the running Python: a file it cannot parse gets the hint only when the line holds
    syntax of a newer Python (then it names that Python), never for a plain mistake."""
    findings = Engine(Config(), link=False, prefilter=False).check_text("x.py", code)
    if needs is not None and sys.version_info[:2] >= needs:
        assert not findings, findings  # this Python reads it
        return
    assert [f.code for f in findings] == ["WS001"], findings
    message = findings[0].message
    if needs is None:
        assert "newer" not in message, message
    else:
        assert f"Python {needs[0]}.{needs[1]} or newer" in message, message


def test_syntax_error_from_stdin(tmp_path: Path) -> None:
    text = SYNTAX_ERRORS["py2_print.py"][0]
    run = run_cli("check", "--no-cache", "--stdin-filename", "old.py", "-", cwd=tmp_path,
                  stdin=text.encode())
    assert_no_crash(run)
    assert run.returncode == 1
    assert "Missing parentheses" in _ws001(run, "old.py")


def test_python_3_12_syntax_follows_the_running_python(tmp_path: Path) -> None:
    """A `type` alias: analysed where the running Python parses it, else one WS001 (flake8's
    E999), never a crash."""
    text = SAMPLE.replace("\nclass Pages", "\ntype Url = str\n\n\nclass Pages", 1)
    _write(tmp_path / "new.py", text)
    run = check(["new.py"], tmp_path)
    assert_no_crash(run)
    if sys.version_info >= (3, 12):
        _sample_found(run, "new.py", SAMPLE_LINE + 3)
    else:
        assert "syntax error" in _ws001(run, "new.py")


# --- encodings, BOM, line endings, tabs --------------------------------------------------------

def test_latin1_coding_with_non_ascii_bytes(tmp_path: Path) -> None:
    lines = SAMPLE.split("\n")
    lines.insert(0, "# -*- coding: latin-1 -*-")
    lines.insert(1, "# caf\xe9, na\xefve, \xb5s")
    lines[SAMPLE_LINE + 1] = lines[SAMPLE_LINE + 1].replace("r.Session()", "r.Session()  # \xe9")
    text = "\n".join(lines).replace("self.urls = urls", "self.urls = urls  # d\xe9j\xe0 vu")
    raw = text.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    _write(tmp_path / "latin.py", raw)
    for run in (check(["latin.py"], tmp_path), run_flake8(["latin.py"], tmp_path)):
        assert_no_crash(run)
        _sample_found(run, "latin.py", SAMPLE_LINE + 2)


def test_utf8_bom(tmp_path: Path) -> None:
    _write(tmp_path / "bom.py", b"\xef\xbb\xbf" + SAMPLE.replace(
        "urls = urls", "urls = urls  # \u00e9\u4e2d").encode("utf-8"))
    for run in (check(["bom.py"], tmp_path), run_flake8(["bom.py"], tmp_path)):
        assert_no_crash(run)
        _sample_found(run, "bom.py")


def test_bom_with_a_contradicting_coding_line_is_reported(tmp_path: Path) -> None:
    _write(tmp_path / "both.py", b"\xef\xbb\xbf# coding: latin-1\n" + CANDIDATE_HEADER.encode())
    run = check(["both.py"], tmp_path)
    assert_no_crash(run)
    assert "encoding" in _ws001(run, "both.py")


def test_unknown_coding_and_undecodable_bytes(tmp_path: Path) -> None:
    _write(tmp_path / "klingon.py", "# coding: klingon\n" + CANDIDATE_HEADER)
    _write(tmp_path / "badutf8.py", CANDIDATE_HEADER.encode() + b"x = '\xff\xfe'\n")
    run = check(["."], tmp_path)
    assert_no_crash(run)
    assert "klingon" in _ws001(run, "klingon.py")
    line = CANDIDATE_HEADER.count("\n") + 1
    # where, as Python says it (not the codec's byte offset), and how to make it readable
    message = _ws001(run, "badutf8.py")
    assert f"cannot decode as utf-8: byte 0xff on line {line} (" in message, message
    assert "position" not in message and "coding: latin-1" in message


@pytest.mark.parametrize("ending", ["crlf", "cr", "mixed"])
def test_line_endings(tmp_path: Path, ending: str) -> None:
    lines = SAMPLE.split("\n")
    if ending == "crlf":
        text = "\r\n".join(lines)
    elif ending == "cr":
        text = "\r".join(lines)
    else:  # a lone \r never right before an empty line's \n (that would be one \r\n)
        ends = ["\n", "\r\n", "\r"]
        text = "".join(line + ("\n" if ends[i % 3] == "\r" and not lines[i + 1] else ends[i % 3])
                       for i, line in enumerate(lines[:-1])) + lines[-1]
    _write(tmp_path / "endings.py", text)
    for run in (check(["endings.py"], tmp_path), run_flake8(["endings.py"], tmp_path)):
        assert_no_crash(run)
        _sample_found(run, "endings.py")


def test_form_feed_and_unicode_line_separators_do_not_shift_lines(tmp_path: Path) -> None:
    r"""\f, \v, \x1c and \u2028 are line breaks for `str.splitlines` but not for Python, libcst
    or flake8: line numbers and `# noqa` must follow Python (regression: a `# noqa` was
    looked for on the wrong line by the CLI)."""
    lines = SAMPLE.split("\n")
    lines.insert(2, "# separators: \u2028 \u2029 \x1c \x85 end")
    lines.insert(3, "\x0c")
    lines.insert(4, "x = 1  # \x0b")
    line = SAMPLE_LINE + 3
    _write(tmp_path / "seps.py", "\n".join(lines))
    noqa = list(lines)
    noqa[line - 1] = noqa[line - 1].replace("# expect: WS101", "# noqa: WS101")
    _write(tmp_path / "seps_noqa.py", "\n".join(noqa))
    for run in (check(["."], tmp_path), run_flake8(["seps.py", "seps_noqa.py"], tmp_path)):
        assert_no_crash(run)
        _sample_found(run, "seps.py", line)
        assert not [f for f in run.findings() if f[0].endswith("seps_noqa.py")], run.stdout


def test_tabs(tmp_path: Path) -> None:
    _write(tmp_path / "tabs.py", SAMPLE.replace("    ", "\t"))
    for run in (check(["tabs.py"], tmp_path), run_flake8(["tabs.py"], tmp_path)):
        assert_no_crash(run)
        # two tabs then `self.s = `: column 12 (1-based), as flake8 counts it
        _sample_found(run, "tabs.py", SAMPLE_LINE, 12)


# --- size and depth --------------------------------------------------------------------------

def _five_megabytes() -> str:
    """5 MB: a real finding, then generated bulk that is cheap to parse (long string and
    comment lines, a huge line): reading, decoding, the prefilter, libcst's tokenizer and the
    noqa scan all see 5 MB."""
    bulk = ["", "", 'BLOB = """'] + ["0123456789abcdef" * 6] * 30_000 + ['"""', ""]
    bulk += ["# " + "comment " * 12] * 17_000
    bulk += ["HUGE = [" + ", ".join(str(i) for i in range(60_000)) + "]", ""]
    return SAMPLE + "\n".join(bulk)


@pytest.mark.one_python  # size, not the Python version (.ci/other-pythons skips it)
def test_five_megabyte_file(tmp_path: Path) -> None:
    text = _five_megabytes()
    assert len(text) >= 5_000_000
    _write(tmp_path / "big.py", text)
    start = time.monotonic()
    run = check(["big.py"], tmp_path, timeout=240)
    assert_no_crash(run)
    _sample_found(run, "big.py")
    assert time.monotonic() - start < 120
    # the plugin in process (real flake8 spends most of its time in pycodestyle and pyflakes)
    from workersafe.flake8_plugin import WorkerSafeChecker

    lines = text.splitlines(keepends=True)
    results = list(WorkerSafeChecker(None, lines, str(tmp_path / "big.py")).run())  # type: ignore[arg-type]
    assert [(r[0], r[1], r[2][:5]) for r in results] == [(SAMPLE_LINE, SAMPLE_COL - 1, "WS101")]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("WORKERSAFE_SLOW"), reason="set WORKERSAFE_SLOW=1: a "
                    "5 MB file of dense code costs minutes of libcst time and GiBs of memory")
def test_five_megabytes_of_dense_code(tmp_path: Path) -> None:
    parts = [SAMPLE]
    index = 0
    while sum(map(len, parts)) < 5_000_000:
        parts.append(f"\n\nclass Filler{index}(Dataset):\n    def __init__(self):\n"
                     f"        self.v = [{index}, {index + 1}]\n\n    def __getitem__(self, k):\n"
                     f"        return self.v[k] + {index}\n")
        index += 1
    _write(tmp_path / "dense.py", "".join(parts))
    start = time.monotonic()
    run = check(["dense.py"], tmp_path, timeout=3600)
    assert_no_crash(run)
    _sample_found(run, "dense.py")
    print(f"5 MB of dense code: {time.monotonic() - start:.0f} s")


DEEP = {
    # 1,000 levels of each kind of nesting, and chains far longer than libcst survives
    "parens_1000": "x = " + "(" * 1000 + "1" + ")" * 1000,
    "lists_1000": "x = " + "[" * 1000 + "]" * 1000,
    "dicts_1000": "x = " + "{1: " * 1000 + "1" + "}" * 1000,
    "add_1000": "x = " + " + ".join(["a"] * 1001),
    "add_100000": "x = " + "+".join(["1"] * 100_000),
    "attr_1000": "x = a" + ".b" * 1000,
    "attr_50000": "x = a" + ".b" * 50_000,
    "call_1000": "x = f" + "()" * 1000,
    "subscript_1000": "x = a" + "[0]" * 1000,
    "not_1000": "x = " + "not " * 1000 + "a",
    "minus_5000": "x = " + "-" * 5000 + "1",
    "lambda_1000": "x = " + "lambda: " * 1000 + "1",
    "ifexp_1000": "x = " + "a if b else " * 1000 + "c",
    "power_1000": "x = " + "**".join(["2"] * 1001),
    "multiline_add_1200": "x = (\n" + "\n".join(f"    a{i} +" for i in range(1200)) + "\n    b)",
    "fstring_add_1000": "x = f'{" + "+".join(["a"] * 1001) + "}'",
    "blocks_100": "".join(" " * i + "if x:\n" for i in range(100)) + " " * 100 + "pass",
}


@pytest.fixture(scope="module")
def deep_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("deep")
    for name, code in DEEP.items():
        _write(root / f"{name}.py", CANDIDATE_HEADER + code + "\n")
    _write(root / "good.py", SAMPLE)
    # 900 levels: below the limit, analysed as usual (the finding is found)
    _write(root / "deep_but_fine.py", SAMPLE + "\nY = " + "+".join(["1"] * 900) + "\n")
    return root


def test_deep_nesting_is_reported_not_crashed(deep_tree: Path) -> None:
    start = time.monotonic()
    run = check(["."], deep_tree, "-j", "1", timeout=600)
    elapsed = time.monotonic() - start
    assert run.returncode >= 0, f"killed by signal {-run.returncode} (segfault?)"
    assert_no_crash(run)
    _sample_found(run, "good.py")
    _sample_found(run, "deep_but_fine.py")
    for name in DEEP:
        message = _ws001(run, f"{name}.py")
        if name != "blocks_100":  # Python's own limit: "too many levels of indentation"
            assert "too deeply nested" in message, message
    assert elapsed < 180, f"{elapsed:.0f} s for {len(DEEP)} deep files"


# flake8 itself survives these; on the others pyflakes (RecursionError) or flake8's own
# processing crashes before or beside any plugin, whatever the plugin does.
FLAKE8_SURVIVES = ("lambda_1000", "parens_1000", "lists_1000", "dicts_1000", "blocks_100")


def test_deep_nesting_through_flake8(deep_tree: Path) -> None:
    names = [f"{n}.py" for n in FLAKE8_SURVIVES] + ["good.py"]
    run = run_flake8(names, deep_tree, "-j", "1", timeout=600)
    assert run.returncode >= 0, f"flake8 killed by signal {-run.returncode} (segfault?)"
    assert_no_crash(run)
    codes = run.codes()
    assert ("good.py", SAMPLE_LINE, "WS101") in codes
    assert ("lambda_1000.py", 1, "WS001") in codes
    for name, line, code in codes:  # flake8's E999, or our WS001: never anything else
        if name != "good.py":
            assert code in ("E999", "WS001"), run.stdout


def test_deep_nesting_through_the_flake8_plugin_in_process(deep_tree: Path) -> None:
    """Every deep file, straight into the plugin (flake8 would not get that far on most)."""
    from workersafe.flake8_plugin import WorkerSafeChecker

    for name in list(DEEP) + ["deep_but_fine"]:
        path = deep_tree / f"{name}.py"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        results = list(WorkerSafeChecker(None, lines, str(path)).run())  # type: ignore[arg-type]
        texts = [r[2] for r in results]
        if name == "deep_but_fine":
            assert any(t.startswith("WS101 ") and r[0] == SAMPLE_LINE
                       for t, r in zip(texts, results)), texts
        else:
            assert len(texts) == 1 and texts[0].startswith("WS001 "), texts
            assert_clear_ws001(texts[0][len("WS001 "):])


def test_parsing_leaves_the_recursion_limit_as_it_was() -> None:
    engine = Engine(Config())
    before = sys.getrecursionlimit()
    for code in (DEEP["add_1000"], DEEP["parens_1000"], "x = 1"):
        engine.check_text("t.py", CANDIDATE_HEADER + code + "\n")
        assert sys.getrecursionlimit() == before


# --- files that are not what they seem --------------------------------------------------------

def test_binary_files_named_py(tmp_path: Path) -> None:
    _write(tmp_path / "nul.py", bytes(range(256)) * 64)
    _write(tmp_path / "elf.py", b"\x7fELF\x02\x01\x01" + os.urandom(2048).replace(b"\0", b"x"))
    _write(tmp_path / "png.py", b"\x89PNG\r\n\x1a\n" + bytes(range(1, 256)) * 8)
    run = check(["."], tmp_path)
    assert_no_crash(run)
    assert run.returncode == 1
    assert "NUL bytes" in _ws001(run, "nul.py")
    _ws001(run, "elf.py")
    _ws001(run, "png.py")
    # Before Python 3.11 flake8 itself (not the plugin) crashes on such bytes (compile()
    # raises ValueError, the tokenizer a bare SyntaxError), so only newer Pythons check it.
    if sys.version_info >= (3, 11):
        flake = run_flake8(["nul.py", "elf.py", "png.py"], tmp_path)
        assert_no_crash(flake)


def test_empty_and_almost_empty_files(tmp_path: Path) -> None:
    _write(tmp_path / "empty.py", b"")
    _write(tmp_path / "bom_only.py", b"\xef\xbb\xbf")
    _write(tmp_path / "newline.py", b"\n")
    _write(tmp_path / "comment.py", b"# Dataset requests.Session\n")
    _write(tmp_path / "no_newline.py", CANDIDATE_HEADER.rstrip("\n").encode())
    run = check(["."], tmp_path)
    assert_no_crash(run)
    assert run.returncode == 0 and run.stdout == "", run.stdout
    flake = run_flake8(sorted(p.name for p in tmp_path.iterdir()), tmp_path)
    assert_no_crash(flake)
    assert flake.stdout == ""


def test_directory_named_like_a_python_file(tmp_path: Path) -> None:
    (tmp_path / "x.py").mkdir()
    _write(tmp_path / "x.py" / "inner.py", SAMPLE)
    (tmp_path / "tree" / "y.py").mkdir(parents=True)
    for args in (["x.py"], ["."], ["tree"]):
        run = check(args, tmp_path)
        assert_no_crash(run)
        if args != ["tree"]:
            _sample_found(run, "inner.py")
    assert_no_crash(run_flake8(["x.py", "tree"], tmp_path))


def test_nothing_to_check_is_said(tmp_path: Path) -> None:
    """An empty directory (or one of only other files, or a directory named `x.py`): exit 0 as
    ruff does, with a note on stderr, not silence that looks like a clean result."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "x.py").mkdir()
    (tmp_path / "docs").mkdir()
    _write(tmp_path / "docs" / "index.md", "# docs\n")
    for args in (["empty"], ["x.py", "docs"]):
        run = check(args, tmp_path)
        assert_no_crash(run)
        assert run.returncode == 0 and run.stdout == ""
        assert run.stderr.startswith("workersafe: note: no Python files or notebooks found in "
                                     + " ".join(args)), run.stderr


def test_nonexistent_path_is_a_usage_error(tmp_path: Path) -> None:
    _write(tmp_path / "good.py", SAMPLE)
    run = check(["good.py", "missing.py"], tmp_path)
    assert_no_crash(run, allowed=(2,))
    assert "missing.py" in run.stderr and "no such file" in run.stderr.lower()
    run = check(["no/such/dir"], tmp_path)
    assert_no_crash(run, allowed=(2,))
    assert "no/such/dir" in run.stderr


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_broken_links_and_non_files_named_on_the_command_line(tmp_path: Path) -> None:
    """Inside a walked directory they are skipped; named, they were silently clean (exit 0)."""
    _write(tmp_path / "good.py", SAMPLE)
    os.symlink("nowhere.py", tmp_path / "dangling.py")
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    cases = [("dangling.py", "broken symbolic link"), ("loop_a", "symbolic link loop")]
    if os.path.exists(os.devnull) and not os.path.isfile(os.devnull):
        cases.append((os.devnull, "not a file or directory"))
    for name, reason in cases:
        for command in ("check", "fix"):
            run = run_cli(command, "--no-cache", "good.py", name, cwd=tmp_path)
            assert_no_crash(run, allowed=(2,))
            assert run.returncode == 2 and name in run.stderr and reason in run.stderr, run.stderr
    _sample_found(check(["."], tmp_path), "good.py")  # a walk still skips them


# --- the file system changing or refusing under us ------------------------------------------------

class _VanishingEngine(Engine):
    """Deletes one file right after discovery: the race a `git checkout` during a run makes."""

    victim: str = ""

    def discover(self, paths):  # type: ignore[no-untyped-def]
        files = super().discover(paths)
        os.unlink(self.victim)
        return files


def test_file_vanishing_between_discovery_and_read(tmp_path: Path) -> None:
    _write(tmp_path / "a_gone.py", SAMPLE)
    _write(tmp_path / "b_kept.py", SAMPLE)
    engine = _VanishingEngine(Config())
    engine.victim = str(tmp_path / "a_gone.py")
    result = engine.check_paths([str(tmp_path)])
    by_file = {(os.path.basename(f.path), f.code): f for f in result.findings}
    assert ("b_kept.py", "WS101") in by_file
    gone = by_file[("a_gone.py", "WS001")]
    assert_clear_ws001(gone.message)
    assert "No such file" in gone.message
    assert [f.code for f in result.findings if f.path.endswith("a_gone.py")] == ["WS001"]


def test_unreadable_file_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission denied, simulated (root reads anything): reported, the rest analysed."""
    import builtins

    _write(tmp_path / "locked.py", SAMPLE)
    _write(tmp_path / "open.py", SAMPLE)
    real_open = builtins.open
    locked = str(tmp_path / "locked.py")

    def fake_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == locked:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    result = Engine(Config()).check_paths([str(tmp_path)])
    codes = {(os.path.basename(f.path), f.code) for f in result.findings}
    assert codes == {("locked.py", "WS001"), ("open.py", "WS101")}
    message = next(f.message for f in result.findings if f.code == "WS001")
    assert_clear_ws001(message)
    assert "Permission denied" in message


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="running as root: chmod 000 does not stop root from reading "
                           "(the in-process test above covers it)")
def test_unreadable_file_through_the_cli(tmp_path: Path) -> None:
    _write(tmp_path / "locked.py", SAMPLE)
    _write(tmp_path / "open.py", SAMPLE)
    os.chmod(tmp_path / "locked.py", 0)
    try:
        run = check(["."], tmp_path)
        assert_no_crash(run)
        assert "Permission denied" in _ws001(run, "locked.py")
        _sample_found(run, "open.py")
    finally:
        os.chmod(tmp_path / "locked.py", 0o644)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_symlink_loops_and_links_out_of_the_tree(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "pkg").mkdir(parents=True)
    outside.mkdir()
    _write(repo / "pkg" / "__init__.py", "")
    _write(repo / "pkg" / "mod.py", SAMPLE)
    _write(outside / "ext.py", SAMPLE)
    os.symlink("..", repo / "pkg" / "loop")  # a directory loop
    os.symlink("self.py", repo / "pkg" / "self.py")  # a link to itself (ELOOP)
    os.symlink("nowhere.py", repo / "pkg" / "dangling.py")
    os.symlink(str(outside), repo / "pkg" / "outdir")  # a directory outside the repo
    os.symlink(str(outside / "ext.py"), repo / "pkg" / "ext_link.py")  # a file outside
    run = check(["repo"], tmp_path, timeout=120)
    assert_no_crash(run)
    files = sorted(os.path.basename(f[0]) for f in run.findings())
    # directory links are not followed (no loop, nothing outside); a file link is read
    assert files == ["ext_link.py", "mod.py"], run.stdout
    flake = run_flake8(["repo"], tmp_path, timeout=120)
    assert flake.returncode in (0, 1), flake.stderr
    assert "Traceback" not in flake.stderr
