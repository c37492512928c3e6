"""Output formats as their consumers read them: SARIF 2.1.0 (validated against the OASIS schema,
vendored in tests/data), GitHub workflow commands (parsed as the runner parses them), and the
documented, stable JSON rows (docs/output-formats.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from ecosystem_util import SINGLE_FILE, copy_example, workersafe
from workersafe.docs import rule_docs
from workersafe.facts import Span
from workersafe.findings import Finding
from workersafe.report import github, sarif

# mentions a handle and a Dataset (so the prefilter lets it through), then fails to parse: WS001
BROKEN = ("import requests\nfrom torch.utils.data import Dataset\n\n"
          "SESSION = requests.Session()\n\ndef (:\n")
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
jsonschema = pytest.importorskip("jsonschema")


def validate_sarif(log: dict) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


# RFC 3986 URI-reference characters (unreserved, reserved, percent escapes)
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def sarif_of(tmp_path: Path, *args: str) -> tuple[dict, str]:
    proc = workersafe("check", "--no-cache", "--format", "sarif", *args, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    text_proc = workersafe("check", "--no-cache", *args, cwd=tmp_path)
    return json.loads(proc.stdout), text_proc.stdout


def test_sarif_of_the_example_is_valid_and_complete(tmp_path: Path) -> None:
    copy_example(tmp_path)
    log, text = sarif_of(tmp_path)
    validate_sarif(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "workersafe"
    rules = driver["rules"]
    assert {r["id"] for r in rules} == set(rule_docs())
    for rule in rules:
        assert rule["shortDescription"]["text"].endswith((".", "!", "?"))
        assert "## What it does" in rule["help"]["text"]
        assert rule["help"]["markdown"] == rule["help"]["text"]
        uri = urlparse(rule["helpUri"])
        assert uri.scheme == "https" and uri.netloc and uri.path.endswith(f"{rule['id']}.md")

    (result,) = run["results"]
    assert result["ruleId"] == "WS101"
    assert rules[result["ruleIndex"]]["id"] == "WS101"
    assert result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "data.py"
    region = location["region"]
    # the same position as the text output (1-based line and column)
    line, col = map(int, text.split(":", 3)[1:3])
    assert (region["startLine"], region["startColumn"]) == (line, col) == (12, 24)
    assert (region["endLine"], region["endColumn"]) == (12, 42)  # just past `Session()`
    assert "train.py:36" in result["message"]["text"]
    for fix in result.get("fixes", []):  # where the fixer provides them (validated above)
        assert fix["artifactChanges"]


def test_sarif_without_findings_is_valid(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    log, _ = sarif_of(tmp_path)
    validate_sarif(log)
    assert log["runs"][0]["results"] == []


def test_sarif_uri_of_awkward_file_names_is_a_valid_uri_reference(tmp_path: Path) -> None:
    folder = tmp_path / "my data #1"
    folder.mkdir()
    (folder / "100% remote.py").write_text(SINGLE_FILE, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    log, _ = sarif_of(tmp_path)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    uris = {r["ruleId"]: r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in results}
    for uri in uris.values():
        assert _URI_CHARS.match(uri), uri
    assert unquote(uris["WS101"]) == "my data #1/100% remote.py"
    assert uris["WS101"] == "my%20data%20%231/100%25%20remote.py"
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels == {"WS101": "error", "WS001": "warning"}


def test_sarif_in_process_validates_for_every_code() -> None:
    findings = [Finding(f"pkg/m{i}.py", Span(i + 1, 4, i + 1, 20), code, f"message {code}")
                for i, code in enumerate(sorted(rule_docs()))]
    validate_sarif(json.loads(sarif(findings)))


# --- GitHub workflow commands ---------------------------------------------------------------

_COMMAND = re.compile(r"^::(?P<name>[a-z]+) (?P<props>[^:]*)::(?P<message>.*)$")


def parse_github(line: str) -> tuple[str, dict[str, str], str]:
    """Parse one line as the Actions runner does (ActionCommand.TryParseV2): properties split
    on `,` and the first `=`, then unescaped; the message unescaped separately."""
    match = _COMMAND.match(line)
    assert match, f"not a workflow command: {line!r}"

    def unescape_data(value: str) -> str:
        return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")

    def unescape_property(value: str) -> str:
        for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","),
                             ("%25", "%")):
            value = value.replace(escaped, raw)
        return value

    props = {}
    for pair in match["props"].split(","):
        key, _, value = pair.partition("=")
        props[key] = unescape_property(value)
    return match["name"], props, unescape_data(match["message"])


def test_github_annotations_of_the_example(tmp_path: Path) -> None:
    copy_example(tmp_path)
    proc = workersafe("check", "--no-cache", "--format", "github", cwd=tmp_path)
    assert proc.returncode == 1
    (line,) = proc.stdout.splitlines()
    name, props, message = parse_github(line)
    assert name == "error"
    assert props == {"file": "data.py", "line": "12", "col": "24", "endLine": "12",
                     "endColumn": "42", "title": "WS101"}
    assert message.startswith("WS101 requests.Session created in RemoteImages.__init__")


def test_github_escapes_properties_and_message() -> None:
    path = "odd,dir:x/100%/a.py"
    message = "first line\r\nsecond: 100%, done"
    out = github([Finding(path, Span(3, 0, 3, 5), "WS101", message)])
    assert out.endswith("\n") and out.count("\n") == 1
    line = out.rstrip("\n")
    assert "\r" not in line and "\n" not in line
    assert "file=odd%2Cdir%3Ax/100%25/a.py," in line
    assert line.endswith("::WS101 first line%0D%0Asecond: 100%25, done")
    name, props, parsed = parse_github(line)
    assert (name, props["file"], props["line"], props["col"]) == ("error", path, "3", "1")
    assert parsed == "WS101 " + message


def test_github_unreadable_file_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    proc = workersafe("check", "--no-cache", "--format", "github", cwd=tmp_path)
    name, props, message = parse_github(proc.stdout.strip())
    assert (name, props["title"], props["file"]) == ("warning", "WS001", "broken.py")
    assert message.startswith("WS001 ")


# --- JSON -----------------------------------------------------------------------------------

JSON_FIELDS = {"path": str, "line": int, "col": int, "end_line": int, "end_col": int,
               "code": str, "message": str, "fixable": bool,
               "cell": type(None)}  # an integer in notebooks (test_notebooks.py)


def test_json_rows_are_the_documented_shape(tmp_path: Path) -> None:
    copy_example(tmp_path)
    proc = workersafe("check", "--no-cache", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1
    rows = json.loads(proc.stdout)
    assert isinstance(rows, list) and len(rows) == 1
    (row,) = rows
    assert set(row) == set(JSON_FIELDS)  # adding a field is a documented change
    for key, kind in JSON_FIELDS.items():
        assert type(row[key]) is kind, key
    assert row["path"] == "data.py"
    assert (row["line"], row["col"], row["end_line"], row["end_col"]) == (12, 24, 12, 42)
    assert row["code"] == "WS101"
    assert row["fixable"] is True
    text = workersafe("check", "--no-cache", cwd=tmp_path).stdout
    assert text.startswith(f"{row['path']}:{row['line']}:{row['col']}: {row['code']} "
                           f"{row['message']}")


def test_json_without_findings_is_an_empty_list(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    proc = workersafe("check", "--no-cache", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []


def test_formats_are_documented() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "output-formats.md")
    text = doc.read_text(encoding="utf-8")
    for key in JSON_FIELDS:
        assert f"`{key}`" in text, key
    for name in ("text", "json", "sarif", "github"):
        assert f"`--format {name}`" in text
