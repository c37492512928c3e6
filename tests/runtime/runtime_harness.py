"""Run a fixture program in its own process group and read its one-line JSON summary.

The programs in ``fixtures/runtime/`` print ``{"ok", "wrong_items", "error", "items"}`` and
exit 0 (ok), 3 (wrong items) or 4 (exception). Here they run with a hard timeout; on timeout,
or if anything goes wrong in the caller, the whole process group (DataLoader workers
included) is killed.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tls_server import TOKEN, payload_for

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "fixtures" / "runtime"

FORK_TIMEOUT = 120.0
SPAWN_TIMEOUT = 240.0

# What a zip archive shared by forked workers does: the offset one worker moved is read by
# another (each pattern is searched in the program's error).
ZIP_FAILURES = (
    r"BadZipFile",
    r"zlib\.error",
    r"Bad CRC-32",
    r"JSONDecodeError",
    r"UnicodeDecodeError",
)


@dataclass(frozen=True)
class Config:
    """One DataLoader configuration, passed to the program through ``WS_*`` variables."""

    workers: int = 4
    context: str = "fork"
    persistent: bool = False
    epochs: int = 3
    items: int = 64
    subset: bool = False  # the program trains on every other item, through torch's Subset

    @property
    def label(self) -> str:
        extra = ("-persistent" if self.persistent else "") + ("-subset" if self.subset else "")
        return f"{self.context}-w{self.workers}{extra}"

    def env(self) -> dict[str, str]:
        return {
            "WS_WORKERS": str(self.workers),
            "WS_CONTEXT": self.context,
            "WS_PERSISTENT": "1" if self.persistent else "0",
            "WS_EPOCHS": str(self.epochs),
            "WS_ITEMS": str(self.items),
            "WS_SUBSET": "1" if self.subset else "0",
        }


@dataclass(frozen=True)
class Outcome:
    """What one run of a program did."""

    returncode: int | None  # None: killed after the timeout
    summary: dict[str, Any] | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and bool(self.summary and self.summary.get("ok"))

    @property
    def error(self) -> str:
        return str(self.summary.get("error") or "") if self.summary else ""

    @property
    def wrong_items(self) -> int:
        return int(self.summary.get("wrong_items") or 0) if self.summary else 0

    @property
    def error_headline(self) -> str:
        """The original exception's last line (a worker's error comes with its traceback)."""
        lines = [line.strip() for line in self.error.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def describe(self) -> str:
        if self.timed_out:
            state = "TIMEOUT"
        elif self.ok:
            state = "ok"
        else:
            state = f"exit {self.returncode}"
        headline = self.error_headline
        details = f"wrong_items={self.wrong_items}" + (f" error={headline!r}" if headline else "")
        if self.summary is None:
            details = f"no summary; stderr tail: {self.stderr[-600:]!r}"
        return f"{state} in {self.seconds:.1f}s ({details})"


@dataclass
class Target:
    """Where the programs find their server and which CA they trust."""

    base_url: str
    ca_bundle: Path
    data_file: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, config: Config) -> dict[str, str]:
        env = dict(os.environ)
        env.update(config.env())
        env.update(
            {
                "WS_URL": self.base_url,
                "WS_TOKEN": TOKEN,
                # The machine exports REQUESTS_CA_BUNDLE, which overrides Session.verify.
                "REQUESTS_CA_BUNDLE": str(self.ca_bundle),
                "SSL_CERT_FILE": str(self.ca_bundle),
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        if self.data_file is not None:
            env["WS_DATA"] = str(self.data_file)
        env.update(self.extra_env)
        return env


def default_timeout(config: Config) -> float:
    return FORK_TIMEOUT if config.context == "fork" or config.workers == 0 else SPAWN_TIMEOUT


def run_program(
    program: Path, target: Target, config: Config, timeout: float | None = None
) -> Outcome:
    """Run ``program`` under ``config``; never leaves a process of its group behind.

    The program runs in a child of the preloaded interpreter (``preloaded.py``: torch already
    imported, the program run as ``__main__`` in its own session), or, with
    ``WORKERSAFE_RUNTIME_PRELOAD=0``, as ``python program.py`` in a fresh interpreter."""
    limit = timeout or default_timeout(config)
    if os.environ.get("WORKERSAFE_RUNTIME_PRELOAD", "1") != "0" and hasattr(os, "fork"):
        return _PRELOADED.run(program.resolve(), target.env(config), limit)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(program.resolve())],
        env=target.env(config),
        cwd=program.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    returncode: int | None
    try:
        stdout, stderr = proc.communicate(timeout=limit)
        returncode = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        stdout, stderr = proc.communicate()
        returncode = None
    finally:
        _kill_group(proc)  # workers that outlived their parent, or an exception here
    return Outcome(returncode, _summary(stdout), stdout, stderr, time.monotonic() - started)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    _kill_pgid(proc.pid)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _kill_pgid(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Preloaded:
    """The client of one ``preloaded.py`` server, started on first use and kept for the
    session; a server left in an unknown state (an error or interrupt mid-run) is discarded."""

    REPLY_LIMIT = 60.0  # seconds for the server to answer a start, or a killed child's end

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = b""  # what the server wrote past the last reply read
        self._dir = Path(tempfile.mkdtemp(prefix="ws-preloaded-"))
        atexit.register(self.remove)

    def _server(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            with open(self._dir / "server.log", "ab") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, str(Path(__file__).with_name("preloaded.py"))],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                )
            self._pending = b""
        return self._proc

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _reply(self, server: subprocess.Popen[bytes], limit: float) -> dict[str, Any] | None:
        """The server's next reply line, or None after ``limit`` seconds without one."""
        assert server.stdout is not None
        deadline = time.monotonic() + limit
        while b"\n" not in self._pending:
            ready, _, _ = select.select([server.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(server.stdout.fileno(), 65536)
            if not chunk:
                log = (self._dir / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the preloaded interpreter ended; its log: {log}")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, program: Path, env: dict[str, str], limit: float) -> Outcome:
        started = time.monotonic()
        server = self._server()
        out, err = self._dir / "stdout", self._dir / "stderr"
        request = {"program": str(program), "env": env, "cwd": str(program.parent),
                   "stdout": str(out), "stderr": str(err)}
        assert server.stdin is not None
        pid = None
        try:
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            start = self._reply(server, self.REPLY_LIMIT)
            if start is None:
                raise RuntimeError("the preloaded interpreter did not start the program")
            pid = int(start["pid"])
            end = self._reply(server, limit)
            if end is None:  # timed out: the whole group goes, then the server reaps it
                _kill_pgid(pid)
                if self._reply(server, self.REPLY_LIMIT) is None:
                    raise RuntimeError(f"program {pid} did not end after SIGKILL")
            returncode = None if end is None else int(end["returncode"])
        except BaseException:
            if pid is not None:
                _kill_pgid(pid)
            self.close()
            raise
        finally:
            if pid is not None:
                _kill_pgid(pid)  # workers that outlived their parent
        stdout = out.read_text(errors="replace")
        stderr = err.read_text(errors="replace")
        return Outcome(returncode, _summary(stdout), stdout, stderr, time.monotonic() - started)


_PRELOADED = _Preloaded()


def _summary(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "ok" in value:
                return value
    return None


def write_zip_archive(path: Path, items: int) -> Path:
    """The data file of ``zip_archive.py``: ``items/<i>.json`` holding what ``/item/<i>`` serves."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index in range(items):
            record = {"index": index, "payload": payload_for(index)}
            archive.writestr(f"items/{index}.json", json.dumps(record))
    return path


def _records(items: int) -> list[dict[str, Any]]:
    return [{"index": index, "payload": payload_for(index)} for index in range(items)]


def write_hdf5(path: Path, items: int) -> Path:
    """The data file of ``h5py_local_file.py``: datasets ``index`` and ``payload``."""
    import h5py
    import numpy as np

    with h5py.File(path, "w") as handle:
        handle["index"] = np.arange(items, dtype="i8")
        handle["payload"] = np.array([r["payload"].encode() for r in _records(items)])
    return path


def write_fasta(path: Path, items: int) -> Path:
    """The data file of ``pyfaidx_fasta.py``: record ``item<i>`` holds item i's payload, in
    lines of 60 characters (a FASTA reader takes any letters), with its ``.fai`` index."""
    with open(path, "w", encoding="ascii") as fasta:
        for record in _records(items):
            payload = record["payload"]
            fasta.write(f">item{record['index']}\n")
            fasta.writelines(payload[k:k + 60] + "\n" for k in range(0, len(payload), 60))
    import pyfaidx

    pyfaidx.Faidx(str(path)).close()  # writes the index
    return path


def write_sqlite(path: Path, items: int) -> Path:
    """The data file of ``sqlite_derived_cursor.py``: table ``items(id, payload)``."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, payload TEXT)")
        conn.executemany("INSERT INTO items VALUES (?, ?)",
                         [(r["index"], r["payload"]) for r in _records(items)])
    conn.close()
    return path


def write_lmdb_shards(root: Path, items: int, shards: int = 3) -> Path:
    """The data of ``lmdb_shards.py``: ``<root>/<n>.lmdb`` shards of consecutive items, each
    keyed by the item's position in its shard."""
    import lmdb

    root.mkdir(parents=True, exist_ok=True)
    records = _records(items)
    size = -(-items // shards)
    for shard in range(shards):
        env = lmdb.open(str(root / f"{shard}.lmdb"), map_size=1 << 24)
        with env.begin(write=True) as txn:
            for offset, record in enumerate(records[shard * size:(shard + 1) * size]):
                txn.put(str(offset).encode(), json.dumps(record).encode())
        env.close()
    return root


@dataclass(frozen=True)
class RunRecord:
    program: str
    stage: str  # "unfixed", "worker-init", "lazy", ...
    config: str
    tries: int
    outcome: Outcome


RUN_LOG: list[RunRecord] = []


def record(program: str, stage: str, config: Config, outcome: Outcome, tries: int = 1) -> None:
    RUN_LOG.append(RunRecord(program, stage, config.label, tries, outcome))


def format_run_log() -> str:
    rows = [("program", "stage", "config", "tries", "outcome")]
    rows += [
        (r.program, r.stage, r.config, str(r.tries), r.outcome.describe()[:160]) for r in RUN_LOG
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4]
        for row in rows
    )


def workersafe_command() -> list[str] | None:
    """How to run the CLI: the console script next to this interpreter; None if not installed."""
    try:
        import workersafe  # noqa: F401
    except ImportError:
        return None
    script = Path(sys.executable).with_name("workersafe")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workersafe"]


def run_workersafe(
    command: list[str], args: list[str], cwd: Path, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
