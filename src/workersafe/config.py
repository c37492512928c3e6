"""Configuration: `[tool.workersafe]` in pyproject.toml for the CLI; flake8 options for the
plugin. Both end up as one `Config`."""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Iterable, Mapping, Optional

from .paths import CACHE_DIR_NAME, ancestors
from .records import field, record, replace
from .registry import DEFAULT_REGISTRY, Registry
from .ruletable import DEFAULT_SELECT, RULES, default_on
from .torchnames import DATASET_BASES

STRATEGIES = ("worker-init", "lazy")
PLATFORMS = ("linux", "macos", "windows", "any")
TARGET_VERSIONS = tuple(f"py3{minor}" for minor in range(9, 15))  # as ruff spells them
DEFAULT_TARGET = "py39"  # no target-version and no requires-python: the oldest supported
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "__pycache__",
                   "build", "dist", ".eggs", "*.egg-info", CACHE_DIR_NAME, "node_modules",
                   ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints")


class ConfigError(Exception):
    """A configuration value is wrong; the message says which and why."""


@record(frozen=True)
class Config:
    select: tuple[str, ...] = (DEFAULT_SELECT,)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    extra_handles: tuple[str, ...] = ()
    disable_handles: tuple[str, ...] = ()
    dataset_bases: tuple[str, ...] = ()
    fix_strategy: str = "worker-init"
    cache: bool = True
    target_version: str = ""  # "": from `requires-python`, else DEFAULT_TARGET
    platform: str = "linux"
    # the longest line `fix` writes; 0: the formatter's (ruff, black, flake8), else 99
    line_length: int = 0
    source: str = ""  # where the config came from, for messages
    notes: tuple[str, ...] = field(default=(), compare=False)  # warnings for the CLI to print

    def registry(self) -> Registry:
        return DEFAULT_REGISTRY.with_config(self.extra_handles, self.disable_handles)

    def dataset_words(self) -> tuple[str, ...]:
        """The configured dataset bases' class names, for the prefilter to look for."""
        return tuple(b.rsplit(".", 1)[-1] for b in self.dataset_bases)

    def all_dataset_bases(self) -> frozenset[str]:
        return DATASET_BASES | frozenset(self.dataset_bases)

    def start_methods(self) -> tuple[str, ...]:
        """The start method a DataLoader gets when nothing names one: fork on Linux up to
        Python 3.13, forkserver on Linux from 3.14, spawn on macOS and Windows; `any`: each of
        Linux's and spawn, so what fails on any platform is reported."""
        minor = int((self.target_version or DEFAULT_TARGET)[3:])
        linux = "fork" if minor < 14 else "forkserver"
        return {"linux": (linux,), "macos": ("spawn",), "windows": ("spawn",),
                "any": (linux, "spawn")}[self.platform]

    def enabled(self, code: str) -> bool:
        """flake8's rule: the longest matching prefix of select or ignore wins. A rule the rule
        table has off by default needs a select prefix longer than the default `WS`."""
        selected = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        if selected <= ignored:
            return False
        return default_on(code) or selected > len(DEFAULT_SELECT)


_KEYS = {
    "select": "select", "ignore": "ignore", "exclude": "exclude",
    "extend-exclude": "extend_exclude", "extra-handles": "extra_handles",
    "disable-handles": "disable_handles", "dataset-bases": "dataset_bases",
    "fix-strategy": "fix_strategy", "cache": "cache", "target-version": "target_version",
    "platform": "platform", "line-length": "line_length",
}
_CHOICES = {"fix_strategy": STRATEGIES, "target_version": TARGET_VERSIONS, "platform": PLATFORMS}


def from_mapping(data: Mapping[str, Any], source: str, base: Optional[Config] = None) -> Config:
    config = base or Config()
    updates: dict[str, Any] = {"source": source}
    for key, value in data.items():
        name = _KEYS.get(key) or _KEYS.get(key.replace("_", "-"))
        if name is None:
            raise ConfigError(f"{source}: unknown key {key!r} (known: {', '.join(_KEYS)})")
        updates[name] = _coerce(name, value, source, key)
    return replace(config, **updates)


def _coerce(name: str, value: Any, source: str, key: str) -> Any:
    if name == "line_length":
        if not isinstance(value, int) or isinstance(value, bool) or not 40 <= value <= 400:
            raise ConfigError(f"{source}: {key} must be a number of columns (40 to 400)")
        return value
    if name == "cache":
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false")
        return value
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise ConfigError(f"{source}: {key} must be one of {', '.join(_CHOICES[name])}, "
                              f"got {value!r}")
        return value
    if isinstance(value, str):
        items = tuple(split_list(value))
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = tuple(v.strip() for v in value if v.strip())
    else:
        raise ConfigError(f"{source}: {key} must be a list of strings")
    if name in ("select", "ignore"):
        check_codes(items, f"{source}: {key}")
    return items


