"""Rewrite src/workersafe/record_inits.py: the `__init__` of every record, precompiled.

    PYTHONPATH=src python scripts/gen_record_inits.py

Imports every module of the package (those needing an extra that is not installed are
skipped, with a note), collects the `__init__` source each record made (`records.BUILT`) and
writes them out as functions (`records.inits_module`). Run it after adding or changing a
record's fields; `tests/test_records.py` fails until then (the run stays correct meanwhile:
a record missing from the table compiles its own `__init__`)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def import_all() -> list[str]:
    """Imports every module of workersafe (namespace packages such as `analysis/` included,
    which `pkgutil.walk_packages` skips); the names of those that could not be."""
    import workersafe

    root = Path(workersafe.__file__).resolve().parent
    skipped = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        try:
            importlib.import_module(".".join(parts))
        except ImportError as exc:
            skipped.append(f"{'.'.join(parts)} ({exc})")
    return skipped


def main() -> int:
    from workersafe import records

    skipped = import_all()
    for note in skipped:
        print(f"skipped {note}: its records are not in the table", file=sys.stderr)
    target = Path(records.__file__).with_name("record_inits.py")
    target.write_text(records.inits_module(
        s for m, s in records.BUILT if m.startswith("workersafe.")), encoding="utf-8")
    print(f"wrote {target}: {len(set(records.BUILT))} records", file=sys.stderr)
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
