"""What a live handle is doing: open or closed, and what the parent already did with it (open
pooled connections, a file position). One probe per `HandleType.runtime_probe`; every probe
reads attributes only (no I/O) and treats anything unexpected as "open, state unknown"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class State:
    open: bool  # False: closed (or, for a connection pool, holding no connection)
    detail: str  # what the parent did with it, for the report ("" when unknown)


def probe(kind: str, obj: Any) -> State:
    try:
        return _PROBES.get(kind, _live)(obj)
    except Exception:  # noqa: BLE001 - a library's internals changed: report it as open
        return State(True, "")


def _live(obj: Any) -> State:
    return State(True, "")


def _pool_connections(pool: Any) -> int:
    """Open connections idle in one urllib3 connection pool."""
    queue = getattr(getattr(pool, "pool", None), "queue", None) or ()
    return sum(1 for conn in list(queue) if conn is not None and getattr(conn, "sock", None))


def _manager_connections(manager: Any) -> int:
    pools = getattr(getattr(manager, "pools", None), "_container", None) or {}
    return sum(_pool_connections(pool) for pool in list(pools.values()))


def _httpcore_connections(transport: Any) -> int:
    connections = getattr(getattr(transport, "_pool", None), "connections", None) or ()
    return sum(1 for conn in list(connections) if not conn.is_closed())


def _http_pool(obj: Any) -> State:
    if getattr(obj, "is_closed", False) is True:  # httpx
        return State(False, "closed")
    count = 0
    adapters = getattr(obj, "adapters", None)  # requests.Session
    if isinstance(adapters, dict):
        count += sum(_manager_connections(getattr(a, "poolmanager", None))
                     for a in list(adapters.values()))
    if hasattr(obj, "pools"):  # urllib3 PoolManager
        count += _manager_connections(obj)
    if hasattr(obj, "pool") and hasattr(obj, "host"):  # urllib3 HTTP(S)ConnectionPool
        count += _pool_connections(obj)
    if hasattr(obj, "_transport"):  # httpx.Client: its transport and mounted ones
        transports = [obj._transport, *dict(getattr(obj, "_mounts", None) or {}).values()]
        count += sum(_httpcore_connections(t) for t in transports if t is not None)
    if not count:
        return State(False, "no open connection in its pool")
    plural = "s" if count > 1 else ""
    return State(True, f"{count} open connection{plural} in its pool (the parent used it)")


def _socket(obj: Any) -> State:
    if obj.fileno() == -1:
        return State(False, "closed")
    try:
        peer = obj.getpeername()
    except OSError:
        return State(True, "open, not connected")
    return State(True, f"connected to {peer[0]}:{peer[1]}" if isinstance(peer, tuple)
                 else f"connected to {peer}")


def _h5py(obj: Any) -> State:
    if not obj.id.valid:
        return State(False, "closed")
    name = getattr(getattr(obj, "file", None), "filename", "")
    return State(True, f"open: {name}" + (f", object {obj.name}" if obj.name != "/" else ""))


def _lmdb(obj: Any) -> State:
    for method in ("path", "id", "key"):  # Environment, Transaction, Cursor
        call: Optional[Callable[[], Any]] = getattr(obj, method, None)
        if call is not None:
            try:
                value = call()
            except Exception:  # noqa: BLE001 - lmdb.Error: closed, aborted or dropped
                return State(False, "closed")
            if method == "path":
                return State(True, f"open: {value}")
            return State(True, "open (a transaction: the parent's reader slot)"
                         if method == "id" else "open")
    return State(True, "")


def _dbapi(obj: Any) -> State:
    connection = getattr(obj, "connection", None)
    if connection is not None and connection is not obj and not callable(connection):
        if not _dbapi(connection).open:  # a cursor of a closed connection
            return State(False, "closed")
    closed = getattr(obj, "closed", None)
    if isinstance(closed, (bool, int)) and not isinstance(obj, type):
        return State(not closed, "closed" if closed else "open")
    is_open = getattr(obj, "open", None)
    if isinstance(is_open, bool):
        return State(is_open, "open" if is_open else "closed")
    if hasattr(type(obj), "total_changes"):  # sqlite3.Connection: reading it raises once closed
        try:
            obj.total_changes
        except Exception:  # noqa: BLE001 - sqlite3.ProgrammingError
            return State(False, "closed")
        return State(True, "open" + (", in a transaction" if obj.in_transaction else ""))
    return State(True, "open")


def _file_position(fileobj: Any) -> str:
    try:
        return f"file position {fileobj.tell()}"
    except Exception:  # noqa: BLE001 - not seekable, or closed underneath
        return ""


def _zip(obj: Any) -> State:
    if obj.fp is None:
        return State(False, "closed")
    where = _file_position(obj.fp)
    return State(True, f"open: {obj.filename}" + (f", {where}" if where else ""))


def _tar(obj: Any) -> State:
    if obj.closed:
        return State(False, "closed")
    where = _file_position(obj.fileobj)
    return State(True, f"open: {obj.name}" + (f", {where}" if where else ""))


_PROBES: dict[str, Callable[[Any], State]] = {
    "http-pool": _http_pool,
    "socket": _socket,
    "h5py": _h5py,
    "lmdb": _lmdb,
    "dbapi": _dbapi,
    "zip": _zip,
    "tar": _tar,
}
