"""`check` says of each finding whether `workersafe fix` can fix it (`[fixable]`, or `[not
fixable: why]`). Saying so means planning the fix with libcst (its import alone is ~0.13 s of
CPU, more than a cold check of a small tree), unless the registry already says why not
(`known_refusal`). The answer is kept in the cache, keyed by everything the planning reads
(the findings, the text of every file read, the configuration, the Python and workersafe
versions), so a `check` of an unchanged tree does not plan again. A file that named no handle
and no dataset counts by its size and modification time, as the cache's record of quiet files
keeps it (a warm run does not read it again): the warm run after a cold one finds the answer
the cold run planned with every file's text."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Optional

from .records import replace
from .ruletable import UNREADABLE

if TYPE_CHECKING:
    from .cache import FactsCache
    from .config import Config
    from .engine import CheckResult, Engine
    from .findings import Finding

# (path, span, code) of a finding → (whether `fix` fixes it, the rewriter's note)
Verdicts = dict[tuple[str, str, str], tuple[bool, str]]


def mark_fixable(engine: Engine, result: CheckResult, config: Config) -> list[Finding]:
    """The findings, each message ending with whether `workersafe fix` can fix it (planning
    only, no writes)."""
    if not any(f.plan for f in result.findings):
        return result.findings
    from .fix.refusals import known_refusal

    refused = {id(f): known_refusal(f, engine.registry) for f in result.findings if f.plan}
    if all(refused.values()):  # the registry says why for each: no rewriter to load
        return [replace(f, message=f"{f.message} [not fixable: {refused[id(f)]}]",
                        fixable=False) if f.plan and f.code != UNREADABLE
                else replace(f, fixable=False) for f in result.findings]
    verdicts = _verdicts(engine, result, config)
    if verdicts is None:
        return result.findings
    marked: list[Finding] = []
    for finding in result.findings:
        verdict = verdicts.get(_finding_key(finding))
        if verdict is None or finding.code == UNREADABLE:
            marked.append(replace(finding, fixable=False))
        elif verdict[0]:
            marked.append(replace(finding, message=finding.message + " [fixable]",
                                  fixable=True))
        else:
            marked.append(replace(finding, message=f"{finding.message} [not fixable: "
                                                   f"{verdict[1]}]", fixable=False))
    return marked


def _finding_key(finding: Finding) -> tuple[str, str, str]:
    return finding.path, repr(finding.span), finding.code


def _verdicts(engine: Engine, result: CheckResult, config: Config) -> Optional[Verdicts]:
    """What the rewriter says of each finding, from the cache when it planned the same
    findings over the same files before; None when planning failed."""
    cache = engine.cache
    path = _path(cache, _key(cache, result, config)) if cache is not None else ""
    if cache is not None:
        kept = _read(cache, path)
        if kept is not None:
            return kept
    from .fix.remedyfix import make_rewriter

    try:
        _, outcomes = make_rewriter(engine, result, config.fix_strategy).run()
    except Exception:  # noqa: BLE001 - marking is a courtesy; never fail a check over it
        return None
    verdicts = {_finding_key(o.finding): (o.status == "fixed", o.note) for o in outcomes}
    if cache is not None:
        cache.write_json(path, [[*k, fixed, note] for k, (fixed, note) in verdicts.items()])
    return verdicts


def _key(cache: FactsCache, result: CheckResult, config: Config) -> str:
    """A digest of what planning the fix reads: the findings with their plans, every file
    (its bytes as read; one that named no handle and no dataset, by its size and modification
    time when not modified in the last moments), the configuration, the
    registry, Python's version."""
    import hashlib
    import time

    from .cache import RACY_NS, size_and_mtime

    digest = hashlib.blake2b(digest_size=20)
    for text in (cache.salt, sys.version, repr(config),
                 *(repr((f, f.plan)) for f in result.findings)):
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    # a warm run reads a quiet file only when the selection asks for it, after its verdicts
    loud = result.verdicts[1] if result.verdicts is not None else None
    settled = time.time_ns() - RACY_NS
    for path in sorted({f.path for f in result.files} | set(result.sources)):
        digest.update(path.encode("utf-8", "surrogatepass"))
        source = result.sources.get(path)
        if source is None or (loud is not None and path not in loud):
            stamp = size_and_mtime(path)
            if stamp is not None and stamp[1] < settled:
                digest.update(b"\0stamp %d %d\0" % tuple(stamp))
                continue
        raw = source.raw if source is not None else b""
        digest.update(b"\0%d %d\0" % (source is not None, len(raw)))
        digest.update(raw)
    return digest.hexdigest()


def _path(cache: FactsCache, key: str) -> str:
    return os.path.join(cache.root, "fixable", key[:2], key + ".json")


def _read(cache: FactsCache, path: str) -> Optional[Verdicts]:
    rows = cache.read_json(path)
    if rows is None:
        return None
    try:
        return {(str(p), str(s), str(c)): (bool(fixed), str(note))
                for p, s, c, fixed, note in rows}
    except (TypeError, ValueError) as exc:
        cache.warn(f"ignoring damaged cache entry {path}: {type(exc).__name__}")
        return None
