"""The table of handle constructors: which calls create a resource that worker processes must
not share. Data, not code: one row per constructor, extended and trimmed by configuration."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping


# Generic knowledge, whatever the library: methods whose result is a derived handle (DB cursors,
# transactions), calls that release a handle, and a callable name ending that builds on a
# handle passed to it (gRPC stubs: `FooStub(channel)`).
GENERIC_DERIVED_METHODS = frozenset({"cursor", "begin"})
GENERIC_CLOSERS = frozenset({"close", "shutdown", "dispose", "terminate"})
DERIVED_CALLABLE_SUFFIXES = ("Stub",)
# Reading `handle.<attr>` with one of these does no I/O: it configures the handle.
GENERIC_CONFIG_ATTRS = frozenset({"close", "timeout"})
# A statement calling one of these on a handle only configures it (`s.headers.update(...)`).
GENERIC_CONFIG_CALLS = frozenset({
    "update", "setdefault", "set", "add", "append", "extend", "register", "load",
})
# A statement in one of these prefixes only sets up the connection it runs on (`sql_config_calls`).
CONFIGURING_SQL = ("PRAGMA",)


@dataclass(frozen=True)
class HandleType:
    """One constructor of a fork-unsafe (or unpicklable) resource."""

    name: str  # qualified constructor name, e.g. "requests.Session"
    fork_safe: bool  # survives fork (e.g. redis-py resets its pool after fork)
    picklable: bool  # survives being pickled into a spawn/forkserver worker
    derived_methods: tuple[str, ...] = ()  # methods whose result keeps the handle alive
    derived_subscript: bool = False  # `handle[key]` keeps the handle alive (h5py)
    # a subscript of a derived value may read data out of it (h5py: `f["x"][i]`); when False
    # every subscript keeps the handle (pymongo: `client[name][coll]` is a collection)
    subscript_reads: bool = True
    single_open: bool = False  # a second open in the same process fails (lmdb)
    # a second open of the same file in one process returns the first, the one a forked
    # worker inherited included (h5py: same HDF5 file id, same descriptor)
    shares_open: bool = False
    # Sorted tuples, not sets: a row's repr is part of the cache key, and must not depend on
    # the process's string hashing.
    closers: tuple[str, ...] = tuple(sorted(GENERIC_CLOSERS))  # methods that release it
    config_attrs: tuple[str, ...] = tuple(sorted(GENERIC_CONFIG_ATTRS))  # read only to configure
    config_calls: tuple[str, ...] = tuple(sorted(GENERIC_CONFIG_CALLS))  # called only to configure
    # methods that only configure when given a `CONFIGURING_SQL` statement (`conn.execute("PRAGMA
    # ...")`); any other query is the parent's own work
    sql_config_calls: tuple[str, ...] = ()

    @property
    def drop_before_reopen(self) -> bool:
        """The fix drops the old handle (never closes it) before opening the new one."""
        return self.single_open or self.shares_open

    @property
    def module_root(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


_HTTP_CONFIG_ATTRS = GENERIC_CONFIG_ATTRS | {
    "headers", "mount", "auth", "verify", "proxies", "cert", "params", "cookies", "trust_env",
    "max_redirects", "hooks", "adapters", "base_url", "event_hooks",
}
_HTTP_CONFIG_CALLS = GENERIC_CONFIG_CALLS | {"mount"}
_DB_CONFIG_CALLS = GENERIC_CONFIG_CALLS | {
    "set_trace_callback", "row_factory", "create_function",
    "create_aggregate", "create_collation", "set_authorizer", "set_progress_handler",
}

# One template per family of libraries; a row is its template with a name (and overrides).
# HTTP: workers share one connection pool (TLS errors, responses for another worker's request).
_HTTP = HandleType(
    name="", fork_safe=False, picklable=False,
    config_attrs=tuple(sorted(_HTTP_CONFIG_ATTRS)), config_calls=tuple(sorted(_HTTP_CONFIG_CALLS)))
# cloud SDKs: workers share one connection pool (TLS errors, hangs)
_CLOUD = HandleType(name="", fork_safe=False, picklable=False)
# gRPC: workers share one channel (hangs, "Fork support is only compatible with epoll1")
_GRPC = HandleType(name="", fork_safe=False, picklable=False)
# databases: workers share one connection (corrupted protocol state, wrong rows)
_DB = HandleType(name="", fork_safe=False, picklable=False,
                 derived_methods=("cursor",), config_calls=tuple(sorted(_DB_CONFIG_CALLS)),
                 sql_config_calls=("execute", "executescript"))
# archives: workers share one file descriptor and offset (wrong bytes, BadZipFile, crashes)
_FILE = HandleType(name="", fork_safe=False, picklable=False)
# HDF5: workers share one file handle (corrupted reads, crashes). h5py returns the file a forked
# worker inherited when it opens that file again: the fix drops the old objects first. HDF5
# then closes the child's copy only (its descriptor; for a file read, the parent's reads and its
# file lock stay as they were).
_H5 = HandleType(name="", fork_safe=False, picklable=False,
                 derived_methods=("get", "require_dataset", "require_group"),
                 derived_subscript=True, shares_open=True)
# LMDB: workers share one environment (MDB_BAD_RSLOT, crashes). py-lmdb refuses to open an
# environment already open in the process (even one inherited through fork): the fix drops the
# old one before opening again. Dropping is safe where closing is not: py-lmdb's finalizers
# skip a forked child, while `close()` there would abort the inherited read transaction in the
# parent's shared reader table.
_LMDB = HandleType(name="", fork_safe=False, picklable=False,
                   derived_methods=("begin", "open_db"), single_open=True)
# PyTables and netCDF4 files (HDF5): read in forked workers (4 workers, 20,000 random rows each
# way, parent read first), they gave no wrong row: their reads are positioned, and each process
# keeps its own cache. Their objects do not pickle: spawn and forkserver workers crash.
_HDF_READER = HandleType(name="", fork_safe=True, picklable=False)
# redis-py resets its pool after fork, but a client does not pickle
_REDIS = HandleType(name="", fork_safe=True, picklable=False,
                    derived_methods=("pipeline", "pubsub"))


def _rows() -> tuple[HandleType, ...]:
    http_pickles = replace(_HTTP, picklable=True)  # requests' Session pickles (its pool not)
    # a pool manager's per-host pools keep its sockets (`http.connection_from_url(URL)`)
    pools = replace(_HTTP, derived_methods=("connection_from_url", "connection_from_host"))
    azure = replace(_CLOUD, derived_methods=("get_container_client", "get_blob_client"))
    return (
        replace(http_pickles, name="requests.Session"),
        replace(http_pickles, name="requests.session"),
        replace(http_pickles, name="requests.sessions.Session"),
        replace(http_pickles, name="requests.sessions.session"),
        replace(_HTTP, name="httpx.Client"),
        replace(_HTTP, name="httpx.AsyncClient"),
        replace(pools, name="urllib3.PoolManager"),
        replace(pools, name="urllib3.ProxyManager"),
        replace(_HTTP, name="urllib3.HTTPConnectionPool"),
        replace(_HTTP, name="urllib3.HTTPSConnectionPool"),
        replace(_HTTP, name="urllib3.connectionpool.HTTPConnectionPool"),
        replace(_HTTP, name="urllib3.connectionpool.HTTPSConnectionPool"),
        replace(_HTTP, name="urllib3.connection_from_url"),
        replace(_HTTP, name="urllib3.connectionpool.connection_from_url"),
        replace(_HTTP, name="aiohttp.ClientSession"),
        replace(_CLOUD, name="boto3.client"),
        replace(_CLOUD, name="boto3.resource", derived_methods=("Bucket", "Table", "Object")),
        replace(_CLOUD, name="boto3.Session", derived_methods=("client", "resource")),
        replace(_CLOUD, name="boto3.session.Session", derived_methods=("client", "resource")),
        replace(_CLOUD, name="google.cloud.storage.Client",
                derived_methods=("bucket", "get_bucket")),
        replace(_GRPC, name="grpc.insecure_channel"),
        replace(_GRPC, name="grpc.secure_channel"),
        replace(_DB, name="sqlite3.connect"),
        replace(_DB, name="psycopg2.connect"),
        replace(_DB, name="psycopg.connect"),
        replace(_DB, name="pymongo.MongoClient",
                derived_methods=("get_database", "get_collection"), derived_subscript=True,
                subscript_reads=False),
        replace(_DB, name="sqlalchemy.create_engine",
                derived_methods=("connect", "begin", "raw_connection")),
        replace(_REDIS, name="redis.Redis"),
        replace(_REDIS, name="redis.StrictRedis"),
        replace(_REDIS, name="redis.from_url"),
        replace(_REDIS, name="redis.Redis.from_url"),
        replace(_DB, name="pymysql.connect"),
        replace(_DB, name="pymysql.Connect"),
        replace(_DB, name="MySQLdb.connect"),
        replace(_DB, name="mysql.connector.connect"),
        replace(_DB, name="duckdb.connect"),
        replace(_DB, name="pyodbc.connect"),
        replace(_DB, name="oracledb.connect"),
        replace(_DB, name="cx_Oracle.connect"),
        replace(_CLOUD, name="minio.Minio"),
        replace(azure, name="azure.storage.blob.BlobServiceClient"),
        replace(azure, name="azure.storage.blob.BlobServiceClient.from_connection_string"),
        replace(azure, name="azure.storage.blob.ContainerClient"),
        replace(azure, name="azure.storage.blob.ContainerClient.from_connection_string"),
        replace(_H5, name="h5py.File"),
        replace(_HDF_READER, name="tables.open_file", derived_methods=("get_node",)),
        replace(_HDF_READER, name="netCDF4.Dataset", derived_subscript=True),
        replace(_LMDB, name="lmdb.open"),
        replace(_LMDB, name="lmdb.Environment"),
        replace(_FILE, name="zipfile.ZipFile", derived_methods=("open",)),
        replace(_FILE, name="tarfile.open", derived_methods=("extractfile",)),
        replace(_FILE, name="tarfile.TarFile", derived_methods=("extractfile",)),
        replace(_FILE, name="tarfile.TarFile.open", derived_methods=("extractfile",)),
    )


def _builtin() -> dict[str, HandleType]:
    return {row.name: row for row in _rows()}


@dataclass(frozen=True)
class Registry:
    """Handle types by qualified constructor name."""

    types: Mapping[str, HandleType] = field(default_factory=_builtin)

    def lookup(self, qualified_name: str) -> HandleType | None:
        return self.types.get(qualified_name)

    def closers(self) -> frozenset[str]:
        """Methods that release a handle, of any known type."""
        return _union(GENERIC_CLOSERS, (t.closers for t in self.types.values()))

    def config_attrs(self) -> frozenset[str]:
        """Attributes read only to configure a handle, of any known type."""
        return _union(GENERIC_CONFIG_ATTRS, (t.config_attrs for t in self.types.values()))

    def derived_methods(self, handle: str) -> frozenset[str]:
        """Methods whose result, called on a `handle` (a registry key), keeps it alive."""
        htype = self.lookup(handle)
        return GENERIC_DERIVED_METHODS.union(htype.derived_methods if htype else ())

    def short_names(self) -> frozenset[str]:
        """The constructors' last name parts (`Session`, `open`): what a subclass's base ends in."""
        return frozenset(t.short_name for t in self.types.values())

    def module_roots(self) -> frozenset[str]:
        """The libraries' top-level modules (`lmdb`, `h5py`, `boto3`)."""
        return frozenset(t.module_root for t in self.types.values())

    def prefilter_pairs(self) -> frozenset[tuple[str, str]]:
        """(module root, constructor short name): a file that creates this handle contains both."""
        return frozenset((t.module_root, t.short_name) for t in self.types.values())

    def with_config(self, extra: Iterable[str] = (), disabled: Iterable[str] = ()) -> Registry:
        types = dict(self.types)
        for name in extra:
            types[name] = HandleType(name, fork_safe=False, picklable=False)
        for name in disabled:
            types.pop(name, None)
        return replace(self, types=types)


DEFAULT_REGISTRY = Registry()


def _union(base: frozenset[str], more: Iterable[tuple[str, ...]]) -> frozenset[str]:
    return base.union(*more)
