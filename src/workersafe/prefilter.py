"""The cheapest test that is still sound: can this text hold a fact at all?

A handle can only be created where its module is named (`import requests`, `from h5py import
File as F`) and its constructor is named; a dataset or a loader only where `Dataset`,
`DataLoader` or a configured base is named. Files failing both are never parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
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
        return any(root in text and any(short in text for short in shorts)
                   for root, shorts in self._pairs)

    def mentions_dataset(self, text: str) -> bool:
        return any(word in text for word in self._dataset_words)

    def single_file_candidate(self, text: str) -> bool:
        """A finding needs a handle creation and a dataset or loader in the same file."""
        return self.mentions_dataset(text) and self.mentions_handle(text)


def words_pattern(names: Iterable[str]) -> "re.Pattern[str] | None":
    names = sorted(set(names), key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
