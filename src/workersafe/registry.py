"""The table of handle constructors: which calls create a resource that worker processes must
not share. Data, not code: one row per constructor, extended and trimmed by configuration."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping


@dataclass(frozen=True)
class HandleType:
    """One constructor of a fork-unsafe (or unpicklable) resource."""

    name: str  # qualified constructor name, e.g. "requests.Session"
    fork_safe: bool  # survives fork (e.g. redis-py resets its pool after fork)
    picklable: bool  # survives being pickled into a spawn/forkserver worker
    problem: str  # what goes wrong when workers share it, for messages
    derived_methods: tuple[str, ...] = ()  # methods whose result keeps the handle alive
    derived_subscript: bool = False  # `handle[key]` keeps the handle alive (h5py)
    single_open: bool = False  # a second open in the same process fails (lmdb)

    @property
    def module_root(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


_HTTP = "workers share one connection pool (TLS errors, responses for another worker's request)"
_CLOUD = "workers share one connection pool (TLS errors, hangs)"
_GRPC = "workers share one gRPC channel (hangs, 'Fork support is only compatible with epoll1')"
_DB = "workers share one database connection (corrupted protocol state, wrong rows)"
_FILE = "workers share one file descriptor and offset (wrong bytes, BadZipFile, crashes)"
_H5 = "workers share one HDF5 file handle (corrupted reads, crashes)"
_LMDB = "workers share one LMDB environment (MDB_BAD_RSLOT, crashes)"
_REDIS = "a redis client does not pickle"

# name, fork_safe, picklable, problem, derived methods, derived by subscript
_ROWS: tuple[tuple[str, bool, bool, str, tuple[str, ...], bool], ...] = (
    ("requests.Session", False, True, _HTTP, (), False),
    ("requests.session", False, True, _HTTP, (), False),
    ("requests.sessions.Session", False, True, _HTTP, (), False),
    ("requests.sessions.session", False, True, _HTTP, (), False),
    ("httpx.Client", False, False, _HTTP, (), False),
    ("httpx.AsyncClient", False, False, _HTTP, (), False),
    ("urllib3.PoolManager", False, False, _HTTP, (), False),
    ("urllib3.ProxyManager", False, False, _HTTP, (), False),
    ("urllib3.HTTPConnectionPool", False, False, _HTTP, (), False),
    ("urllib3.HTTPSConnectionPool", False, False, _HTTP, (), False),
    ("urllib3.connectionpool.HTTPConnectionPool", False, False, _HTTP, (), False),
    ("urllib3.connectionpool.HTTPSConnectionPool", False, False, _HTTP, (), False),
    ("urllib3.connection_from_url", False, False, _HTTP, (), False),
    ("urllib3.connectionpool.connection_from_url", False, False, _HTTP, (), False),
    ("aiohttp.ClientSession", False, False, _HTTP, (), False),
    ("boto3.client", False, False, _CLOUD, (), False),
    ("boto3.resource", False, False, _CLOUD, ("Bucket", "Table", "Object"), False),
    ("boto3.Session", False, False, _CLOUD, ("client", "resource"), False),
    ("boto3.session.Session", False, False, _CLOUD, ("client", "resource"), False),
    ("google.cloud.storage.Client", False, False, _CLOUD, ("bucket", "get_bucket"), False),
    ("grpc.insecure_channel", False, False, _GRPC, (), False),
    ("grpc.secure_channel", False, False, _GRPC, (), False),
    ("sqlite3.connect", False, False, _DB, ("cursor",), False),
    ("psycopg2.connect", False, False, _DB, ("cursor",), False),
    ("psycopg.connect", False, False, _DB, ("cursor",), False),
    ("pymongo.MongoClient", False, False, _DB, ("get_database", "get_collection"), True),
    ("sqlalchemy.create_engine", False, False, _DB, ("connect", "begin", "raw_connection"), False),
    ("redis.Redis", True, False, _REDIS, ("pipeline", "pubsub"), False),
    ("redis.StrictRedis", True, False, _REDIS, ("pipeline", "pubsub"), False),
    ("redis.from_url", True, False, _REDIS, ("pipeline", "pubsub"), False),
    ("redis.Redis.from_url", True, False, _REDIS, ("pipeline", "pubsub"), False),
    ("h5py.File", False, False, _H5, ("get", "require_dataset", "require_group"), True),
    ("lmdb.open", False, False, _LMDB, ("begin", "open_db"), False),
    ("lmdb.Environment", False, False, _LMDB, ("begin", "open_db"), False),
    ("zipfile.ZipFile", False, False, _FILE, ("open",), False),
    ("tarfile.open", False, False, _FILE, ("extractfile",), False),
    ("tarfile.TarFile", False, False, _FILE, ("extractfile",), False),
    ("tarfile.TarFile.open", False, False, _FILE, ("extractfile",), False),
)

# py-lmdb refuses to open an environment already open in the process (even one inherited
# through fork): the fix drops the old one before opening again.
_SINGLE_OPEN = frozenset({"lmdb.open", "lmdb.Environment"})

# Methods whose result is a derived handle whatever the handle type (DB cursors, transactions).
GENERIC_DERIVED_METHODS = frozenset({"cursor", "begin"})
# Methods that only configure a handle they are called on (`session.mount(...)`,
# `session.headers.update(...)`, `conn.create_function(...)`): the fixer moves such calls into
# the opener with the creation. (`execute` configures only with a PRAGMA; see fix/handles.py.)
CONFIGURATION_CALLS = frozenset({
    "mount", "update", "setdefault", "set", "add", "append", "extend", "register", "load",
    "set_trace_callback", "create_function", "create_aggregate", "create_collation",
    "set_authorizer", "set_progress_handler",
})
# A call to a callable whose name ends like this, with a handle as argument, builds on the
# handle (gRPC stubs: `FooStub(channel)`).
DERIVED_CALLABLE_SUFFIXES = ("Stub",)


def _builtin() -> dict[str, HandleType]:
    return {
        name: HandleType(name, fork_safe, picklable, problem, derived, subscript,
                         single_open=name in _SINGLE_OPEN)
        for name, fork_safe, picklable, problem, derived, subscript in _ROWS
    }


@dataclass(frozen=True)
class Registry:
    """Handle types by qualified constructor name."""

    types: Mapping[str, HandleType] = field(default_factory=_builtin)

    def lookup(self, qualified_name: str) -> HandleType | None:
        return self.types.get(qualified_name)

    def module_roots(self) -> frozenset[str]:
        return frozenset(t.module_root for t in self.types.values())

    def short_names(self) -> frozenset[str]:
        return frozenset(t.short_name for t in self.types.values())

    def prefilter_pairs(self) -> frozenset[tuple[str, str]]:
        """(module root, constructor short name): a file that creates this handle contains both."""
        return frozenset((t.module_root, t.short_name) for t in self.types.values())

    def with_config(self, extra: Iterable[str] = (), disabled: Iterable[str] = ()) -> Registry:
        types = dict(self.types)
        for name in extra:
            types[name] = HandleType(
                name, fork_safe=False, picklable=False,
                problem="workers share one handle (configured in extra-handles)",
            )
        for name in disabled:
            types.pop(name, None)
        return replace(self, types=types)


DEFAULT_REGISTRY = Registry()
