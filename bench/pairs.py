"""The comparisons the benchmark makes: each pair is A vs B with a target on A/B."""

from __future__ import annotations

import operator
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corpora import Corpora
from envs import Venv
from measure import Command

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR_NAME = ".workersafe_cache"

PAIR_TITLES = {
    "torch-ruff": "torch tree: workersafe vs ruff",
    "torch-floor": "torch tree: workersafe vs read+substring floor",
    "torch-link": "torch tree: repo mode vs single-file mode",
    "worst-link": "worst case: repo mode vs single-file mode",
    "worst-parse": "worst case: workersafe -j1 vs bare libcst parse",
    "worst-jobs": "worst case: -j1 vs -j2 (A/B = speed-up)",
    "file3k-stdin": "3k-line file: workersafe via stdin vs bare libcst parse",
    "file3k-flake8": "3k-line file: flake8 --select=WS (plugin) vs bare libcst",
    "file3k-flake8-bare": "3k-line file: flake8 --select=WS with vs without plugin",
    "file3k-flake8-floor": "3k-line file: flake8 alone vs bare libcst (what flake8 costs anyway)",
    "torch-cache": "torch tree: warm cache vs cold cache",
    "worst-cache": "worst case: warm cache vs cold cache",
    "flake8-plugin": "torch tree (or subset): flake8 with vs without the plugin",
    "ml-old": "ML repositories: workersafe vs the baseline version (--baseline-src)",
    "ml-ruff": "ML repositories: workersafe vs ruff",
}


@dataclass(frozen=True)
class Target:
    """A bound on a measured value: ``value <op> bound``."""

    op: str  # "<=" or ">="
    bound: float
    unit: str = "x"

    def met(self, value: float) -> bool:
        return {"<=": operator.le, ">=": operator.ge}[self.op](value, self.bound)

    def text(self) -> str:
        op = {"<=": "≤", ">=": "≥"}[self.op]
        if self.unit == "x":
            return f"{op} {self.bound}x"
        return f"{op} {self.bound:,g} {self.unit}"


@dataclass
class Pair:
    key: str  # one of PAIR_TITLES
    a_label: str
    b_label: str
    a: Command | None  # None: not runnable; ``missing`` says why
    b: Command | None
    target: Target | None = None  # on median(A) / median(B); None: for information
    reps: int = 5
    warmup: int = 1
    order: str = "alternate"
    before_a: Callable[[], None] | None = None
    before_b: Callable[[], None] | None = None
    missing: str | None = None  # why A cannot run ("n/a (option missing: --no-link)")
    target_note: str | None = None  # why the target does not apply this time
    probe_a: bool = False  # run A once more with --stats and record the counters
    judge_cpu: bool = False  # the target applies to the CPU-time ratio (noisy, shared machine)

    @property
    def title(self) -> str:
        return PAIR_TITLES[self.key]


@dataclass(frozen=True)
class Tools:
    main: Venv
    bare: Venv | None  # flake8 without the plugin; None when not prepared
    ws_options: set[str] | None  # None: workersafe CLI not installed (or not to be run)
    flake8_plugin: bool
    baselines_only: bool = False  # measure only the sides that do not run workersafe
    baseline_src: Path | None = None  # another workersafe's src/, for the ml-old pair

    @property
    def stats(self) -> bool:
        """Whether ``--stats`` exists (then side A of some pairs is probed once more)."""
        return self.ws_options is not None and "--stats" in self.ws_options

    def ws_missing(self, *options: str) -> str | None:
        if self.baselines_only:
            return "n/a (--baselines-only)"
        if self.ws_options is None:
            return "n/a (workersafe CLI not installed)"
        absent = [o for o in options if o not in self.ws_options]
        return f"n/a (option missing: {', '.join(absent)})" if absent else None


WsCmd = Callable[..., Command]  # ws_cmd(*args, cwd=..., stdin=...) -> workersafe check ...


