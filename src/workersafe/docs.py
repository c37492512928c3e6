"""Rule documentation, one Markdown file per code in `workersafe/docs/` (the users' text; the
rule table, `ruletable.py`, holds what programs read)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from .records import record


@record(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    text: str


@lru_cache(maxsize=1)
def rule_docs() -> dict[str, RuleDoc]:
    docs: dict[str, RuleDoc] = {}
    folder = resources.files("workersafe") / "docs"
    for entry in folder.iterdir():
        match = re.fullmatch(r"(WS\d{3})\.md", entry.name)
        if match:
            docs[match.group(1)] = _parse(match.group(1), entry.read_text(encoding="utf-8"))
    return docs


def _parse(code: str, text: str) -> RuleDoc:
    title = text.splitlines()[0] if text else ""
    name = title.split(":", 1)[1].strip() if ":" in title else code
    summary = ""
    section = re.search(r"## What it does\s*\n(.+?)(\n\n|\n##|$)", text, re.DOTALL)
    if section:
        summary = " ".join(section.group(1).split())
    return RuleDoc(code, name, summary, text)
