"""Configuration: `[tool.workersafe]` in pyproject.toml for the CLI; flake8 options for the
plugin. Both end up as one `Config`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

from .analysis.names import DATASET_BASES
from .registry import DEFAULT_REGISTRY, Registry

STRATEGIES = ("worker-init", "lazy")
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "__pycache__",
                   "build", "dist", ".eggs", "*.egg-info", ".workersafe_cache", "node_modules",
                   ".mypy_cache", ".pytest_cache")


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
    """flake8-style list: comma or whitespace separated. A TOML list in an INI file is an error."""
    stripped = value.strip()
    if stripped.startswith("[") or '"' in stripped or "'" in stripped:
        raise ConfigError(
            f"expected a comma-separated list (like `a.B, c.D`), got {value!r}: "
            "INI files take plain comma-separated names, not a TOML list")
    return [item.strip() for item in stripped.replace("\n", ",").split(",") if item.strip()]


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


def discover_config(paths: Iterable[str]) -> Config:
    for path in list(paths) or ["."]:
        found = find_pyproject(path if path != "-" else ".")
        if found:
            return load_pyproject(found)
    return Config()
