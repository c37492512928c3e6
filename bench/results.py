"""Outcomes of the pairs, machine information, and the markdown report."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from corpora import Corpora
from envs import Venv
from measure import Series
from pairs import Pair, Target


@dataclass
class Outcome:
    pair: Pair
    a: Series | None = None
    b: Series | None = None
    stats: dict[str, object] | None = None  # workersafe --stats of side A, when probed
    load: float = field(default_factory=lambda: os.getloadavg()[0])  # 1-min, at pair start

    @property
    def ratio(self) -> float | None:
        """median(A) / median(B) of wall time: what the targets are judged on."""
        if self.a and self.b and self.a.ok and self.b.ok:
            return self.a.median_s / self.b.median_s
        return None

    @property
    def cpu_ratio(self) -> float | None:
        """The same for CPU time (user + system): far less sensitive to a busy machine."""
        if self.ratio is not None and self.a and self.b and self.b.median_cpu_s > 0:
            return self.a.median_cpu_s / self.b.median_cpu_s
        return None

    def verdict(self) -> str:
        target = self.pair.target
        value = self.cpu_ratio if self.pair.judge_cpu else self.ratio
        if self.pair.missing:
            return self.pair.missing
        if error := _error_text(self.a) or _error_text(self.b):
            return error
        if target is None:
            return "(info)"
        if self.pair.target_note:
            return f"n/a ({self.pair.target_note})"
        return _met(target, value)


@dataclass(frozen=True)
class Derived:
    """A single measured value with a target (peak memory, throughput)."""

    title: str
    value: float | None
    unit: str
    target: Target | None
    source: str
    missing: str | None = None
    cpu_value: float | None = None  # the same computed from CPU time, when meaningful
    judge_cpu: bool = False  # the target applies to cpu_value

    def verdict(self) -> str:
        if self.missing:
            return self.missing
        if self.target is None:
            return "(info)"
        return _met(self.target, self.cpu_value if self.judge_cpu else self.value)


def _met(target: Target, value: float | None) -> str:
    if value is None:
        return "n/a"
    return "**met**" if target.met(value) else "**not met**"


def _error_text(series: Series | None) -> str | None:
    bad = series.first_error() if series else None
    if bad is None:
        return None
    if bad.timed_out:
        return f"timeout (killed after {bad.seconds:.0f} s)"
    return f"error (exit {bad.exit_code})"


@dataclass
class Machine:
    cpu: str
    cores: int
    usable_cores: int
    memory_gib: float
    kernel: str
    python: str
    versions: dict[str, str | None]
    bare_versions: dict[str, str | None] | None
    git: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    started: str = field(default_factory=lambda: _now())


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def machine_info(main: Venv, bare: Venv | None, repo: Path) -> Machine:
    return Machine(
        cpu=_cpu_model(), cores=os.cpu_count() or 0, usable_cores=len(os.sched_getaffinity(0)),
        memory_gib=_mem_total_gib(), kernel=f"{platform.system()} {platform.release()}",
        python=main.python_version(), versions=main.versions(),
        bare_versions=bare.versions() if bare else None, git=_git_describe(repo),
        load_before=os.getloadavg())


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def _git_describe(repo: Path) -> str:
    """Commit and whether the tree has local changes (read-only git commands)."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=False)
        return proc.stdout.strip() if proc.returncode == 0 else ""
    commit = git("rev-parse", "--short", "HEAD") or "no commit"
    dirty = " (with uncommitted changes)" if git("status", "--porcelain") else ""
    return commit + dirty


def _seconds(series: Series | None) -> str:
    if series is None or not series.ok:
        return "—"  # no run, or a failed/timed-out run: the result column says which
    return f"{series.median_s:.3f} s"


def _rss(series: Series | None) -> str:
    return f"{series.max_rss_mib:.0f}" if series and series.samples else "—"


def render(machine: Machine, corpora: Corpora, outcomes: list[Outcome],
           derived: list[Derived], invocation: str, elapsed_s: float) -> str:
    lines = [
        "# workersafe benchmark results", "",
        f"Produced by `{invocation}` on {machine.started}, in {elapsed_s / 60:.1f} min. "
        "Whole-process wall times, median of the repetitions; A and B of each pair are "
        "interleaved in one run (AB, BA, ...). Ratios are what count: absolute times vary "
        "from machine to machine and with load. workersafe is byte-compiled first (as `pip "
        "install` leaves it; an editable install under PYTHONDONTWRITEBYTECODE would compile "
        "it in every run).", "",
        *_busy_warning(machine),
        *_machine_lines(machine), "",
        "## Corpora", "",
        *[f"- {c.describe()}" for c in (corpora.torch, corpora.worst, corpora.file3k,
                                        corpora.ml)],
    ]
    if corpora.torch_flake8 is not corpora.torch:
        lines.append(f"- {corpora.torch_flake8.describe()}")
    lines += ["", *_pair_table(outcomes), *_derived_table(derived), *_stats_lines(outcomes),
              *_error_lines(outcomes), *_notes(outcomes),
              "## Exact commands", "", *_command_lines(outcomes), *_method_lines()]
    return "\n".join(lines) + "\n"