def build_pairs(tools: Tools, c: Corpora, work: Path, reps: int, flake8_reps: int,
                warmup: int) -> list[Pair]:
    ws = str(tools.main.bin("workersafe"))

    def ws_cmd(*args: str, cwd: Path = work, stdin: Path | None = None) -> Command:
        return Command((ws, "check", *args), cwd, stdin)

    py = str(tools.main.python)
    file3k = c.file3k.path
    bare_file = Command((py, "-c", "import libcst; libcst.parse_module(open("
                         f"{file3k.name!r}).read())"), file3k.parent)
    return [
        *_torch_pairs(tools, ws_cmd, work, c.torch.path.name, reps, warmup),
        *_worst_pairs(tools, ws_cmd, work, c.worst.path.name, reps, warmup),
        _stdin_pair(tools, ws_cmd, bare_file, file3k, reps, warmup),
        *_file3k_flake8_pairs(tools, bare_file, file3k, reps, warmup),
        _cache_pair("torch-cache", tools, ws_cmd, work, c.torch.path.name, reps, warmup),
        _cache_pair("worst-cache", tools, ws_cmd, work, c.worst.path.name, reps, warmup,
                    target=None),
        _flake8_tree_pair(tools, c, work, flake8_reps),
        *_ml_pairs(tools, ws_cmd, work, c.ml.path.name, reps, warmup),
    ]


def _ml_pairs(tools: Tools, ws_cmd: WsCmd, work: Path, tree: str, reps: int,
              warmup: int) -> list[Pair]:
    """The candidate-heavy corpus: against the baseline version and against ruff, on CPU
    time (what one core spends; wall time on a shared machine measures the neighbours)."""
    ws = ws_cmd(tree, "--no-cache", "-j", "1")
    ruff = Command((str(tools.main.bin("ruff")), "check", "--select", "E9,F", "--no-cache",
                    tree), work)
    missing = tools.ws_missing("--no-cache", "-j")
    old = None
    if tools.baseline_src is not None:
        old = Command(ws.argv, ws.cwd, env=(("PYTHONPATH", str(tools.baseline_src)),))
    return [
        Pair("ml-old", "workersafe check --no-cache -j1",
             f"same, PYTHONPATH={tools.baseline_src}", ws, old, Target("<=", 0.2), reps,
             warmup, missing=missing or (None if old else "n/a (no --baseline-src)"),
             probe_a=tools.stats, judge_cpu=True),
        Pair("ml-ruff", "workersafe check --no-cache -j1", "ruff check --select E9,F --no-cache",
             ws, ruff, Target("<=", 2.5), reps, warmup, missing=missing, judge_cpu=True),
    ]


def _torch_pairs(tools: Tools, ws_cmd: WsCmd, work: Path, tree: str, reps: int,
                 warmup: int) -> list[Pair]:
    ruff = Command((str(tools.main.bin("ruff")), "check", "--select", "E9,F", "--no-cache",
                    tree), work)
    floor = Command((str(tools.main.python), str(BENCH_DIR / "floor_scan.py"), tree), work)
    ws = ws_cmd(tree, "--no-cache")
    return [
        Pair("torch-ruff", "workersafe check --no-cache", "ruff check --select E9,F --no-cache",
             ws, ruff, Target("<=", 1.0), reps, warmup,
             missing=tools.ws_missing("--no-cache"), probe_a=tools.stats),
        Pair("torch-floor", "workersafe check --no-cache",
             "bench/floor_scan.py (read + substring search)", ws, floor, None, reps, warmup,
             missing=tools.ws_missing("--no-cache")),
        Pair("torch-link", "workersafe check --no-cache", "workersafe check --no-cache --no-link",
             ws, ws_cmd(tree, "--no-cache", "--no-link"), None, reps, warmup,
             missing=tools.ws_missing("--no-cache", "--no-link")),
    ]


def _worst_pairs(tools: Tools, ws_cmd: WsCmd, work: Path, tree: str, reps: int,
                 warmup: int) -> list[Pair]:
    bare_parse = Command((str(tools.main.python), str(BENCH_DIR / "bare_parse.py"), tree), work)
    j1 = ws_cmd(tree, "--no-cache", "-j", "1")
    return [
        Pair("worst-link", "workersafe check --no-cache", "workersafe check --no-cache --no-link",
             ws_cmd(tree, "--no-cache"), ws_cmd(tree, "--no-cache", "--no-link"), None, reps,
             warmup, missing=tools.ws_missing("--no-cache", "--no-link")),
        Pair("worst-parse", "workersafe check --no-cache -j1",
             "bench/bare_parse.py (libcst.parse_module)", j1, bare_parse, Target("<=", 1.3),
             reps, warmup, missing=tools.ws_missing("--no-cache", "-j"), probe_a=tools.stats),
        Pair("worst-jobs", "workersafe check --no-cache -j1", "workersafe check --no-cache -j2",
             j1, ws_cmd(tree, "--no-cache", "-j", "2"), Target(">=", 1.7), reps, warmup,
             missing=tools.ws_missing("--no-cache", "-j")),
    ]


