"""The cheapest test that is still sound: can this text hold a fact at all?

A handle can only be created where its module is named (`import requests`, `from h5py import
File as F`) and its constructor is named; a dataset or a loader only where `Dataset`,
`DataLoader` or a configured base is named, as the end of an identifier. Files failing both
are never parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterable

from .registry import Registry

DATASET_WORDS = ("Dataset", "DataLoader", "DataPipe")


@dataclass(frozen=True)
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
    def _dataset_words(self) -> tuple[str, ...]:
        return DATASET_WORDS + self.extra_dataset_words

    def mentions_handle(self, text: str) -> bool:
        """The file imports a handle module and names one of its constructors."""
        roots = imported_roots(text)
        return any(root in roots and any(short in text for short in shorts)
                   for root, shorts in self._pairs)

    @cached_property
    def _dataset_word_ends(self) -> "re.Pattern[str]":
        return re.compile("(?:" + "|".join(map(re.escape, self._dataset_words)) + r")(?!\w)")

    def mentions_dataset(self, text: str) -> bool:
        """A dataset word that ends an identifier (`IterableDataset`, `data.DataLoader(`): code
        can only name torch's classes (or a configured base) so. Prose such as "DataLoaders"
        or "Datasets" in a docstring does not count."""
        if "Data" not in text and not self.extra_dataset_words:
            return False
        return any(word in text for word in self._dataset_words) \
            and self._dataset_word_ends.search(text) is not None

    def single_file_candidate(self, text: str) -> bool:
        """A finding needs a handle creation and a dataset or loader in the same file."""
        return self.mentions_dataset(text) and self.mentions_handle(text)


# `importlib.import_module("h5py")`, `__import__("lmdb")`, `optional_import("lmdb")`: a call
# whose name contains "import" with a module name as a string literal imports that module.
_IMPORT_CALL = re.compile(r"""\w*import\w*\(\s*[rRuU]?["']([A-Za-z_][\w.]*)["']""")


def imported_roots(text: str) -> set[str]:
    """Top-level modules named by import statements (absolute ones) or import calls, found
    without a regex pass over the whole text: `str.find` jumps from one `import` to the next."""
    roots: set[str] = set()
    position = text.find("import")
    while position != -1:
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        if end == -1:
            end = len(text)
        line = text[start:end]
        for statement in line.split(";"):
            _add_roots(statement.strip(), roots)
        if "(" in line:
            roots.update(m.group(1).split(".", 1)[0] for m in _IMPORT_CALL.finditer(line))
        position = text.find("import", end)
    return roots


def _add_roots(line: str, roots: set[str]) -> None:
    if line.startswith("import "):
        for part in line[7:].split(","):
            name = part.strip().split(" ", 1)[0]
            if name:
                roots.add(name.split(".", 1)[0])
    elif line.startswith("from "):
        name = line[5:].lstrip().split(" ", 1)[0]
        if name and not name.startswith("."):
            roots.add(name.split(".", 1)[0])


_CLASS = re.compile(r"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")


def class_bases(text: str) -> list[tuple[str, list[str]]]:
    """(class name, last identifiers of its bases) for each `class X(...)`: a cheap class graph."""
    out = []
    for match in _CLASS.finditer(text):
        bases = [b.split("[", 1)[0].strip().rsplit(".", 1)[-1] for b in match.group(2).split(",")]
        out.append((match.group(1), [b for b in bases if b.isidentifier()]))
    return out


def words_pattern(names: Iterable[str]) -> "re.Pattern[str] | None":
    return _words_pattern(frozenset(names))


@lru_cache(maxsize=16)  # the link closure asks again with the same names on each round
def _words_pattern(names: frozenset[str]) -> "re.Pattern[str] | None":
    ordered = sorted(names, key=lambda n: (-len(n), n))
    if not ordered:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, ordered)) + r")\b")
