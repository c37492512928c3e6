"""Jupyter notebooks: code cells as one Python module, positions mapped back to cells, and the
notebook written back with its format intact.

The module the engine sees is every code cell in order, each after a marker comment line
(`# %% [workersafe cell N]`), so a Dataset in one cell and its DataLoader in another link like
two parts of one file. IPython syntax (`%magic`, `%%cell magic`, `!shell`, `obj?`, and
automagic lines such as `pip install torch` or `cd data`) is masked line by line with a `pass`
statement carrying a token, so every other line keeps its position and the masked lines can be
restored after a fix. A cell that still does not parse is masked whole (Jupyter would not run
any of it) and its marker line carries the syntax error, reported as WS001 at that cell and
line (`cell_errors`) while the other cells are analysed. Cells are numbered from 1 over all
cells (markdown and raw cells included), as editors show them."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from .discovery import NOTEBOOK_SUFFIX
from .records import record
from .ruletable import UNREADABLE
from .source import Source, SourceError, keep_tree, physical_lines

if TYPE_CHECKING:
    from .findings import Finding

SUFFIX = NOTEBOOK_SUFFIX
_MARKER = "# %% [workersafe cell {}]\n"
# a cell that does not parse: `<line>:<col>: <message>` (in the cell; col as findings hold it)
_BAD_MARKER = "# %% [workersafe cell {}] unparsed {}:{}: {}\n"
_MARKER_RE = re.compile(r"^# %% \[workersafe cell (\d+)\]( unparsed (\d+):(\d+): (.*))?$")
_MASK = "pass  # workersafe-magic-{}"
_MASK_RE = re.compile(r"^([ \t]*)pass  # workersafe-magic-(\d+)$")
# `%time <statement>`: IPython runs the statement in the notebook's namespace, so it stays, after
# `pass;` in place of `%time` (its columns kept) and with a token ending the line
_TIMED = re.compile(r"([ \t]*)%time[ \t]+(?=\S)")
_TIMED_TOKEN = "  # workersafe-timed-{}"
_TIMED_RE = re.compile(r"^([ \t]*)pass;(.*)  # workersafe-timed-(\d+)$")
_TIMED_START = re.compile(r"^[ \t]*pass;")
# Cell magics whose body is Python; any other `%%` cell (bash, html, writefile...) is not.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})
# IPython's line magics, which automagic (on by default) runs without the `%` (`pip install
# torch`, `cd data`): masked when the line is not Python as it stands.
_AUTOMAGICS = frozenset("""
    alias alias_magic autoawait autocall automagic bookmark cat cd clear colors conda config cp
    debug dhist dirs doctest_mode ed edit env gui hist history killbgscripts ldir less lf lk ll
    load load_ext loadpy logoff logon logstart logstate logstop ls lsmagic lx macro magic man
    matplotlib mamba micromamba mkdir more mv notebook page pastebin pdb pdef pdoc pfile pinfo
    pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab qtconsole
    quickref recall rehashx reload_ext rep rerun reset reset_selective rm rmdir run save sc
    set_env store sx system tb time timeit unalias unload_ext uv who who_ls whos xdel xmode
    """.split())


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@record(frozen=True)
class CellLine:
    """Where a line of the joined module sits in the notebook (both 1-based)."""

    cell: int
    line: int

    def __str__(self) -> str:
        return f"cell {self.cell}:{self.line}"


@record()
class Notebook:
    """A parsed notebook and its joined code."""

    raw: bytes
    data: dict[str, Any]
    code: str  # the joined module
    masked: list[str]  # token number → the original line it replaced


def notebook_source(path: str, raw: bytes, validate: bool = False,
                    check: bool = True) -> Source:
    """The joined code of a notebook as a Source (the engine and fixer read it like a file).
    Its structure is checked as far as reading the cells needs (`_check_cells`); nbformat's
    whole schema only with `validate` (before a notebook is rewritten, `notebook_fix`): its
    import and set-up cost more than analysing a tree's notebooks. Without `check`, the code
    is not parsed (a cell that does not parse is left as it is, unmarked): a linked run
    parses only the notebooks its selection wants, and checks the cells of those whose code
    does not parse then (`checked_source`), as a .py file's syntax error is found only when
    the file is parsed."""
    code = load(raw, validate, path, check).code
    return Source(path, code.encode("utf-8"), code, "utf-8", False)


def checked_source(path: str, raw: bytes, unchecked: str) -> Optional[Source]:
    """The Source `notebook_source` gives with `check`, if `raw` still joins to `unchecked`
    (the code read before without it); None if the notebook changed since, or is no longer
    one (then what was read stands)."""
    try:
        cells, masked = _cells(_data(raw, False))
    except SourceError:
        return None
    if _joined(cells, {}) != unchecked:
        return None
    code = _checked(cells, masked, path)
    return Source(path, code.encode("utf-8"), code, "utf-8", False)


def load(raw: bytes, validate: bool = True, path: str = "", check: bool = True) -> Notebook:
    """Parse and check (with `validate`, against nbformat's schema too), then join the code
    cells; SourceError when invalid. `path`: where `raw` was read, when the engine analyses
    the code (its tree is kept for that: `source.keep_tree`). With `check` (the default), a
    cell that does not parse is masked and marked (`_checked`)."""
    data = _data(raw, validate)
    cells, masked = _cells(data)
    code = _checked(cells, masked, path) if check else _joined(cells, {})
    return Notebook(raw, data, code, masked)


def _data(raw: bytes, validate: bool) -> dict[str, Any]:
    """The notebook's JSON, checked as far as reading its cells needs (with `validate`,
    against nbformat's schema too); SourceError when invalid."""
    text, value = _json(raw)
    _check_shape(value)
    data: dict[str, Any] = value  # an object (`_check_shape`)
    _check_cells(data)
    if validate:
        _validate(text)
    return data


def _cells(data: dict[str, Any]) -> tuple[dict[int, list[str]], list[str]]:
    """Each code cell's lines (IPython's syntax masked), by cell number, and what the masking
    replaced (token number → the original line)."""
    masked: list[str] = []
    python = _is_python(data)
    cells: dict[int, list[str]] = {}
    for number, cell in enumerate(data["cells"], start=1):
        if not python or not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        cells[number] = [line if line.endswith(("\n", "\r")) else line + "\n"
                         for line in _masked_cell(cell_text(cell), masked)]
    return cells, masked


def _checked(cells: dict[int, list[str]], masked: list[str], path: str) -> str:
    """The joined code, each cell that does not parse alone masked whole and its marker
    carrying the error (when the whole code does not parse). `cells` is masked in place."""
    code = _joined(cells, {})
    if _cell_error(code, path) is not None:
        errors = {}
        for number, lines in cells.items():
            error = _cell_error("".join(lines))
            if error is not None:
                if _cell_error(_as_ipython_cleans(lines, masked)) is None:
                    error = None  # IPython runs it (below): left out, its columns would move
                else:
                    errors[number] = error
                # each line as written: a line already masked (`%time`, `!cmd`) restores to it
                cells[number] = [_mask(_unmask(line, masked), masked, indent=False)
                                 for line in lines]
        code = _joined(cells, errors)
    return code


def _joined(cells: Mapping[int, list[str]],
            errors: Mapping[int, tuple[int, int, str]]) -> str:
    out: list[str] = []
    for number, lines in cells.items():
        error = errors.get(number)
        out.append(_MARKER.format(number) if error is None else _BAD_MARKER.format(
            number, *error[:2], " ".join(error[2].split())))
        out.extend(lines)
    return "".join(out)


def _as_ipython_cleans(lines: list[str], masked: list[str]) -> str:
    """The cell as IPython runs it after its clean-up transforms (`inputtransformer2`'s
    `cleanup_transforms`), masked again: leading blank lines dropped; when the first line is
    indented (` x.shape`), that indentation removed from every line starting with it
    (`leading_indent`); then pasted prompts stripped, `>>> `/`... ` when the first line has
    one (`classic_prompt`), `In [3]: `/`   ...: ` when the first or second line has one
    (`ipython_prompt`). `lines`: the cell as masked (tokens of `masked`)."""
    text = [_unmask(line, masked) for line in lines]
    while text and text[0].isspace():
        text = text[1:]
    first = text[0] if text else ""
    space = first[: len(first) - len(first.lstrip(" \t"))]
    if space:
        text = [line[len(space):] if line.startswith(space) else line for line in text]
    for initial, prompt in _PROMPTS:
        if text and (initial.match(text[0]) or (len(text) > 1 and prompt.match(text[1]))):
            text = [prompt.sub("", line, count=1) for line in text]
    return "".join(_masked_lines(text, []))


# IPython's `classic_prompt` and `ipython_prompt`: (the prompt that starts a pasted block, any
# prompt); `...` alone is Python, so a block of `>>>` prompts starts only with `>>>`
_PROMPTS = (
    (re.compile(r"^>>>( |$)"), re.compile(r"^(>>>|\.\.\.)( |$)")),
    (re.compile(r"^(((\[nav\]|\[ins\])? )?In \[\d+\]: |\s*\.{3,}: ?)"),
     re.compile(r"^(((\[nav\]|\[ins\])? )?In \[\d+\]: |\s*\.{3,}: ?)")),
)


def _cell_error(text: str, keep_as: str = "") -> Optional[tuple[int, int, str]]:
    """(line, col, message) of a cell that does not parse alone, or None. `keep_as`: the path
    the tree of a text that parses is kept for (`source.keep_tree`: the whole notebook's
    code, which the engine analyses as it is when every cell parses)."""
    from .parse import ParseError, python_tree

    try:
        tree = python_tree(text)
    except ParseError as exc:
        return max(exc.line, 1), exc.col, str(exc)
    if keep_as:
        keep_tree(keep_as, text, tree)
    return None


def cell_errors(code: str) -> list[tuple[int, int, str]]:
    """The cells `load` found unparsable, from the joined code alone: (joined line of the
    error, col, message naming the cell and the line within it)."""
    if "] unparsed " not in code:
        return []
    out = []
    for index, text in enumerate(physical_lines(code)):
        match = _MARKER_RE.match(text.rstrip("\r\n"))
        if match and match.group(2):
            cell, line, col = int(match.group(1)), int(match.group(3)), int(match.group(4))
            message = match.group(5).replace("(line ", f"(cell {cell}, line ", 1)
            out.append((index + 1 + line, col, message))
    return out


def _check_shape(data: Any) -> None:
    """What nbformat's validation assumes (its errors for other JSON are not for users)."""
    if not isinstance(data, dict):
        raise SourceError("not a notebook (the JSON is not an object)")
    version = data.get("nbformat")
    if isinstance(version, int) and not isinstance(version, bool) and version < 4:
        raise SourceError(f"an nbformat {version} notebook: only nbformat 4 is read (convert it "
                          "with `jupyter nbconvert --to notebook --nbformat 4 --inplace`)")
    if version != 4:
        raise SourceError(f"not a notebook (nbformat {version!r}; 4 expected)")
    if not isinstance(data.get("cells"), list):
        raise SourceError("not a notebook (no list of cells)")


_CELL_TYPES = frozenset({"code", "markdown", "raw"})


def _check_cells(data: dict[str, Any]) -> None:
    """nbformat 4's schema where it concerns what is read here: the notebook's metadata and
    minor version, each cell's type and source (a string or a list of strings). A cell
    missing keys the analysis does not read (a code cell without `outputs`, as one of
    MONAI's tutorials has) is read: Jupyter opens and runs such a notebook (nbformat's whole
    schema is checked before `fix` rewrites one, `_validate`)."""
    if not isinstance(data.get("metadata"), dict):
        raise SourceError("not a valid notebook: 'metadata' is a required object")
    minor = data.get("nbformat_minor")
    if not isinstance(minor, int) or isinstance(minor, bool):
        raise SourceError("not a valid notebook: 'nbformat_minor' is a required integer")
    for number, cell in enumerate(data["cells"], start=1):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if not isinstance(kind, str) or kind not in _CELL_TYPES:
            raise SourceError(f"not a valid notebook: cell {number} has no known cell_type")
        if "source" not in cell:
            raise SourceError(f"not a valid notebook: cell {number} ({kind}) has no 'source'")
        source = cell["source"]
        if not isinstance(source, str) and not (
                isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise SourceError(f"not a valid notebook: cell {number}'s source is not text")


def _json(raw: bytes) -> tuple[str, Any]:
    """The notebook's JSON text and its value; SourceError unless it is JSON."""
    try:
        text = raw.decode("utf-8-sig")
        return text, json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise SourceError(f"not a notebook (invalid JSON: {exc})") from None


def _validate(text: str) -> None:
    try:
        import nbformat
    except ImportError:  # the JSON checks above and the cell walk are all that is needed
        return
    import warnings

    try:
        reads = nbformat.reads
        with warnings.catch_warnings():  # e.g. MissingIDFieldWarning: nbformat's, not a finding
            warnings.simplefilter("ignore")
            # nbformat's `reads` has no annotations (the one `type: ignore` in src/)
            notebook = reads(text, as_version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
            nbformat.validate(notebook)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many types for bad input
        message = " ".join(str(exc).split())[:200]
        raise SourceError(f"not a valid notebook: {message}") from None


def _is_python(data: dict[str, Any]) -> bool:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    for key in ("kernelspec", "language_info"):
        info = metadata.get(key) if isinstance(metadata, dict) else None
        if isinstance(info, dict):
            language = info.get("language") if key == "kernelspec" else info.get("name")
            if isinstance(language, str) and language:
                # "python", and as some kernels spell it: "python3", "ipython", "IPython3"
                return re.fullmatch(r"i?python\d?", language.strip().lower()) is not None
    return True


def cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _masked_cell(text: str, masked: list[str]) -> list[str]:
    lines = physical_lines(text)
    if not lines:
        return []
    # IPython drops leading blank lines first (`leading_empty_lines`): `\n%%bash` is a cell magic
    start = next((i for i, line in enumerate(lines) if line.strip()), 0)
    first = lines[start].strip()
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if _writes_python(first) and _cell_error("".join(lines[start + 1:])) is None:
            # the Python file the cell writes (`%%writefile train.py`, then `!torchrun
            # train.py` or `from train import ...`): its body is analysed as written (no
            # IPython syntax in a file); one that does not parse stays masked (the cell runs)
            return lines[:start] + [_mask(lines[start], masked, indent=False)] + lines[start + 1:]
        if name not in _PYTHON_CELL_MAGICS:  # %%bash, %%html, %%writefile...: not Python
            return [_mask(line, masked, indent=False) for line in lines]
        return (lines[:start] + [_mask(lines[start], masked)]
                + _masked_lines(lines[start + 1:], masked))
    if not _may_mask(text):
        return lines
    return _masked_lines(lines, masked)


def _writes_python(first: str) -> bool:
    """Whether a cell's first line `%%writefile [-a] <file>.py` (or `%%file`) writes a Python
    file (the cell's body is its code)."""
    words = first[2:].split()
    if not words or words[0] not in ("writefile", "file"):
        return False
    names = [word for word in words[1:] if not word.startswith("-")]
    return len(names) == 1 and names[0].strip("'\"").endswith(".py")


# what `_mask_line` masks needs, in some line: `%`, `!` or `?` first (or a `?` at the end),
# `= %`/`= !` (`files = !ls`), or an automagic's name as the line's first word
_MAGIC_MARKS = r"(?m)^\s*[%!]|=\s*[%!]"
_FIRST_WORDS = r"(?m)^\s*(\S+)"


def _may_mask(text: str) -> bool:
    """Whether `_masked_lines` may mask a line of the cell `text` (False: it returns the
    lines as they are, and its lexer need not run). Each test is one scan in C, and may say
    yes where no line is masked: then the lines are gone through. (`^` starts a line only
    after `\n`: a cell holding a `\r` is gone through.)"""
    if "?" in text or "\r" in text:
        return True
    if ("%" in text or "!" in text) and re.search(_MAGIC_MARKS, text):
        return True
    return not _AUTOMAGICS.isdisjoint(re.findall(_FIRST_WORDS, text))


def _masked_lines(lines: list[str], masked: list[str]) -> list[str]:
    """IPython's escapes count only where a statement starts: not inside brackets, strings, or
    after a backslash continuation (`("a"\n % b)` is Python)."""
    out = []
    scanner = _Scanner()
    magic_lead = None  # a masked magic ending in `\` goes on (`out = !cmd \`): its indentation
    for line in lines:
        if magic_lead is not None:  # the rest of the magic: masked where the magic starts
            out.append(magic_lead + _mask(line, masked, indent=False))
            if not line.rstrip("\r\n").endswith("\\"):
                magic_lead = None
            continue
        new = _mask_line(line, masked) if scanner.at_statement_start else line
        out.append(new)
        if new is not line and line.rstrip("\r\n").endswith("\\"):
            magic_lead = line[: len(line) - len(line.lstrip())]
            continue
        scanner.feed(line)
    return out


class _Scanner:
    """Enough of Python's lexer to know whether the next line starts a statement."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""  # the open triple quote, if any
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and not self.quote and not self.continued

    def feed(self, line: str) -> None:
        body = line.rstrip("\r\n")
        i, n = 0, len(body)
        special = _LEXED.search
        while i < n:
            if self.quote:
                end = body.find(self.quote, i)
                while end > 0 and body[end - 1] == "\\" and not _even_backslashes(body, end):
                    end = body.find(self.quote, end + 1)
                if end < 0:
                    break
                i, self.quote = end + 3, ""
                continue
            found = special(body, i)  # the next character that matters, found in C
            if found is None:
                break
            i = found.start()
            ch = body[i]
            if ch == "#":
                break
            if ch in "\"'":
                triple = body[i:i + 3]
                if triple in ('"""', "'''"):
                    self.quote, i = triple, i + 3
                    continue
                i = _string_end(body, i)
                continue
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        self.continued = not self.quote and body.endswith("\\")


# the characters `_Scanner.feed` acts on outside a triple-quoted string (the others it steps over)
_LEXED = re.compile(r"[#\"'()\[\]{}]")


def _string_end(body: str, start: int) -> int:
    quote, i = body[start], start + 1
    stop = (_SINGLE_QUOTED if quote == "'" else _DOUBLE_QUOTED).search
    while True:  # from one backslash or quote to the next, found in C
        found = stop(body, i)
        if found is None:
            return len(body)
        i = found.start()
        if body[i] == quote:
            return i + 1
        i += 2  # an escaped character


_SINGLE_QUOTED = re.compile(r"[\\']")
_DOUBLE_QUOTED = re.compile(r'[\\"]')


def _even_backslashes(body: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and body[end - count - 1] == "\\":
        count += 1
    return count % 2 == 0


def _mask_line(line: str, masked: list[str]) -> str:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return line
    # `obj?`, `obj.attr??`, `x[0]?`, and IPython's wildcard search `np.*load*?` (psearch)
    help_query = stripped.endswith("?") and re.fullmatch(r"[\w.*\[\]()]+\?\??", stripped)
    if stripped[0] in "%!?" or help_query:
        return _timed(line, masked) or _mask(line, masked)
    if ("%" in stripped or "!" in stripped) and re.match(r"^[\w., ]+=\s*[%!]", stripped):
        # `files = !ls`, `t = %timeit -o f()`
        return _mask(line, masked)
    if _is_automagic(stripped):
        return _mask(line, masked)
    return line


def _is_automagic(stripped: str) -> bool:
    """`pip install torch`, `cd data`, `run train.py`: a line magic's name, then its arguments,
    on a line that is not Python (`ls = []`, `time.sleep(1)`, `run(x)` are; so is a bare `ls`,
    which is then left alone: it does nothing either way here)."""
    word = stripped.split(None, 1)[0]
    if word not in _AUTOMAGICS or len(word) == len(stripped):
        return False
    if re.match(r"\s*(=(?!=)|[-+*/%&|^@<>]+=|:)", stripped[len(word):]):
        return False  # `time = ...`, `ls += ...`, `cd: str = ...`: Python
    scanner = _Scanner()
    scanner.feed(stripped)
    if not scanner.at_statement_start:
        return False  # an open bracket, string or `\`: the first line of a longer statement
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(stripped)
    except (SyntaxError, ValueError):
        return True
    except (RecursionError, MemoryError):
        return False
    return False


def _timed(line: str, masked: list[str]) -> Optional[str]:
    """`%time ds = Frames(p)` as the statement IPython runs (in the notebook's namespace, as
    written: `ds` is bound), `pass;` in place of `%time` so every column stays, the line's
    token at its end (`_unmask` restores it); None when the rest is no one-line statement
    (`%timeit`, `%time` alone, an open bracket or `\\`: then masked whole)."""
    head = _TIMED.match(line)
    body = line.rstrip("\r\n")
    if head is None or body.endswith("\\"):
        return None
    lead = head.group(1)
    timed = f"pass;{body[len(lead) + len('%time'):]}"
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(timed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    masked.append(line)
    return f"{lead}{timed}{_TIMED_TOKEN.format(len(masked) - 1)}{line[len(body):]}"


def _mask(line: str, masked: list[str], indent: bool = True) -> str:
    """`pass` with a token naming the original line (restored by `rewrite`); at the line's
    indentation, so a magic inside a block leaves the block valid."""
    body = line.rstrip("\r\n")
    end = line[len(body):]
    lead = body[: len(body) - len(body.lstrip())] if indent else ""
    masked.append(line)
    return f"{lead}{_MASK.format(len(masked) - 1)}{end}"


# --- writing back -------------------------------------------------------------------------------

def changed_cells(old: bytes, new: bytes) -> list[tuple[int, str, str]]:
    """(cell number, old source, new source) of each code cell that differs between two
    versions of a notebook (numbered as findings number them, from 1, every cell counted)."""
    before, after = load(old, validate=False).data["cells"], load(new, validate=False).data["cells"]
    return [(number, cell_text(a), cell_text(b))
            for number, (a, b) in enumerate(zip(before, after), start=1)
            if a.get("cell_type") == "code" and cell_text(a) != cell_text(b)]


class NotebookWriteError(Exception):
    """The new code cannot be put back into the notebook safely; nothing is written."""


def rewrite(raw: bytes, new_code: str) -> bytes:
    """The notebook `raw` with its code cells replaced by the cells of `new_code` (a joined
    module as `load` makes it, after a rewrite). Every other byte is kept: the JSON is
    re-serialised in the notebook's own layout, and refused if that layout cannot be
    reproduced exactly."""
    notebook = load(raw)
    if new_code == notebook.code:
        return raw
    layout = _Layout.detect(raw, notebook.data)
    cells = _split(new_code, notebook)
    data = notebook.data
    for number, text in cells.items():
        cell = data["cells"][number - 1]
        old = cell.get("source", "")
        before = cell_text(cell)
        if not before.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        if text != before:  # an untouched cell keeps its source as it was split
            text = _ending_as(text, before)
            cell["source"] = physical_lines(text) if isinstance(old, list) else text
    return layout.dump(data)


def _ending_as(text: str, before: str) -> str:
    """A rewritten cell ending as it did: the blank lines the rewrite left at its end (two
    above the next cell's code, as between top-level definitions of a module) go, and the
    cell's own trailing newlines stay."""
    lines = physical_lines(text)
    while lines and not lines[-1].strip():
        lines.pop()
    core = before.rstrip("\r\n")
    return "".join(lines).rstrip("\r\n") + before[len(core):]


def _split(new_code: str, notebook: Notebook) -> dict[int, str]:
    cells: dict[int, list[str]] = {}
    current: Optional[list[str]] = None
    preamble: list[str] = []
    for line in _timed_rejoined(physical_lines(new_code)):
        match = _MARKER_RE.match(line.rstrip("\r\n"))
        if match:
            current = cells.setdefault(int(match.group(1)), [])
            continue
        (preamble if current is None else current).append(_unmask(line, notebook.masked))
    expected = {int(m.group(1)) for m in map(_MARKER_RE.match, notebook.code.splitlines()) if m}
    if set(cells) != expected:
        raise NotebookWriteError("the rewrite moved or removed a cell boundary")
    if any(line.strip() for line in preamble):
        if not cells:
            raise NotebookWriteError("code was added outside every cell")
        first = min(cells)
        cells[first] = preamble + cells[first]
    texts = {n: "".join(lines) for n, lines in cells.items()}
    if any(_MASK_RE.match(line.rstrip("\r\n")) or "# workersafe-timed-" in line
           for t in texts.values() for line in physical_lines(t)):
        raise NotebookWriteError("a masked IPython line could not be restored")
    return texts


def _timed_rejoined(lines: list[str]) -> list[str]:
    """A `%time` statement the fix wrapped over lines (`worker_init_fn=` added to the loader
    it makes) joined back into one line, which IPython's line magic takes; left as it is
    (and then refused) when a comment is among its lines or the line joined does not parse."""
    out: list[str] = []
    for line in lines:
        body = line.rstrip("\r\n")
        token = body.find("  # workersafe-timed-")
        if token < 0 or _TIMED_RE.match(body):
            out.append(line)
            continue
        first = next((i for i in range(len(out) - 1, -1, -1)
                      if _TIMED_START.match(out[i]) and "#" not in out[i]), None)
        if first is None or any("#" in part for part in out[first + 1:]) \
                or "#" in body[:token]:
            out.append(line)
            continue
        parts = [out[first].rstrip("\r\n")] + [p.strip() for p in out[first + 1:]]
        joined = " ".join(parts + [body[:token].strip()])
        import ast

        try:
            ast.parse(joined.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            out.append(line)
            continue
        del out[first:]
        out.append(joined + body[token:] + line[len(body):])
    return out


def _unmask(line: str, masked: list[str]) -> str:
    body = line.rstrip("\r\n")
    match = _MASK_RE.match(body)
    if match is None or int(match.group(2)) >= len(masked):
        timed = _TIMED_RE.match(body)
        if timed is None or int(timed.group(3)) >= len(masked):
            return line
        # `%time` again before the statement, as the fix left it (the line as written when
        # it did not change it)
        written = masked[int(timed.group(3))]
        lead, statement = timed.group(1), timed.group(2)
        again = f"{lead}%time{statement}"
        if again == written.rstrip("\r\n"):
            return written
        return again + line[len(body):]
    return masked[int(match.group(2))]


@record(frozen=True)
class _Layout:
    indent: Optional[str]
    separators: tuple[str, str]
    ensure_ascii: bool
    trailing_newline: bool
    bom: bool

    @classmethod
    def detect(cls, raw: bytes, data: dict[str, Any]) -> "_Layout":
        """The json.dumps settings that give back `raw` exactly (nbformat's: 1-space indent,
        non-ASCII kept, a final newline); NotebookWriteError when none does."""
        bom = raw.startswith(b"\xef\xbb\xbf")
        text = raw.decode("utf-8-sig")
        match = re.match(r"\{\r?\n([ \t]+)\"", text)
        indent = match.group(1) if match else None
        separators = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
        ensure_ascii = not any(ord(ch) > 127 for ch in text) and "\\u" in text
        for pair in separators:
            layout = cls(indent, pair, ensure_ascii, text.endswith("\n"), bom)
            if layout.dump(data) == raw:
                return layout
        raise NotebookWriteError(
            "the notebook's JSON layout cannot be reproduced byte for byte (not written by "
            "Jupyter or nbformat?); not rewritten")

    def dump(self, data: dict[str, Any]) -> bytes:
        text = json.dumps(data, indent=self.indent, separators=self.separators,
                          ensure_ascii=self.ensure_ascii)
        if self.trailing_newline:
            text += "\n"
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode("utf-8")


# --- positions ----------------------------------------------------------------------------------

def cell_positions(code: str) -> list[Optional[CellLine]]:
    """Joined line (0-based index) → cell and cell line, from the marker lines alone."""
    out: list[Optional[CellLine]] = []
    cell, line = 0, 0
    for text in physical_lines(code):
        match = _MARKER_RE.match(text.rstrip("\r\n"))
        if match:
            cell, line = int(match.group(1)), 0
            out.append(None)
            continue
        line += 1
        out.append(CellLine(cell, line) if cell else None)
    return out


def in_cells(findings: Sequence["Finding"], texts: Mapping[str, str]) -> list["Finding"]:
    """Findings in notebooks with their lines counted within their cell (and `cell` set);
    findings elsewhere unchanged. `texts`: path → joined code of each notebook."""
    from .records import replace

    from .facts import Span

    maps: dict[str, list[Optional[CellLine]]] = {}
    out = []
    for finding in findings:
        if not is_notebook(finding.path) or finding.path not in texts:
            out.append(finding)
            continue
        if finding.path not in maps:
            maps[finding.path] = cell_positions(texts[finding.path])
        origin = maps[finding.path]
        span = finding.span
        start = _at(origin, span.line)
        if finding.code == UNREADABLE:  # its message may name a line of the joined module
            finding = _error_in_cells(finding, origin)
        if start is None:  # WS001 for the whole notebook
            out.append(finding)
            continue
        end = _at(origin, span.end_line)
        if end is None or end.cell != start.cell:
            end_line, end_col = start.line, span.col
        else:
            end_line, end_col = end.line, span.end_col
        out.append(replace(finding, span=Span(start.line, span.col, end_line, end_col),
                           cell=start.cell))
    return [_message_in_cells(f, texts, maps) for f in out]


def _error_in_cells(finding: "Finding", origin: list[Optional[CellLine]]) -> "Finding":
    """`syntax error: ... (line 12, column 15)` → `... (cell 3, line 4, column 15)`."""
    from .records import replace

    def cell_of(match: "re.Match[str]") -> str:
        place = _at(origin, int(match.group(1)))
        return match.group(0) if place is None else f"(cell {place.cell}, line {place.line}"

    message = re.sub(r"\(line (\d+)", cell_of, finding.message)
    return finding if message == finding.message else replace(finding, message=message)


def _message_in_cells(finding: "Finding", texts: Mapping[str, str],
                      maps: dict[str, list[Optional[CellLine]]]) -> "Finding":
    """`nb.ipynb:18` in a message (where the DataLoader is) → `nb.ipynb:cell 4:1`."""
    from .records import replace

    message = finding.message
    for path, code in texts.items():
        # a message names a file by its path, or by its name beside the finding's file
        for spelling in dict.fromkeys((path, os.path.basename(path))):
            if f"{spelling}:" not in message:
                continue

            def cell_of(match: "re.Match[str]") -> str:
                origin = maps.setdefault(path, cell_positions(code))  # noqa: B023 - used at once
                place = _at(origin, int(match.group(2)))
                return match.group(0) if place is None else f"{match.group(1)}{place}"

            message = re.sub(r"(?<![\w./-])(" + re.escape(spelling) + r":)(\d+)", cell_of,
                             message)
    return finding if message == finding.message else replace(finding, message=message)


def _at(origin: list[Optional[CellLine]], line: int) -> Optional[CellLine]:
    return origin[line - 1] if 1 <= line <= len(origin) else None
