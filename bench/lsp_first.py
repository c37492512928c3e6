"""The language server's first diagnostics on a large repository, against a bare `ast.parse`
of the same tree (issue 21: "within the same bound", at most 1.0x its CPU).

A real LSP session over stdio (`python -m workersafe server`, rooted at the repository, the
facts cache off as in a first start): `initialize`, `initialized`, `textDocument/didOpen` of
one file, then the server's `publishDiagnostics` notifications for that file are timed. The
server's CPU (user+system, its waited-for children included) is read from
`/proc/<pid>/stat` the moment each notification arrives, so it covers the server's start-up
(Python, pygls, the imports) and everything up to that answer. The first notification may
be the opened file alone (a large workspace); the linked one follows: both are reported.
The floor (`ast_floor.py .` in the repository) alternates with the server, `--reps` times.

Usage: ``PYTHONPATH=src python bench/lsp_first.py REPO/path/to/file.py [...] --reps 3``
(the repository: `--root`, else the nearest ancestor with `.git`). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Optional

HERE = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds of `pid` and its reaped children (utime, stime, cutime, cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICKS


def send(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def receive(stream: BinaryIO) -> dict[str, Any]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def first_diagnostics(root: Path, target: Path, timeout: float, linked_within: float
                      ) -> dict[str, Any]:
    """One session: server CPU and wall at each diagnostics for `target` (the first, and the
    one after the linked analysis when the first was the file alone)."""
    start = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "workersafe", "server"], cwd=root,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    inbox: queue.Queue[tuple[float, float, dict[str, Any]]] = queue.Queue()

    def read(stream: BinaryIO, pid: int) -> None:
        try:
            while True:
                message = receive(stream)
                inbox.put((time.perf_counter(), proc_cpu(pid), message))
        except (EOFError, OSError, ValueError):
            return

    threading.Thread(target=read, args=(server.stdout, server.pid), daemon=True).start()

    def next_message(until: float) -> Optional[tuple[float, float, dict[str, Any]]]:
        try:
            return inbox.get(timeout=max(until - time.perf_counter(), 0.001))
        except queue.Empty:
            return None

    uri = target.resolve().as_uri()
    out: dict[str, Any] = {"diagnostics": []}
    deadline = start + timeout
    try:
        send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": root.resolve().as_uri(),
            "capabilities": {}, "initializationOptions": {"cache": False},
            "workspaceFolders": [{"uri": root.resolve().as_uri(), "name": root.name}]}})
        while (got := next_message(deadline)) is not None:
            if got[2].get("id") == 1:
                out["initialized_cpu"] = got[1]
                break
        send(server.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send(server.stdin, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 1,
                             "text": target.read_text(encoding="utf-8")}}})
        until = deadline
        while (got := next_message(until)) is not None:
            at, cpu, message = got
            if "id" in message and "method" in message:  # a request to the client: answer it
                send(server.stdin, {"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("method") != "textDocument/publishDiagnostics" or \
                    message["params"]["uri"] != uri:
                continue
            out["diagnostics"].append({
                "cpu": cpu, "wall": at - start,
                "codes": sorted(str(d.get("code", "")) for d in message["params"]["diagnostics"])})
            if len(out["diagnostics"]) == 2:
                break
            until = min(deadline, at + linked_within)  # the linked one may follow
        send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        while (got := next_message(time.perf_counter() + 60)) is not None:
            if got[2].get("id") == 2:
                break
        send(server.stdin, {"jsonrpc": "2.0", "method": "exit"})
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return out


def floor_cpu(root: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, str(HERE / "ast_floor.py"), "."], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def repo_root(path: Path) -> Path:
    for directory in path.resolve().parents:
        if (directory / ".git").exists():
            return directory
    return path.resolve().parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--root", type=Path, help="the workspace (default: the .git above)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--linked-within", type=float, default=300,
                        help="seconds to wait for the linked diagnostics after the first")
    args = parser.parse_args(argv)
    print("| repository (file) | .py files | parse floor CPU | first diagnostics: server CPU "
          "(since `initialize` answered) | ratio | linked diagnostics: server CPU | ratio |")
    print("|---|---|---|---|---|---|---|")
    for target in args.files:
        root = args.root or repo_root(target)
        floors, firsts, since_init, linked = [], [], [], []
        for rep in range(args.reps):
            for side in (("server", "floor") if rep % 2 == 0 else ("floor", "server")):
                if side == "floor":
                    floors.append(floor_cpu(root))
                    continue
                run = first_diagnostics(root, target, args.timeout, args.linked_within)
                print(json.dumps({"file": str(target), **run}), file=sys.stderr)
                notes = run["diagnostics"]
                firsts.append(notes[0]["cpu"])
                since_init.append(notes[0]["cpu"] - run["initialized_cpu"])
                linked.append(notes[-1]["cpu"])
        floor = statistics.median(floors)
        first, init, last = (statistics.median(v) for v in (firsts, since_init, linked))
        files = sum(1 for _ in root.rglob("*.py"))
        print(f"| {root.name} ({target.resolve().relative_to(root.resolve())}) | {files:,} | "
              f"{floor:.2f} s | {first:.2f} s ({init:.2f} s) | {first / floor:.2f}x | "
              f"{last:.2f} s | {last / floor:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