def unknown_codes(prefixes: Iterable[str]) -> list[str]:
    """The entries of a `select`/`ignore` list that are no rule code nor a prefix of one (ruff
    refuses such a list; flake8's own lists, which name other plugins' codes, are not checked)."""
    return [p for p in prefixes if not any(rule.code.startswith(p) for rule in RULES)]


def check_codes(prefixes: Iterable[str], where: str) -> None:
    """ConfigError naming the unknown codes of `where` (`--select`, `... select`)."""
    unknown = unknown_codes(prefixes)
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        raise ConfigError(f"{where}: unknown rule code or prefix {names} (codes: "
                          f"{', '.join(r.code for r in RULES)}; `workersafe rule --all` "
                          "describes them)")


def split_list(value: str) -> list[str]:
    """flake8-style list: comma or whitespace separated (as flake8's own list options). A TOML
    list in an INI file is an error, not a silently wrong name."""
    stripped = value.strip()
    if stripped.startswith("[") or '"' in stripped or "'" in stripped:
        raise ConfigError(
            f"expected a comma-separated list (like `a.B, c.D`), got {value!r}: "
            "INI files take plain comma-separated names, not a TOML list")
    return [item for item in re.split(r"[,\s]+", stripped) if item]


def load_pyproject(path: str, read: Optional[dict[str, dict[str, Any]]] = None) -> Config:
    data = _pyproject_data(path, read)
    section = data.get("tool", {}).get("workersafe", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.workersafe] must be a table")
    return with_requires_python(from_mapping(section, f"{path} [tool.workersafe]"), data)


def find_pyproject(start: str) -> Optional[str]:
    """The nearest pyproject.toml at or above `start` (a file or a directory), or None."""
    here = os.path.abspath(start)
    for directory in ancestors(here if os.path.isdir(here) else os.path.dirname(here)):
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
    return None


