"""Configuration: `[tool.workersafe]` in pyproject.toml for the CLI; flake8 options for the
plugin. Both end up as one `Config`."""

from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

from .torchnames import DATASET_BASES
from .registry import DEFAULT_REGISTRY, Registry

STRATEGIES = ("worker-init", "lazy")
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "__pycache__",
                   "build", "dist", ".eggs", "*.egg-info", ".workersafe_cache", "node_modules",
                   ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints")


class ConfigError(Exception):
    """A configuration value is wrong; the message says which and why."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ("WS",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    extra_handles: tuple[str, ...] = ()
    disable_handles: tuple[str, ...] = ()
    dataset_bases: tuple[str, ...] = ()
    fix_strategy: str = "worker-init"
    cache: bool = True
    source: str = ""  # where the config came from, for messages
    notes: tuple[str, ...] = field(default=(), compare=False)  # warnings for the CLI to print

    def registry(self) -> Registry:
        return DEFAULT_REGISTRY.with_config(self.extra_handles, self.disable_handles)

    def all_dataset_bases(self) -> frozenset[str]:
        return DATASET_BASES | frozenset(self.dataset_bases)

    def enabled(self, code: str) -> bool:
        """flake8's rule: the longest matching prefix of select or ignore wins."""
        selected = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return selected > ignored


_KEYS = {
    "select": "select", "ignore": "ignore", "exclude": "exclude",
    "extend-exclude": "extend_exclude", "extra-handles": "extra_handles",
    "disable-handles": "disable_handles", "dataset-bases": "dataset_bases",
    "fix-strategy": "fix_strategy", "cache": "cache",
}


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
    if name == "cache":
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false")
        return value
    if name == "fix_strategy":
        if value not in STRATEGIES:
            raise ConfigError(f"{source}: {key} must be one of {', '.join(STRATEGIES)}")
        return value
    if isinstance(value, str):
        return tuple(split_list(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ConfigError(f"{source}: {key} must be a list of strings")


def split_list(value: str) -> list[str]:
    """flake8-style list: comma or whitespace separated (as flake8's own list options). A TOML
    list in an INI file is an error, not a silently wrong name."""
    stripped = value.strip()
    if stripped.startswith("[") or '"' in stripped or "'" in stripped:
        raise ConfigError(
            f"expected a comma-separated list (like `a.B, c.D`), got {value!r}: "
            "INI files take plain comma-separated names, not a TOML list")
    return [item for item in re.split(r"[,\s]+", stripped) if item]


def find_pyproject(start: str) -> Optional[str]:
    current = os.path.abspath(start)
    if os.path.isfile(current):
        current = os.path.dirname(current)
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def load_pyproject(path: str) -> Config:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    section = data.get("tool", {}).get("workersafe", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.workersafe] must be a table")
    return from_mapping(section, f"{path} [tool.workersafe]")


# flake8 options the CLI also honours (flake8 option name without `--`, Config field)
FLAKE8_OPTIONS = (
    ("workersafe-extra-handles", "extra_handles"),
    ("workersafe-disable-handles", "disable_handles"),
    ("workersafe-dataset-bases", "dataset_bases"),
)
FLAKE8_CONFIG_FILES = ("setup.cfg", "tox.ini", ".flake8")  # flake8's own search order


def find_flake8_config(directory: str) -> Optional[str]:
    """The file flake8 would read in `directory`: the first of setup.cfg, tox.ini, .flake8
    with a [flake8] (or [flake8:local-plugins]) section."""
    for name in FLAKE8_CONFIG_FILES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
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
            updates[fields[name]] = tuple(split_list(value))
        except ConfigError as exc:
            raise ConfigError(f"{path} [flake8] {name}: {exc}") from None
    return replace(Config(), **updates)


def _pyproject_section(path: str) -> Optional[dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    tool = data.get("tool", {})
    return tool.get("workersafe") if isinstance(tool, dict) else None


def discover_config(paths: Iterable[str]) -> Config:
    """The CLI's configuration, found from the first path upwards. In each directory:
    1. `pyproject.toml` with a `[tool.workersafe]` table wins;
    2. else the flake8 INI file flake8 would read there (setup.cfg, tox.ini, .flake8), when its
       [flake8] section sets a `workersafe-*` option: the same options the plugin reads;
    3. else a `pyproject.toml` (without the table) marks the project root: defaults.
    The nearest directory that decides wins; nothing is merged across files."""
    for path in list(paths) or ["."]:
        current = os.path.abspath(path if path != "-" else ".")
        if os.path.isfile(current) or not os.path.exists(current):
            current = os.path.dirname(current)
        while True:
            decided = _config_in(current)
            if decided is not None:
                return decided
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return Config()


def _config_in(directory: str) -> Optional[Config]:
    pyproject = os.path.join(directory, "pyproject.toml")
    has_pyproject = os.path.isfile(pyproject)
    section = _pyproject_section(pyproject) if has_pyproject else None
    ini = find_flake8_config(directory)
    ini_options = flake8_options(ini) if ini else {}
    if section is not None:
        config = load_pyproject(pyproject)
        if ini and ini_options:
            other = load_flake8_ini(ini)
            differs = [name for name, attr in FLAKE8_OPTIONS
                       if getattr(other, attr) != getattr(config, attr)]
            if differs:
                note = (f"{os.path.basename(ini)} [flake8] sets {', '.join(differs)} differently: "
                        "`workersafe` reads [tool.workersafe] from pyproject.toml, flake8 reads "
                        f"{os.path.basename(ini)}")
                config = replace(config, notes=config.notes + (note,))
        return config
    if ini and ini_options:
        return load_flake8_ini(ini)
    if has_pyproject:
        return Config(source=pyproject)
    return None