def _pair_table(outcomes: list[Outcome]) -> list[str]:
    lines = ["## Pairs (A vs B)", "",
             "| # | comparison | A | B | A median | B median | A/B | target | result "
             "| A/B CPU | peak RSS A / B (MiB) | reps | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, o in enumerate(outcomes, 1):
        p = o.pair
        target = p.target.text() + (" (CPU)" if p.judge_cpu else "") if p.target else "—"
        reps = max(len(s.samples) if s else 0 for s in (o.a, o.b))
        lines.append(f"| {i} | {p.title} | {p.a_label} | {p.b_label} | {_seconds(o.a)} "
                     f"| {_seconds(o.b)} | {_x(o.ratio)} | {target} | {o.verdict()} "
                     f"| {_x(o.cpu_ratio)} | {_rss(o.a)} / {_rss(o.b)} | {reps} "
                     f"| {o.load:.1f} |")
    return lines + ["", "A/B is the ratio of median wall times (the targets apply to it, "
                    "except those marked CPU); A/B CPU the ratio of median user+system CPU "
                    "times, a cross-check that "
                    "busy machines disturb less (not comparable for -j pairs). `load`: the "
                    "1-minute load average when the pair started; above the core count, other "
                    "processes competed for the CPU and absolute times are inflated.", ""]


def _x(ratio: float | None) -> str:
    return f"{ratio:.2f}x" if ratio is not None else "—"


def _derived_table(derived: list[Derived]) -> list[str]:
    if not derived:
        return []
    lines = ["## Derived metrics", "", "| metric | value | target | result | from |",
             "|---|---|---|---|---|"]
    for d in derived:
        value = "—" if d.value is None else f"{d.value:,.0f} {d.unit}"
        if d.cpu_value is not None:
            value += f" (from CPU time: {d.cpu_value:,.0f})"
        target = d.target.text() if d.target else "—"
        lines.append(f"| {d.title} | {value} | {target} | {d.verdict()} | {d.source} |")
    return lines + [""]


def _machine_lines(m: Machine) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in m.versions.items() if v)
    absent = [k for k, v in m.versions.items() if not v]
    out = ["## Machine", "",
           f"- CPU: {m.cpu}; {m.cores} cores ({m.usable_cores} usable); "
           f"RAM {m.memory_gib:.1f} GiB; {m.kernel}",
           f"- Python {m.python} (main venv); packages: {versions}"
           + (f"; not installed: {', '.join(absent)}" if absent else ""),
           f"- repository at {m.git}",
           f"- load average before / after: {_load(m.load_before)} / {_load(m.load_after)}"]
    if m.bare_versions is not None:
        bare = ", ".join(f"{k} {v}" for k, v in m.bare_versions.items() if v)
        out.append(f"- bare venv (`bench/out/venv-bare`, flake8 without the plugin): {bare}")
    return out


def _busy_warning(m: Machine) -> list[str]:
    busiest = max(m.load_before[0], m.load_after[0])
    if busiest < m.usable_cores:
        return []
    return [f"**Warning: the machine was busy (1-minute load up to {busiest:.1f} on "
            f"{m.usable_cores} cores): absolute times are inflated; rerun on a quiet machine "
            "before quoting numbers.**", ""]


def _load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def _stats_lines(outcomes: list[Outcome]) -> list[str]:
    rows = [o for o in outcomes if o.stats]
    if not rows:
        return []
    out = ["## workersafe --stats (side A, one extra untimed run)", ""]
    out += [f"- {o.pair.key}: `{_compact(o.stats)}`" for o in rows]
    return out + [""]


def _compact(stats: dict[str, object] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (stats or {}).items())


def _error_lines(outcomes: list[Outcome]) -> list[str]:
    out: list[str] = []
    for o in outcomes:
        for side, series in (("A", o.a), ("B", o.b)):
            bad = series.first_error() if series else None
            if bad is not None:
                tail = bad.stderr_tail.strip().splitlines()[-15:]
                what = "timed out" if bad.timed_out else f"exit {bad.exit_code}"
                out += [f"### {o.pair.key} side {side}: {what}", ""]
                out += ["```", *tail, "```", ""] if tail else []
    return (["## Errors", "", *out] if out else [])


def _notes(outcomes: list[Outcome]) -> list[str]:
    notes = [f"- {o.pair.key}: {o.pair.target_note}" for o in outcomes if o.pair.target_note]
    return (["## Notes", "", *notes, ""] if notes else [])


def _command_lines(outcomes: list[Outcome]) -> list[str]:
    out = []
    for i, o in enumerate(outcomes, 1):
        out.append(f"{i}. **{o.pair.key}**")
        for side, cmd in (("A", o.pair.a), ("B", o.pair.b)):
            if cmd is not None:
                out.append(f"   - {side}: `{cmd.display()}`")
    return out + [""]


def _method_lines() -> list[str]:
    return [
        "## Method", "",
        "- Every command is a fresh process started from `bench/run.py`; wall time is measured "
        "from spawn to exit, peak RSS comes from `wait4()` (the largest single process of the "
        "command's tree, not a sum over worker processes).",
        "- Exit codes 0 and 1 (findings) count as a completed run; anything else is an error.",
        "- One untimed warm-up run of each side precedes the timed ones (not for the flake8 "
        "tree pair). Cache pairs run the cold side (cache removed first) then the warm side.",
        "- Corpora are rebuilt on every run in a work folder outside the repository (tools "
        "honouring `.gitignore`, and ruff's default exclusion of `site-packages`, would "
        "otherwise skip them).",
    ]
