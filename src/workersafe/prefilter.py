"""The cheapest test that is still sound: can this text hold a fact at all?

A handle can only be created where its module is named (`import requests`, `from h5py import
File as F`) and its constructor is named; a dataset or a loader only where `Dataset`,
`DataLoader`, a framework's loader-building name (`DataBunch`, `from_dsets`: see
`frameworks.FRAMEWORK_LOADERS`) or a configured base is named, as the end of an
identifier. Files failing both are never parsed."""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from typing import Callable, Iterable, Iterator, Optional

from .frameworks import framework_loader_words
from .records import record
from .registry import Registry

_TORCH_WORDS = ("Dataset", "DataLoader", "DataPipe")
DATASET_WORDS = _TORCH_WORDS + tuple(w for w in framework_loader_words() if w not in _TORCH_WORDS)


@record(frozen=True)
class Prefilter:
    registry: Registry
    extra_dataset_words: tuple[str, ...] = ()

    @cached_property
    def _pairs(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        by_root: dict[str, set[str]] = {}
        for root, short in self.registry.prefilter_pairs():
            by_root.setdefault(root, set()).add(short)
        return tuple((root, tuple(sorted(shorts))) for root, shorts in sorted(by_root.items()))

    @cached_property
    def _shorts_by_root(self) -> dict[str, tuple[str, ...]]:
        return dict(self._pairs)

    @cached_property
    def dataset_words(self) -> tuple[str, ...]:
        """The words whose mention (ending an identifier) may make a dataset or a loader."""
        return DATASET_WORDS + self.extra_dataset_words

    def mentions_handle(self, text: str, imports: Optional[ImportLines] = None) -> bool:
        """The file imports a handle module and names one of its constructors. `imports`:
        the text's `import_lines`, when the caller has them."""
        if imports is None:
            imports = import_lines(text, names=False)
        roots = {name.split(".", 1)[0] for level, name, _ in imports if not level and name}
        roots |= _reexported_names(text)  # one scan for every root, not one per root
        by_root = self._shorts_by_root
        named = [short for root in roots if root in by_root
                 for short in by_root[root] if short in text]
        if not named:
            return False
        if any(_named_in_code(text, short, bare=False) for short in named):
            return True  # (most files: the imports' list is not needed)
        listed = _from_imported(text)
        return any(_named_in_code(text, short, bare=True) for short in named
                   if short in listed or "*" in listed)

    @cached_property
    def _words_without_data(self) -> tuple[str, ...]:
        return tuple(w for w in self.dataset_words if "Data" not in w)

    @cached_property
    def _dataset_word_ends(self) -> "re.Pattern[str]":
        return re.compile("(?:" + "|".join(map(re.escape, self.dataset_words)) + r")(?!\w)")

    @cached_property
    def _data_word_ends(self) -> "Optional[re.Pattern[str]]":
        """What `_dataset_word_ends` finds of the words holding "Data", and more: "Data" and
        what follows it in one of them (`DenseDataLoader`: `DataLoader`), ending an
        identifier. A pattern starting with a literal is searched for several times faster
        than an alternation of words (a scan per word: more still)."""
        tails = sorted({w[w.index("Data") + 4:] for w in self.dataset_words if "Data" in w},
                       key=lambda t: (-len(t), t))
        if not tails:
            return None
        return re.compile("Data(?:" + "|".join(map(re.escape, tails)) + r")(?!\w)")

    def mentions_dataset(self, text: str) -> bool:
        """A dataset word that ends an identifier (`IterableDataset`, `data.DataLoader(`): code
        can only name torch's classes (or a configured base) so. Prose such as "DataLoaders"
        or "Datasets" in a docstring does not count, nor any word in the module's docstring
        ("The LJ Speech Dataset is ...") or in a comment (`# as DataLoader workers do`),
        unless the file reaches a worker's dataset (`get_worker_info().dataset.env = ...`: a
        worker_init_fn names no dataset word in code; its docstring's and comments' still
        count, as they did before they were skipped)."""
        if self._data_word_ends is not None and "Data" in text \
                and _names_in_code(text, self._data_word_search):
            return True  # (most texts naming one: the words without "Data" need no scan)
        if not any(w in text for w in self._words_without_data):
            return False
        return _names_in_code(text, _span_of(self._dataset_word_ends))

    def _data_word_search(self, text: str, start: int) -> Optional[tuple[int, int]]:
        """`_dataset_word_ends`' next match for words holding "Data", found by the faster
        `_data_word_ends` and checked: one of the words ends there (`DenseDataLoader` when
        "DataLoader" alone is no word). Its start is the longest word's, in the identifier
        the pattern's match would start in (a position the callers test as the same)."""
        pattern = self._data_word_ends
        assert pattern is not None
        found = pattern.search(text, start)
        while found is not None:
            end = found.end()
            lengths = [len(w) for w in self._data_words if end - len(w) >= start
                       and text.startswith(w, end - len(w))]
            if lengths:
                return end - max(lengths), end
            found = pattern.search(text, end)
        return None

    @cached_property
    def _data_words(self) -> tuple[str, ...]:
        return tuple(w for w in self.dataset_words if "Data" in w)

    def single_file_candidate(self, text: str) -> bool:
        """A finding needs a handle creation and a dataset or loader in the same file."""
        return self.mentions_dataset(text) and self.mentions_handle(text)


# `from .compat import lmdb`: a library imported by its own name from a module of the project
# (re-exported there; the analysis reads it as the library). Group 1: the names listed.
_REEXPORT = re.compile(r"from\s+\.+\w[\w.]*\s+import\s+\(?([\w\s,]*)")


def _names_in_code(text: str, search: "Callable[[str, int], Optional[tuple[int, int]]]"
                   ) -> bool:
    """Whether `search` (the next word from a position: where it starts, where it ends)
    finds a word outside the module's docstring and the comments (anywhere, in a text
    reaching a worker's dataset: `Prefilter.mentions_dataset`)."""
    found = search(text, 0)
    if found is None or _WORKER_INFO in text:
        return found is not None
    prose = _docstring_end(text)
    if found[0] < prose:
        found = search(text, prose)
    while found is not None and _in_comment(text, found[0]):
        found = search(text, found[1])
    return found is not None


def _span_of(pattern: "re.Pattern[str]") -> "Callable[[str, int], Optional[tuple[int, int]]]":
    def search(text: str, start: int) -> Optional[tuple[int, int]]:
        found = pattern.search(text, start)
        return None if found is None else found.span()
    return search


def _reexported_names(text: str) -> set[str]:
    """The words listed by the relative `from` imports of `text` (over lines, in parentheses)."""
    if "from" not in text:
        return set()
    return {word for match in _REEXPORT.finditer(text) for word in _WORD.findall(match.group(1))}


# `importlib.import_module("h5py")`, `__import__("lmdb")`, `optional_import("lmdb")`: a call
# whose name contains "import" with a module name as a string literal imports that module.
_IMPORT_CALL = re.compile(r"""\w*import\w*\(\s*[rRuU]?["']([A-Za-z_][\w.]*)["']""")


def imported_roots(text: str) -> set[str]:
    """Top-level modules named by absolute import statements or import calls."""
    return {name.split(".", 1)[0] for level, name in import_statements(text) if not level and name}


def import_statements(text: str) -> list[tuple[int, str]]:
    """(level, module) named by each import statement or import call, found without a regex
    pass over the whole text: `str.find` jumps from one `import` to the next. `import a.b as c,
    d` gives (0, "a.b") and (0, "d"); `from ..x import y` gives (2, "x"); `from . import y`
    (1, ""); `import_module("h5py")` (0, "h5py")."""
    return [(level, name) for level, name, _ in import_lines(text, names=False)]


ImportLines = list[tuple[int, str, Optional[tuple[str, ...]]]]


_WORKER_INFO = "get_worker_info"  # (`Prefilter.mentions_dataset`)
# blank and comment lines, then a triple quote opening the module's docstring
_DOCSTRING_START = r"\A(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*[rRuU]{0,2}(\"\"\"|\'\'\')"


def _docstring_end(text: str) -> int:
    """Where the module's docstring (a triple-quoted string first in the file) ends, or 0: a
    dataset word there is prose. The first closing quotes after the opening end it (an
    escaped quote before two more ends it earlier: then less is skipped)."""
    opening = _docstring_start().match(text)
    if opening is None:
        return 0
    end = text.find(opening.group(1), opening.end())
    return 0 if end == -1 else end + 3


@lru_cache(maxsize=1)
def _docstring_start() -> "re.Pattern[str]":
    return re.compile(_DOCSTRING_START)


def _in_comment(text: str, position: int) -> bool:
    """Whether `position` is in a comment: a `#` before it on its line, with no quote before
    that `#` (which might open a string holding it: then the word counts)."""
    start = text.rfind("\n", 0, position) + 1
    hash_at = text.find("#", start, position)
    if hash_at == -1:
        return False
    before = text[start:hash_at]
    return '"' not in before and "'" not in before


# (a physical line holding "import", whether the names were asked for) → what it imports:
# most import lines repeat across a tree's files (`import torch`; on pytorch_geometric 9,143
# lines, 2,703 distinct). A list opened and not closed on its line is read below it, so its
# line is not kept. Bounded: emptied when full.
_LINES: dict[tuple[str, bool], tuple[tuple[int, str, Optional[tuple[str, ...]]], ...]] = {}
_LINES_KEPT = 65536


def import_lines(text: str, names: bool = True) -> ImportLines:
    """`import_statements` with the names each `from` import lists (which binds only those,
    where `import a.b` binds `a`, and through it what `a` holds): None for an `import` (or an
    import call), () when they are not all on the line (`from a import (`) or not asked for."""
    found: ImportLines = []
    position = text.find("import")
    while position != -1:
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        if end == -1:
            end = len(text)
        line_text = text[start:end]
        known = _LINES.get((line_text, names))
        if known is None:
            here: ImportLines = []
            end, complete = _line_imports(text, line_text, end, names, here)
            if complete:
                if len(_LINES) >= _LINES_KEPT:
                    _LINES.clear()
                _LINES[line_text, names] = tuple(here)
            found += here
        else:
            found += known
        position = text.find("import", end)
    return found


def _line_imports(text: str, line_text: str, end: int, names: bool, found: ImportLines
                  ) -> tuple[int, bool]:
    """Add what the line (ending at `end` in `text`) imports to `found`; where the last line
    read ends (below it for a list going on there), and whether the line alone said it all."""
    add = found.append
    complete = True
    for statement in line_text.split(";") if ";" in line_text else (line_text,):
        line = statement.strip()
        if line.startswith("import") and line[6:7].isspace():
            for part in line[7:].split(","):
                words = part.split(None, 1)
                if words:
                    add((0, words[0], None))
        elif line.startswith("from") and line[4:5].isspace():
            words = line[5:].split(None, 1)
            if words:
                level, module = _from_spec(words[0])
                listed = _imported_names(words[1:]) if names else ()
                if not listed and names and "(" in line and ")" not in line:
                    listed, end = _listed_below(text, words[1:], end)
                    complete = False
                add((level, module, listed))
    if "(" in line_text:
        found.extend((0, m.group(1), None) for m in _IMPORT_CALL.finditer(line_text))
    return end, complete


def _imported_names(rest: list[str]) -> tuple[str, ...]:
    """The names of `import a, b as c` ending a `from` line; () unless all are there."""
    if not rest or not rest[0].startswith("import") or not rest[0][6:7].isspace():
        return ()
    listed = rest[0][7:]
    if "#" in listed:
        listed = listed.split("#", 1)[0]
    listed = listed.strip()
    if listed.startswith("("):
        if ")" not in listed:
            return ()
        listed = listed[1:listed.index(")")]
    if listed.endswith("\\"):
        return ()
    names: list[str] = []
    for part in listed.split(","):
        words = part.split(None, 1)
        if words:
            name = words[0]
            if not (name.isidentifier() or name == "*"):
                return ()
            names.append(name)
    return tuple(names)


def _listed_below(text: str, rest: list[str], end: int) -> tuple[tuple[str, ...], int]:
    """The names of a parenthesized list going on below its `from` line (black writes long
    lists so), and where the list ends; () and `end` unless each name is an identifier and
    the list closes within a few hundred lines."""
    if not rest or not rest[0].startswith("import") or not rest[0][6:7].isspace():
        return (), end
    opened = rest[0][7:].split("#", 1)[0].strip()
    if not opened.startswith("("):
        return (), end
    parts = [opened[1:]]
    position = end
    for _ in range(400):
        if position >= len(text):
            return (), end
        stop = text.find("\n", position + 1)
        if stop == -1:
            stop = len(text)
        line = text[position + 1:stop].split("#", 1)[0]
        position = stop
        if ")" in line:
            parts.append(line[:line.index(")")])
            break
        parts.append(line)
    else:
        return (), end
    names = [part.split(None, 1) for part in " ".join(parts).split(",")]
    listed = tuple(words[0] for words in names if words)
    if not listed or any(not (name.isidentifier() or name == "*") for name in listed) \
            or any(len(words) > 1 and not words[1].startswith("as ") for words in names):
        return (), end
    return listed, position


def _from_spec(spec: str) -> tuple[int, str]:
    if not spec.startswith("."):
        return 0, spec
    name = spec.lstrip(".")
    level = len(spec) - len(name)
    if level and (name == "import" or name.startswith("import(")):  # `from .import x`
        name = ""
    return level, name


_CLASS = r"class[ \t]+(\w+)[ \t]*\(([^)]*)\)"  # (compiled by `re` when used: not by the plugin)


def class_bases(text: str) -> list[tuple[str, list[str]]]:
    """(class name, last identifiers of its bases) for each `class X(...)`: a cheap class graph."""
    out = []
    for match in re.finditer(_CLASS, text):
        bases = [b.split("[", 1)[0].strip().rsplit(".", 1)[-1] for b in match.group(2).split(",")]
        out.append((match.group(1), [b for b in bases if b.isidentifier()]))
    return out


def words_pattern(names: Iterable[str]) -> "WordMatcher | None":
    """Finds any of `names` as a whole word (`\\bname\\b`) in a text; None for no names."""
    return _words_pattern(frozenset(names))


@lru_cache(maxsize=16)  # the link closure asks again with the same names on each round
def _words_pattern(names: frozenset[str]) -> "WordMatcher | None":
    return WordMatcher(names) if names else None


_FEW = 8


class WordMatcher:
    """`\\b(?:a|b|...)\\b` for many names, without the regex: an alternation of a thousand
    class names makes `re` try each at every position (seconds on a large tree). A text's
    words are collected once (in C) and intersected with the names."""

    def __init__(self, names: frozenset[str]) -> None:
        self.words = frozenset(n for n in names if _WORD.fullmatch(n))
        self.encoded = frozenset(n.encode() for n in self.words)  # as `_words_of` holds them
        others = sorted(names - self.words, key=lambda n: (-len(n), n))
        self.others = re.compile(r"\b(?:" + "|".join(map(re.escape, others)) + r")\b") \
            if others else None
        # a few names: each looked for as a substring first (a scan in C per name), the
        # text's words collected only when one is there (most texts name none)
        self.few = tuple(sorted(self.words)) if len(names) <= _FEW else ()
        # text → `search`'s answer: the closure's rounds ask the same matcher (`_words_pattern`
        # keeps it) about the same texts again, each a scan per name when few (on
        # mosaicml/streaming 481 questions about 82 texts); forgotten with the words
        self._searched: dict[str, Optional[str]] = {}

    def _absent(self, text: str) -> bool:
        """None of the names is in `text` (a cheap test for a few names; False: maybe)."""
        return bool(self.few) and text not in _WORDS and not any(name in text for name in self.few)

    def _found_words(self, text: str) -> set[str]:
        return {w.decode() for w in self.encoded & _words_of(text)}

    def search(self, text: str) -> Optional[str]:
        """A name found in `text`, or None."""
        try:
            return self._searched[text]
        except KeyError:
            pass
        if len(self._searched) >= _WORDS_KEPT:
            self._searched.clear()
        found = self._searched[text] = self._search(text)
        return found

    def _search(self, text: str) -> Optional[str]:
        if self._absent(text):
            return None
        found = self._found_words(text)
        if found:
            return min(found)
        match = self.others.search(text) if self.others is not None else None
        return match.group() if match else None

    def found(self, text: str) -> set[str]:
        """Every name found in `text`."""
        if self._absent(text):
            return set()
        found = self._found_words(text)
        if self.others is not None:
            found.update(self.others.findall(text))
        return found


_WORD = re.compile(r"\w+")


def is_word_char(char: str) -> bool:
    r"""`re`'s `\w` for one character of a text (`""`: none, before the start or past the end)."""
    return char.isalnum() or char == "_"


def word_starts(text: str, name: str) -> Iterator[int]:
    r"""Where `name` starts in `text` as the start of a word (`(?<!\w)name`): `str.find` jumps
    from one occurrence to the next, a scan in C, where a regex beginning with a look-behind
    tries every position of the text in turn (twenty times slower on a large tree)."""
    start = text.find(name)
    while start != -1:
        if not start or not is_word_char(text[start - 1]):
            yield start
        start = text.find(name, start + 1)


def _named_in_code(text: str, name: str, bare: bool) -> bool:
    """`name` (a handle's constructor) where code can name it: a whole word, spelled on its
    module (`fsspec.filesystem`: a dot before it) or, when a `from` import lists it (`bare`),
    alone; on a line that is not a comment nor a doctest example (`>>> sqlite3.connect(p)`,
    which only a string can hold). Prose in a docstring ("saved to a filesystem") is neither."""
    for start in whole_words(text, name):
        if not bare:
            before = start - 1
            while before >= 0 and text[before] in " \t\r\n\\":
                before -= 1
            if before < 0 or text[before] != ".":
                continue
        line = text[text.rfind("\n", 0, start) + 1:start].lstrip()
        if not line.startswith(("#", ">>>")):
            return True
    return False


# `from a.b import`, then what it lists: in parentheses (over lines), or to the line's end
# (a literal first: `re` then jumps to each "from" rather than trying every position)
_FROM_IMPORT = r"from\s+\.*[\w.]*\s+import\b[ \t]*(\()?"


def _from_imported(text: str) -> frozenset[str]:
    """Every word the `from` imports of `text` list (their aliases too, and `*` for a star
    import), comments left out: a handle's constructor named alone (`File(path)`) must be
    one of them. Found in prose too (more words: never fewer)."""
    words: set[str] = set()
    for match in _from_import_pattern().finditer(text):
        if match.start() and is_word_char(text[match.start() - 1]):
            continue  # `datafrom x import`: not a `from`
        start = match.end()
        if match.group(1):
            end = text.find(")", start)
        else:
            end = text.find("\n", start)
            while end != -1 and text[start:end].rstrip().endswith("\\"):
                end = text.find("\n", end + 1)
        listed = text[start:len(text) if end == -1 else end]
        if "#" in listed:
            listed = "\n".join(line.split("#", 1)[0] for line in listed.split("\n"))
        words.update(_WORD.findall(listed))
        if "*" in listed:
            words.add("*")
    return frozenset(words)


@lru_cache(maxsize=1)
def _from_import_pattern() -> "re.Pattern[str]":
    return re.compile(_FROM_IMPORT)


def whole_words(text: str, name: str) -> Iterator[int]:
    r"""Where `name` is in `text` as a whole word (`(?<!\w)name(?!\w)`)."""
    end = len(name)
    return (start for start in word_starts(text, name)
            if not is_word_char(text[start + end:start + end + 1]))


def spells_word(text: str, name: str) -> bool:
    r"""Whether `name` is in `text` as a whole word."""
    return any(True for _ in whole_words(text, name))


# bytes other than ASCII letters, digits and `_` → a space: an ASCII text's `\w+` words are
# then `bytes.split()`'s, several times faster than `_WORD.findall`
# (tables made by bytes methods, in C: a loop over the 256 bytes cost ~0.1 ms of each import)
_WORD_BYTES = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


def _to_space(others: bytes) -> bytes:
    """The translation table sending the bytes of `others` to a space, every other to itself."""
    return bytes.maketrans(others, b" " * len(others))


_NOT_WORD = _to_space(bytes(range(256)).translate(None, _WORD_BYTES))
# the same, bytes of a multi-byte UTF-8 character kept: a token of ASCII bytes alone is then
# bounded by ASCII bytes that are no word's, a `\w+` word as it is (the others are split by
# `_WORD`: a character beyond ASCII may or may not be a word's)
_NOT_ASCII_WORD = _to_space(bytes(range(128)).translate(None, _WORD_BYTES))
# text → its `\w+` words, UTF-8 encoded: the closure's rounds ask for the same texts again;
# emptied after each run (`forget_words`) and when it grows past `_WORDS_KEPT`
_WORDS: dict[str, frozenset[bytes]] = {}
_WORDS_KEPT = 16384


def forget_words() -> None:
    """Let the words of the texts of a run go (~15 MB for a tree of 1,300 files), and the
    matchers' answers about those texts."""
    _WORDS.clear()
    _words_pattern.cache_clear()


def _words_of(text: str) -> frozenset[bytes]:
    found = _WORDS.get(text)
    if found is None:
        if len(_WORDS) >= _WORDS_KEPT:
            _WORDS.clear()
        if text.isascii():
            found = frozenset(text.encode().translate(_NOT_WORD).split())
        else:
            found = _mixed_words(text)
        _WORDS[text] = found
    return found


def _mixed_words(text: str) -> frozenset[bytes]:
    r"""The `\w+` words of a text holding characters beyond ASCII, UTF-8 encoded: the tokens
    of ASCII bytes alone as they are; `_WORD` splits only the others (identifiers and prose
    in other scripts are a small part of most such texts), each distinct token once."""
    tokens = set(text.encode("utf-8", "surrogatepass").translate(_NOT_ASCII_WORD).split())
    others = [token for token in tokens if not token.isascii()]
    tokens.difference_update(others)
    tokens.update(w.encode("utf-8", "surrogatepass") for token in others
                  for w in _WORD.findall(token.decode("utf-8", "surrogatepass")))
    return frozenset(tokens)
