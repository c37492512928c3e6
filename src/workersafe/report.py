"""Output formats: text (flake8-style), json, sarif (2.1.0), github (workflow annotations)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import __version__
from .findings import Finding
from .ruletable import RULES, level_of

DOCS_URL = "https://github.com/workersafe/workersafe/blob/main/src/workersafe/docs/{code}.md"


def text(findings: Sequence[Finding]) -> str:
    return "".join(f"{_where(f)}:{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)


def _where(finding: Finding) -> str:
    """The path, and in a notebook the cell (as ruff shows it: `nb.ipynb:cell 3:2:5:`)."""
    return finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"


def as_json(findings: Sequence[Finding]) -> str:
    rows = [
        {"path": f.path, "line": f.line, "col": f.col + 1, "end_line": f.span.end_line,
         "end_col": f.span.end_col + 1, "code": f.code, "message": f.message,
         "fixable": f.fixable, "cell": f.cell}
        for f in findings
    ]
    import json  # here, as in `sarif`: the text format needs neither it nor urllib

    return json.dumps(rows, indent=2) + "\n"


def github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands, escaped as actions/toolkit's `command.ts` does."""

    def escape(value: str) -> str:
        return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def prop(value: str) -> str:
        return escape(value).replace(":", "%3A").replace(",", "%2C")

    return "".join(
        f"::{level_of(f.code)} file={prop(f.path)},line={f.line},col={f.col + 1},"
        f"endLine={f.span.end_line},endColumn={f.span.end_col + 1},"
        f"title={prop(f.code)}::{escape(_cell_prefix(f) + f.code + ' ' + f.message)}\n"
        for f in findings
    )


def _cell_prefix(finding: Finding) -> str:
    return "" if finding.cell is None else f"cell {finding.cell}: "


def sarif(findings: Sequence[Finding]) -> str:
    from .docs import rule_docs

    docs = rule_docs()
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": docs[rule.code].summary},
            "help": {"text": docs[rule.code].text, "markdown": docs[rule.code].text},
            "helpUri": DOCS_URL.format(code=rule.code),
            "defaultConfiguration": {"level": rule.level,
                                     **({} if rule.default_on else {"enabled": False})},
        }
        for rule in sorted(RULES, key=lambda r: r.code)
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = [
        {
            "ruleId": f.code,
            **({"ruleIndex": index[f.code]} if f.code in index else {}),
            "level": level_of(f.code),
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    "region": {"startLine": f.line, "startColumn": f.col + 1,
                               "endLine": f.span.end_line, "endColumn": f.span.end_col + 1},
                },
                **_sarif_cell(f),
            }],
            **({"properties": {"cell": f.cell}} if f.cell is not None else {}),
        }
        for f in findings
    ]
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "workersafe", "version": __version__,
                                "informationUri": DOCS_URL.format(code="README").rsplit("/", 1)[0],
                                "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    import json

    return json.dumps(log, indent=2) + "\n"


def _sarif_cell(finding: Finding) -> dict[str, Any]:
    """A notebook's finding: the region counts lines within the cell this names."""
    if finding.cell is None:
        return {}
    return {"logicalLocations": [{"name": f"cell {finding.cell}", "kind": "notebookCell"}]}


def _uri(path: str) -> str:
    """A relative (or absolute-path) URI reference: `/` separators, percent-encoded (a space or
    `#` in a file name would otherwise make an invalid URI)."""
    from urllib.parse import quote

    return quote(path.replace("\\", "/"), safe="/")


FORMATS: dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": text, "json": as_json, "sarif": sarif, "github": github,
}