def load_pyproject_data(path: str) -> dict[str, Any]:
    """A pyproject.toml as read; an unreadable or invalid one is a ConfigError. (The TOML
    parser is imported here: the flake8 plugin loads this module, and seldom reads TOML.)"""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _pyproject_data(path: str, read: Optional[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """`load_pyproject_data`, each file parsed once per `read` (the files one configuration
    search has read: it asks a pyproject.toml for its table, `requires-python` and the
    formatter's line length, and TOML costs ~1 ms a file)."""
    if read is None:
        return load_pyproject_data(path)
    data = read.get(path)
    if data is None:
        data = read[path] = load_pyproject_data(path)
    return data


def with_requires_python(config: Config, pyproject: Mapping[str, Any]) -> Config:
    """`target-version` defaults from `[project] requires-python` (its lowest bound)."""
    if config.target_version:
        return config
    project = pyproject.get("project")
    spec = project.get("requires-python") if isinstance(project, dict) else None
    target = target_from_requires(spec) if isinstance(spec, str) else ""
    return replace(config, target_version=target) if target else config


def target_from_requires(spec: str) -> str:
    """`>=3.10`, `~=3.11`, `>=3.9,<4`, `==3.12.*` → the lowest `py3N` allowed (clamped to
    the versions workersafe knows); "" when no lower bound is given."""
    minors = [int(m) for m in re.findall(r"(?:>=|~=|==|>)\s*3\.(\d+)", spec)]
    if not minors:
        return ""
    return f"py3{min(max(min(minors), 9), 14)}"


# flake8 options the CLI also honours (flake8 option name without `--`, Config field)
FLAKE8_OPTIONS = (
    ("workersafe-extra-handles", "extra_handles"),
    ("workersafe-disable-handles", "disable_handles"),
    ("workersafe-dataset-bases", "dataset_bases"),
    ("workersafe-target-version", "target_version"),
    ("workersafe-platform", "platform"),
)
FLAKE8_CONFIG_FILES = ("setup.cfg", "tox.ini", ".flake8")  # flake8's own search order


def find_flake8_config(directory: str) -> Optional[str]:
    """The file flake8 would read in `directory`: the first of setup.cfg, tox.ini, .flake8
    with a [flake8] (or [flake8:local-plugins]) section."""
    for name in FLAKE8_CONFIG_FILES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        import configparser  # here: most runs meet no INI file

        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (UnicodeDecodeError, configparser.Error):
            continue  # flake8 ignores such a file too
        if parser.has_section("flake8") or parser.has_section("flake8:local-plugins"):
            return path
    return None


def flake8_options(path: str) -> dict[str, str]:
    """The workersafe-* options of a flake8 INI file's [flake8] section, raw strings, keyed by
    their dashed name (flake8 accepts `workersafe_extra_handles` too)."""
    import configparser

    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (UnicodeDecodeError, configparser.Error) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not parser.has_section("flake8"):
        return {}
    wanted = {name for name, _ in FLAKE8_OPTIONS}
    found: dict[str, str] = {}
    for key, value in parser.items("flake8"):
        name = key.replace("_", "-")
        if name in wanted:
            found[name] = value
    return found


def load_flake8_ini(path: str) -> Config:
    options = flake8_options(path)
    fields = dict(FLAKE8_OPTIONS)
    updates: dict[str, Any] = {"source": f"{path} [flake8]"}
    for name, value in options.items():
        try:
            updates[fields[name]] = flake8_value(fields[name], value, name)
        except ConfigError as exc:
            raise ConfigError(f"{path} [flake8] {name}: {exc}") from None
    return replace(Config(), **updates)


def flake8_value(attr: str, value: str, option: str) -> Any:
    """A flake8 option's raw string as the Config field `attr` holds it."""
    if attr in _CHOICES:
        return _coerce(attr, value.strip(), "flake8 option", option)
    return tuple(split_list(value))


def _pyproject_section(path: str, read: Optional[dict[str, dict[str, Any]]] = None
                       ) -> Optional[dict[str, Any]]:
    data = _pyproject_data(path, read)
    tool = data.get("tool", {})
    return tool.get("workersafe") if isinstance(tool, dict) else None


def discover_config(paths: Iterable[str]) -> Config:
    """The CLI's configuration, found from the first path upwards. In each directory:
    1. `pyproject.toml` with a `[tool.workersafe]` table wins;
    2. else the flake8 INI file flake8 would read there (setup.cfg, tox.ini, .flake8), when its
       [flake8] section sets a `workersafe-*` option: the same options the plugin reads;
    3. else a `pyproject.toml` (without the table) marks the project root: defaults.
    The nearest directory that decides wins; nothing is merged across files."""
    starts = []
    read: dict[str, dict[str, Any]] = {}  # each pyproject.toml parsed once
    for path in list(paths) or ["."]:
        current = os.path.abspath(path if path != "-" else ".")
        if os.path.isfile(current) or not os.path.exists(current):
            current = os.path.dirname(current)
        starts.append(current)
        for directory in ancestors(current):
            decided = _config_in(directory, read)
            if decided is not None:
                return _with_line_length(decided, current, read)
    return _with_line_length(Config(), starts[0], read)


def _with_line_length(config: Config, start: str,
                      read: Optional[dict[str, dict[str, Any]]] = None) -> Config:
    """The line length `fix` writes to, when not configured: the nearest formatter's."""
    if config.line_length:
        return config
    for directory in ancestors(start):
        found = formatter_line_length(directory, read)
        if found:
            return replace(config, line_length=found)
    return config


def formatter_line_length(directory: str,
                          read: Optional[dict[str, dict[str, Any]]] = None) -> int:
    """The line length the project's formatter or linter enforces in `directory`, 0 when none
    is configured there: ruff's `line-length` (88 by default), black's (88), flake8's
    `max-line-length` (79 by default) from the INI file flake8 would read."""
    pyproject = os.path.join(directory, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            tool = _pyproject_data(pyproject, read).get("tool", {})
        except ConfigError:
            tool = {}
        for name in ("ruff", "black"):
            section = tool.get(name) if isinstance(tool, dict) else None
            if isinstance(section, dict):
                length = section.get("line-length", 88)
                return length if isinstance(length, int) and length > 0 else 88
    ini = find_flake8_config(directory)
    if ini is None:
        return 0
    import configparser

    parser = configparser.RawConfigParser()
    try:
        parser.read(ini, encoding="utf-8")
        for key in ("max-line-length", "max_line_length"):
            if parser.has_option("flake8", key):
                return int(parser.get("flake8", key).strip())
        return 79 if parser.has_section("flake8") else 0
    except (configparser.Error, UnicodeDecodeError, ValueError):
        return 0


def _config_in(directory: str, read: Optional[dict[str, dict[str, Any]]] = None
               ) -> Optional[Config]:
    pyproject = os.path.join(directory, "pyproject.toml")
    has_pyproject = os.path.isfile(pyproject)
    section = _pyproject_section(pyproject, read) if has_pyproject else None
    ini = find_flake8_config(directory)
    ini_options = flake8_options(ini) if ini else {}
    if section is not None:
        config = load_pyproject(pyproject, read)
        if ini and ini_options:
            other = with_requires_python(load_flake8_ini(ini), _pyproject_data(pyproject, read))
            differs = [name for name, attr in FLAKE8_OPTIONS
                       if getattr(other, attr) != getattr(config, attr)]
            if differs:
                note = (f"{os.path.basename(ini)} [flake8] sets {', '.join(differs)} differently: "
                        "`workersafe` reads [tool.workersafe] from pyproject.toml, flake8 reads "
                        f"{os.path.basename(ini)}")
                config = replace(config, notes=config.notes + (note,))
        return config
    if ini and ini_options:
        config = load_flake8_ini(ini)
        if has_pyproject:
            config = with_requires_python(config, _pyproject_data(pyproject, read))
        return config
    if has_pyproject:
        return with_requires_python(Config(source=pyproject), _pyproject_data(pyproject, read))
    return None