def _stdin_pair(tools: Tools, ws_cmd: WsCmd, bare_file: Command, file3k: Path, reps: int,
                warmup: int) -> Pair:
    return Pair("file3k-stdin", "workersafe check --no-cache --stdin-filename F -  < F",
                "python -c 'import libcst; libcst.parse_module(...)'",
                ws_cmd("--no-cache", "--stdin-filename", file3k.name, "-",
                       cwd=file3k.parent, stdin=file3k),
                bare_file, Target("<=", 1.3), reps, warmup,
                missing=tools.ws_missing("--no-cache", "--stdin-filename"))


def _file3k_flake8_pairs(tools: Tools, bare_file: Command, file3k: Path, reps: int,
                         warmup: int) -> list[Pair]:
    def flake8(venv: Venv) -> Command:
        return Command((str(venv.bin("flake8")), "--select=WS", file3k.name), file3k.parent)

    no_plugin = tools.ws_missing() if tools.baselines_only else \
        None if tools.flake8_plugin else "n/a (workersafe flake8 plugin not installed)"
    pairs = [Pair("file3k-flake8", "flake8 --select=WS F (with plugin)",
                  "python -c 'import libcst; ...'",
                  flake8(tools.main), bare_file, Target("<=", 1.3), reps, warmup,
                  missing=no_plugin)]
    if tools.bare is not None:
        pairs.append(Pair("file3k-flake8-bare", "flake8 --select=WS F (with plugin)",
                          "flake8 --select=WS F (bare venv, no plugin)",
                          flake8(tools.main), flake8(tools.bare), Target("<=", 1.10), reps,
                          warmup, missing=no_plugin, judge_cpu=True))
        pairs.append(Pair("file3k-flake8-floor", "flake8 --select=WS F (bare venv, no plugin)",
                          "python -c 'import libcst; ...'",
                          flake8(tools.bare), bare_file, None, reps, warmup))
    return pairs


def _cache_pair(key: str, tools: Tools, ws_cmd: WsCmd, work: Path, target_dir: str,
                reps: int, warmup: int, target: Target | None = Target("<=", 0.5)) -> Pair:
    """A = warm run, B = cold run (cache removed first); each repetition runs B then A."""
    cache_args: tuple[str, ...] = ()
    if tools.ws_options is not None and "--cache-dir" in tools.ws_options:
        cache_args = ("--cache-dir", str(work / f"cache-{key}"))
    roots = [work, work / target_dir]

    def clear() -> None:
        for root in roots:
            for cache in [root / CACHE_DIR_NAME, *root.rglob(CACHE_DIR_NAME)]:
                shutil.rmtree(cache, ignore_errors=True)
        if cache_args:
            shutil.rmtree(cache_args[1], ignore_errors=True)

    cmd = ws_cmd(target_dir, *cache_args)
    return Pair(key, "workersafe check (warm)",
                "workersafe check (cache removed first)", cmd, cmd, target, reps, warmup,
                order="ba", before_b=clear, missing=tools.ws_missing(), probe_a=tools.stats)


def _flake8_tree_pair(tools: Tools, c: Corpora, work: Path, reps: int) -> Pair:
    tree = str(c.torch_flake8.path.relative_to(work))

    def flake8(venv: Venv) -> Command:
        return Command((str(venv.bin("flake8")), "--select=E9,F", "-j1", tree), work)

    pair = Pair("flake8-plugin", "flake8 --select=E9,F -j1 (main venv, plugin)",
                "flake8 --select=E9,F -j1 (bare venv, no plugin)",
                flake8(tools.main), flake8(tools.bare) if tools.bare else None,
                Target("<=", 1.02), reps, warmup=0)
    if tools.bare is None:
        pair.missing = "n/a (bare venv not prepared)"
    elif tools.baselines_only:
        pair.missing = tools.ws_missing()
    elif not tools.flake8_plugin:
        pair.target_note = "plugin not installed: both sides run plain flake8 (A/A noise check)"
    return pair
