"""The table of handle constructors: which calls create a resource that worker processes must
not share. Data, not code: one row per constructor, extended and trimmed by configuration."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from .records import field, record, replace

# Generic knowledge, whatever the library: methods whose result is a derived handle (DB cursors,
# transactions), calls that release a handle, and a callable name ending that builds on a
# handle passed to it (gRPC stubs: `FooStub(channel)`).
GENERIC_DERIVED_METHODS = frozenset({"cursor", "begin"})
GENERIC_CLOSERS = frozenset({"close", "shutdown", "dispose", "terminate"})
DERIVED_CALLABLE_SUFFIXES = ("Stub",)
# Builtins whose result holds the objects of the one iterable they are given (`list(it)`; the
# pairs themselves of a pair method, `sorted(f.items())`), and those holding the objects of the
# (name, object) pairs they are given (`dict(f.items())`)
ELEMENT_KEEPERS = ("list", "tuple", "sorted")
PAIR_KEEPERS = ("dict",)
# Reading `handle.<attr>` with one of these does no I/O: it configures the handle.
GENERIC_CONFIG_ATTRS = frozenset({"close", "timeout"})
# A statement calling one of these on a handle only configures it (`s.headers.update(...)`).
GENERIC_CONFIG_CALLS = frozenset({
    "update", "setdefault", "set", "add", "append", "extend", "register", "load",
})
# A statement in one of these prefixes only sets up the connection it runs on (`sql_config_calls`):
# settings, an attached database, a temporary table or view (they live in the connection, so a
# connection opened again must run them again). Upper case, single spaces.
CONFIGURING_SQL = ("PRAGMA", "ATTACH", "CREATE TEMP ", "CREATE TEMPORARY ")
# Calls whose value differs from one call (or process) to the next: a creation reading one
# (`h5py.File(random.choice(paths))`) made again in a worker would open another file than the
# parent's. A name ending in "." is a module: any of its functions.
VARYING_CALLS = ("random.", "numpy.random.", "np.random.", "secrets.", "uuid.uuid1", "uuid.uuid4",
                 "time.time", "time.time_ns", "time.monotonic", "time.perf_counter",
                 "datetime.now", "datetime.datetime.now", "datetime.utcnow",
                 "datetime.datetime.utcnow", "os.urandom", "os.getpid", "torch.rand",
                 "torch.randn", "torch.randint", "torch.randperm", "tempfile.mkstemp",
                 "tempfile.mkdtemp", "tempfile.mktemp")
# Calls returning an open file object: a handle built on one (`zipfile.ZipFile(f)`,
# `tarfile.open(fileobj=f)`) reads through its descriptor and offset, which a reopen of the
# handle alone would leave shared (the fix opens both again or neither).
FILE_OBJECT_OPENERS = ("open", "builtins.open", "io.open", "gzip.open", "bz2.open", "lzma.open",
                       "codecs.open", "os.fdopen", "io.FileIO")


@record(frozen=True)
class HandleType:
    """One constructor of a fork-unsafe (or unpicklable) resource."""

    name: str  # qualified constructor name, e.g. "requests.Session"
    fork_safe: bool  # survives fork (e.g. redis-py resets its pool after fork)
    picklable: bool  # survives being pickled into a spawn/forkserver worker
    derived_methods: tuple[str, ...] = ()  # methods whose result keeps the handle alive
    derived_subscript: bool = False  # `handle[key]` keeps the handle alive (h5py)
    # methods whose result is an iterable of objects each keeping the handle, so `list(...)`
    # of it or `[b for b in ...]` keeps it too (`client.list_blobs()`'s blobs; never an lmdb
    # cursor's or an h5py file's, whose elements are plain bytes and names)
    iterable_methods: tuple[str, ...] = ()
    # methods whose result lists (name, object) pairs, each object keeping the handle, so
    # `dict(...)` of it or `{k: g for k, g in ...}` keeps it too, as `list(...)` or
    # `sorted(...)` of the pairs does (an h5py file's `items()`)
    pair_methods: tuple[str, ...] = ()
    # a subscript of a derived value may read data out of it (h5py: `f["x"][i]`); when False
    # every subscript keeps the handle (pymongo: `client[name][coll]` is a collection)
    subscript_reads: bool = True
    # attributes naming the handle's root node (PyTables' `f.root`): it, a child named on it
    # (`f.root.images`, natural naming: one attribute, not a `_v_`/`_f_` one) and a member
    # taken from it by key (`f.root[name]`) are nodes, each keeping the file
    node_attrs: tuple[str, ...] = ()
    single_open: bool = False  # a second open in the same process fails (lmdb)
    # a second open of the same file in one process returns the first, the one a forked
    # worker inherited included (h5py: same HDF5 file id, same descriptor)
    shares_open: bool = False
    # a forked child may drop one it inherited (its last reference gone, its finalizer runs
    # there): the finalizer releases the child's copy only (a descriptor, a mapping), so the
    # fix may empty a cache of them in each forked worker. False where it speaks for the
    # parent: a network database's finalizer ends the session on the shared socket (libpq's
    # PQfinish sends Terminate, MySQL's COM_QUIT; a pool rolls back what it returns), gRPC's
    # core tears a channel down with threads a forked child does not have
    dropped_in_child: bool = True
    # a forked child dropping one it inherited hangs (measured: the video readers, FFmpeg
    # underneath). The fix, which opens a worker's own in place of the inherited one, is
    # refused for it (`fix.rewrite._not_reopenable`)
    hangs_when_dropped_in_child: bool = False
    # where the constructor takes its mode (`zipfile.ZipFile(path, "w")`, or `mode=`): the
    # positional index, 0 when it takes none. A file opened other than for reading is written
    # as it closes (a zip's central directory, HDF5's metadata), a forked child's dropped copy
    # included: the fix does not drop one in a child
    mode_position: int = 0
    # what the first argument (or `target_keyword`) names when the store lives only in the
    # handle (sqlite3's ":memory:" and "" databases): opened again in another process, the
    # handle starts empty, so the fix never reopens one (string literals; a URI's "mode=memory"
    # counts as well)
    in_memory_targets: tuple[str, ...] = ()
    target_keyword: str = ""
    # Sorted tuples, not sets: a row's repr is part of the cache key, and must not depend on
    # the process's string hashing.
    closers: tuple[str, ...] = tuple(sorted(GENERIC_CLOSERS))  # methods that release it
    config_attrs: tuple[str, ...] = tuple(sorted(GENERIC_CONFIG_ATTRS))  # read only to configure
    config_calls: tuple[str, ...] = tuple(sorted(GENERIC_CONFIG_CALLS))  # called only to configure
    # methods that only configure when given a `CONFIGURING_SQL` statement (`conn.execute("PRAGMA
    # ...")`); any other query is the parent's own work
    sql_config_calls: tuple[str, ...] = ()
    # What the runtime guard (`workersafe guard`) needs. The classes of the live objects, as
    # `module.Class` names importable from the module (`lmdb.Environment`, `requests.Session`;
    # subclasses count): what the constructor returns, then what is derived from it (cursors,
    # transactions, an HDF5 dataset). The guard resolves them only through `sys.modules`,
    # never importing a library the program did not.
    runtime_types: tuple[str, ...] = ()
    runtime_derived_types: tuple[str, ...] = ()
    # how the guard tells a live object from a closed (or never used) one, and what the parent
    # did with it (`workersafe/guard/probes.py`): "http-pool" (reported only with an open
    # pooled connection), "socket", "h5py", "lmdb", "dbapi", "zip", "tar", "" (live while held)
    runtime_probe: str = ""
    # a constructor making this handle only for some values of one argument, given first or
    # by the keyword `selector_keyword` (`fsspec.filesystem("s3")`, a network session; never
    # `fsspec.filesystem("file")`): those values, as string literals. A call giving another
    # value, or one that is not a string literal, makes none (`selects`). Empty: every call
    # makes one.
    selector_values: tuple[str, ...] = ()
    selector_keyword: str = ""

    def selects(self, value: Optional[str]) -> bool:
        """Whether a call whose selecting argument is the string literal `value` (None: not
        one, or not given) makes this handle."""
        return not self.selector_values or value in self.selector_values

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
    name="", fork_safe=False, picklable=False, runtime_probe="http-pool",
    config_attrs=tuple(sorted(_HTTP_CONFIG_ATTRS)), config_calls=tuple(sorted(_HTTP_CONFIG_CALLS)))
# cloud SDKs: workers share one connection pool (TLS errors, hangs)
_CLOUD = HandleType(name="", fork_safe=False, picklable=False)
# gRPC: workers share one channel (hangs, "Fork support is only compatible with epoll1")
_GRPC = HandleType(name="", fork_safe=False, picklable=False, dropped_in_child=False)
# databases: workers share one connection (corrupted protocol state, wrong rows)
_DB = HandleType(name="", fork_safe=False, picklable=False, runtime_probe="dbapi",
                 derived_methods=("cursor",), config_calls=tuple(sorted(_DB_CONFIG_CALLS)),
                 sql_config_calls=("execute", "executescript"), dropped_in_child=False)
# what a query returns, keeping the connection: a cursor (or the connection itself)
_QUERY_RESULTS = ("cursor", "execute", "executemany")
# archives: workers share one file descriptor and offset (wrong bytes, BadZipFile, crashes)
_FILE = HandleType(name="", fork_safe=False, picklable=False, mode_position=1)
# HDF5: workers share one file handle (corrupted reads, crashes). h5py returns the file a forked
# worker inherited when it opens that file again: the fix drops the old objects first. HDF5
# then closes the child's copy only (its descriptor; for a file read, the parent's reads and its
# file lock stay as they were).
_H5 = HandleType(name="", fork_safe=False, picklable=False, runtime_probe="h5py",
                 derived_methods=("get", "require_dataset", "require_group"),
                 derived_subscript=True, shares_open=True, mode_position=1)
# LMDB: workers share one environment (MDB_BAD_RSLOT, crashes). py-lmdb refuses to open an
# environment already open in the process (even one inherited through fork): the fix drops the
# old one before opening again. Dropping is safe where closing is not: py-lmdb's finalizers
# skip a forked child, while `close()` there would abort the inherited read transaction in the
# parent's shared reader table.
_LMDB = HandleType(name="", fork_safe=False, picklable=False, runtime_probe="lmdb",
                   derived_methods=("begin", "open_db"), single_open=True)
# PyTables and netCDF4 files (HDF5): read in forked workers (4 workers, 20,000 random rows each
# way, parent read first), they gave no wrong row: their reads are positioned, and each process
# keeps its own cache. Their objects do not pickle: spawn and forkserver workers crash.
_HDF_READER = HandleType(name="", fork_safe=True, picklable=False)
# pandas' HDFStore (PyTables underneath) and pyarrow's ParquetFile, measured the same way (4
# fork workers, 3,000 random reads each, parent read first): no wrong row. Neither pickles
# (pyarrow: "no default __reduce__ due to non-trivial __cinit__"): spawn workers crash.
_TABLE_READER = HandleType(name="", fork_safe=True, picklable=False)
# redis-py resets its pool after fork, but a client does not pickle
_REDIS = HandleType(name="", fork_safe=True, picklable=False,
                    derived_methods=("pipeline", "pubsub"))
# video readers (FFmpeg underneath): a reader the parent opened and read from, read in 4 forked
# workers, hung every run (the DataLoader's 60 s timeout; each worker opening its own: 1,200
# right frames). Neither pickles (cv2: "cannot pickle 'cv2.VideoCapture' object"; decord:
# "ctypes objects containing pointers cannot be pickled"): spawn and forkserver workers crash.
# Measured with opencv-python-headless 5.1 and decord 0.6.
# Dropping the inherited reader in a forked worker (a worker opening its own in its place) hung
# as well: kept alive beside the worker's own, 600 right frames.
_VIDEO = HandleType(name="", fork_safe=False, picklable=False, dropped_in_child=False,
                    hangs_when_dropped_in_child=True)
# libsndfile's SoundFile: one the parent opened and read, read by 4 forked workers (seek, then
# read 64 samples), gave wrong samples in 5 runs of 6 (1 to 46 of 2,000 reads, no exception; a
# worker's own in its place: none); it does not pickle (a cffi pointer). soundfile 0.14.
_AUDIO = HandleType(name="", fork_safe=False, picklable=False, mode_position=1)
# PyAV containers: read in 4 forked workers after the parent, no wrong frame (4 runs of 200
# seek-and-decode reads; a worker's own in its place: none either); they do not pickle ("no
# default __reduce__ due to non-trivial __cinit__"): spawn and forkserver workers crash. av 18.1.
# Measured by bench/readers_fork.py (the video readers above too).
_AV = HandleType(name="", fork_safe=True, picklable=False, mode_position=1)
# Sequence readers (genomics): a FASTA file the parent opened and read, read by 4 forked
# workers (2,000 reads of 64 bases each, 3 runs; a worker's own in its place: the same), gave
# no wrong base, pyfaidx's `Fasta` (a Python file: seek, then read) nor pysam's `FastaFile`
# (htslib) alike; neither pickles (pyfaidx: "cannot pickle '_io.BufferedReader' object";
# pysam, its `AlignmentFile` too: "no default __reduce__ due to non-trivial __cinit__"): spawn
# and forkserver workers crash. pyfaidx 0.9, pysam 0.24; measured by bench/readers_fork.py.
_SEQUENCE = HandleType(name="", fork_safe=True, picklable=False)
# sockets (plain and TLS): workers share one connection (interleaved bytes, broken TLS records)
_SOCKET = HandleType(name="", fork_safe=False, picklable=False, runtime_probe="socket",
                     runtime_types=("socket.socket",))


def _copied(row: HandleType, **changes: Any) -> HandleType:
    """`dataclasses.replace` for the table's rows, a fifth of its cost (the table is built on
    every run: ~0.5 ms saved)."""
    return HandleType(**{**row.__dict__, **changes})


def _rows() -> tuple[HandleType, ...]:
    http_pickles = _copied(_HTTP, picklable=True)  # requests' Session pickles (its pool not)
    # a pool manager's per-host pools keep its sockets (`http.connection_from_url(URL)`)
    pools = _copied(_HTTP, derived_methods=("connection_from_url", "connection_from_host"))
    azure = _copied(_CLOUD, derived_methods=("get_container_client", "get_blob_client"))
    requests_session = _copied(http_pickles, runtime_types=("requests.Session",))
    grpc_channel = _copied(_GRPC, runtime_types=("grpc.Channel",))
    pymysql = _copied(_DB, runtime_types=("pymysql.connections.Connection",),
                      runtime_derived_types=("pymysql.cursors.Cursor",))
    lmdb_env = _copied(_LMDB, runtime_types=("lmdb.Environment",),
                       runtime_derived_types=("lmdb.Transaction", "lmdb.Cursor"))
    # a bucket, and the blobs it names or lists, keep the client (`blob.client`): its
    # session's pooled connections (`blob.download_as_bytes()` in a worker); the classmethods
    # building one from credentials return the same client
    gcs_client = _copied(_CLOUD, derived_methods=("bucket", "get_bucket", "list_blobs", "blob",
                                                  "get_blob", "lookup_bucket"),
                         iterable_methods=("list_blobs", "list_buckets"))
    sqlalchemy_engine = _copied(_DB, derived_methods=("connect", "begin", "raw_connection"),
                                runtime_types=("sqlalchemy.engine.Engine",), runtime_probe="",
                                runtime_derived_types=("sqlalchemy.engine.Connection",))
    # fsspec's async filesystems run their I/O on an event loop thread of the process that made
    # them: in a forked child any call raises "This class is not fork-safe" (AsyncFileSystem.loop
    # checks the pid; fsspec 2026.9). They pickle by their arguments (`__reduce__`), and the
    # instance cache is emptied in a new process: a spawned worker, or a forked one making its
    # own, gets a fresh one. Its open files (`fs.open(path)`) keep it.
    fsspec_async = _copied(_CLOUD, picklable=True, derived_methods=("open",))
    # `fsspec.filesystem(protocol, **options)` is `get_filesystem_class(protocol)(**options)`:
    # for these protocols the two classes above (fsspec's `known_implementations`), the same
    # object as their own constructors make; other protocols (`"file"`, `"memory"`) hold no
    # session, and a protocol that is not a literal is not known to
    by_protocol = _copied(fsspec_async, selector_values=("gcs", "gs", "s3", "s3a"),
                          selector_keyword="protocol")
    tar = _copied(_FILE, derived_methods=("extractfile",), runtime_types=("tarfile.TarFile",),
                  runtime_probe="tar")
    return (
        _copied(requests_session, name="requests.Session"),
        _copied(requests_session, name="requests.session"),
        _copied(requests_session, name="requests.sessions.Session"),
        _copied(requests_session, name="requests.sessions.session"),
        _copied(_HTTP, name="httpx.Client", runtime_types=("httpx.Client",)),
        _copied(_HTTP, name="httpx.AsyncClient", runtime_types=("httpx.AsyncClient",)),
        _copied(pools, name="urllib3.PoolManager", runtime_types=("urllib3.PoolManager",)),
        _copied(pools, name="urllib3.ProxyManager", runtime_types=("urllib3.ProxyManager",)),
        _copied(_HTTP, name="urllib3.HTTPConnectionPool",
                runtime_types=("urllib3.HTTPConnectionPool",)),
        _copied(_HTTP, name="urllib3.HTTPSConnectionPool"),
        _copied(_HTTP, name="urllib3.connectionpool.HTTPConnectionPool"),
        _copied(_HTTP, name="urllib3.connectionpool.HTTPSConnectionPool"),
        _copied(_HTTP, name="urllib3.connection_from_url"),
        _copied(_HTTP, name="urllib3.connectionpool.connection_from_url"),
        _copied(_HTTP, name="aiohttp.ClientSession", runtime_types=("aiohttp.ClientSession",),
                runtime_probe=""),
        # its transport's node keeps a urllib3 HTTPConnectionPool (checked with
        # elasticsearch 9.5): the pool row's hazard; the client does not pickle (a thread-local)
        _copied(_HTTP, name="elasticsearch.Elasticsearch", runtime_probe="",
                runtime_types=("elasticsearch.Elasticsearch",)),
        _copied(_CLOUD, name="boto3.client", runtime_types=("botocore.client.BaseClient",)),
        _copied(_CLOUD, name="boto3.resource", derived_methods=("Bucket", "Table", "Object"),
                runtime_types=("boto3.resources.base.ServiceResource",)),
        _copied(_CLOUD, name="boto3.Session", derived_methods=("client", "resource")),
        _copied(_CLOUD, name="boto3.session.Session", derived_methods=("client", "resource")),
        _copied(gcs_client, name="google.cloud.storage.Client",
                runtime_types=("google.cloud.storage.Client",),
                runtime_derived_types=("google.cloud.storage.Bucket",)),
        _copied(gcs_client, name="google.cloud.storage.client.Client"),
        _copied(gcs_client, name="google.cloud.storage.Client.from_service_account_json"),
        _copied(gcs_client, name="google.cloud.storage.Client.from_service_account_info"),
        _copied(gcs_client, name="google.cloud.storage.Client.create_anonymous_client"),
        _copied(grpc_channel, name="grpc.insecure_channel"),
        _copied(grpc_channel, name="grpc.secure_channel"),
        # a file: dropped in a forked child, SQLite closes that process's descriptors only.
        # `execute`, `executemany` and `executescript` return a cursor (the connection's new
        # one, or the cursor they are called on), which keeps the connection: `self.rows =
        # conn.execute("SELECT ...")` read with `self.rows.fetchone()` in a worker
        _copied(_DB, name="sqlite3.connect", runtime_types=("sqlite3.Connection",),
                derived_methods=(*_QUERY_RESULTS, "executescript"),
                runtime_derived_types=("sqlite3.Cursor",), dropped_in_child=True,
                in_memory_targets=("", ":memory:"), target_keyword="database"),
        _copied(_DB, name="psycopg2.connect", runtime_types=("psycopg2.extensions.connection",),
                runtime_derived_types=("psycopg2.extensions.cursor",)),
        # psycopg 3, pyodbc, python-oracledb and cx_Oracle: a query's `execute` returns a cursor
        # (duckdb's, the connection itself), which keeps the connection, as sqlite3's does;
        # psycopg2's, pymysql's and MySQLdb's return None or a count
        _copied(_DB, name="psycopg.connect", runtime_types=("psycopg.Connection",),
                derived_methods=_QUERY_RESULTS, runtime_derived_types=("psycopg.Cursor",)),
        _copied(_DB, name="pymongo.MongoClient",
                derived_methods=("get_database", "get_collection"), derived_subscript=True,
                runtime_types=("pymongo.MongoClient",), runtime_probe="",
                runtime_derived_types=("pymongo.database.Database",
                                       "pymongo.collection.Collection"),
                subscript_reads=False),
        _copied(sqlalchemy_engine, name="sqlalchemy.create_engine"),
        _copied(sqlalchemy_engine, name="sqlalchemy.engine.create_engine"),
        _copied(_REDIS, name="redis.Redis", runtime_types=("redis.Redis",)),
        _copied(_REDIS, name="redis.StrictRedis"),
        _copied(_REDIS, name="redis.from_url"),
        _copied(_REDIS, name="redis.Redis.from_url"),
        _copied(pymysql, name="pymysql.connect"),
        _copied(pymysql, name="pymysql.Connect"),
        _copied(_DB, name="MySQLdb.connect",
                runtime_types=("MySQLdb.connections.Connection",),
                runtime_derived_types=("MySQLdb.cursors.BaseCursor",)),
        _copied(_DB, name="mysql.connector.connect",
                runtime_types=("mysql.connector.connection.MySQLConnection",)),
        _copied(_DB, name="duckdb.connect", runtime_types=("duckdb.DuckDBPyConnection",),
                derived_methods=_QUERY_RESULTS, runtime_probe=""),
        _copied(_DB, name="pyodbc.connect", runtime_types=("pyodbc.Connection",),
                derived_methods=_QUERY_RESULTS, runtime_derived_types=("pyodbc.Cursor",)),
        _copied(_DB, name="oracledb.connect", runtime_types=("oracledb.Connection",),
                derived_methods=_QUERY_RESULTS, runtime_derived_types=("oracledb.Cursor",)),
        _copied(_DB, name="cx_Oracle.connect", runtime_types=("cx_Oracle.Connection",),
                derived_methods=_QUERY_RESULTS, runtime_derived_types=("cx_Oracle.Cursor",)),
        _copied(_CLOUD, name="minio.Minio", runtime_types=("minio.Minio",)),
        _copied(fsspec_async, name="s3fs.S3FileSystem", runtime_types=("s3fs.S3FileSystem",)),
        _copied(fsspec_async, name="s3fs.core.S3FileSystem"),
        _copied(fsspec_async, name="gcsfs.GCSFileSystem", runtime_types=("gcsfs.GCSFileSystem",)),
        _copied(fsspec_async, name="gcsfs.core.GCSFileSystem"),
        _copied(by_protocol, name="fsspec.filesystem"),
        _copied(by_protocol, name="fsspec.registry.filesystem"),
        _copied(azure, name="azure.storage.blob.BlobServiceClient",
                runtime_types=("azure.storage.blob.BlobServiceClient",)),
        _copied(azure, name="azure.storage.blob.BlobServiceClient.from_connection_string"),
        _copied(azure, name="azure.storage.blob.ContainerClient",
                runtime_types=("azure.storage.blob.ContainerClient",)),
        _copied(azure, name="azure.storage.blob.ContainerClient.from_connection_string"),
        # a file's or group's `values()` are its groups and datasets, each keeping the file
        # (`list(f.values())`), its `items()` the same paired with their names
        # (`dict(f.items())`); its `keys()` are names
        _copied(_H5, name="h5py.File", runtime_types=("h5py.File",), iterable_methods=("values",),
                pair_methods=("items",),
                runtime_derived_types=("h5py.Dataset", "h5py.Group")),
        _copied(_HDF_READER, name="tables.open_file", derived_methods=("get_node",),
                node_attrs=("root",),
                runtime_types=("tables.File",), runtime_derived_types=("tables.Node",)),
        _copied(_HDF_READER, name="netCDF4.Dataset", derived_subscript=True,
                runtime_types=("netCDF4.Dataset",), runtime_derived_types=("netCDF4.Variable",)),
        _copied(_TABLE_READER, name="pandas.HDFStore", derived_methods=("get_storer",),
                runtime_types=("pandas.HDFStore",)),
        _copied(_TABLE_READER, name="pandas.io.pytables.HDFStore", derived_methods=("get_storer",)),
        _copied(_TABLE_READER, name="pyarrow.parquet.ParquetFile",
                runtime_types=("pyarrow.parquet.ParquetFile",)),
        _copied(lmdb_env, name="lmdb.open"),
        _copied(lmdb_env, name="lmdb.Environment"),
        _copied(_FILE, name="zipfile.ZipFile", derived_methods=("open",),
                runtime_types=("zipfile.ZipFile",), runtime_probe="zip"),
        _copied(tar, name="tarfile.open"),
        _copied(tar, name="tarfile.TarFile"),
        _copied(tar, name="tarfile.TarFile.open"),
        _copied(_VIDEO, name="cv2.VideoCapture", runtime_types=("cv2.VideoCapture",),
                closers=tuple(sorted(GENERIC_CLOSERS | {"release"}))),
        _copied(_VIDEO, name="decord.VideoReader",
                runtime_types=("decord.video_reader.VideoReader",)),
        _copied(_VIDEO, name="decord.video_reader.VideoReader"),
        _copied(_AUDIO, name="soundfile.SoundFile", runtime_types=("soundfile.SoundFile",)),
        _copied(_AV, name="av.open", runtime_types=("av.container.Container",)),
        # `fasta["chr1"]` is a record reading from the file; `fasta["chr1"][a:b]`, the bases
        _copied(_SEQUENCE, name="pyfaidx.Fasta", derived_subscript=True,
                runtime_types=("pyfaidx.Fasta",), runtime_derived_types=("pyfaidx.FastaRecord",)),
        _copied(_SEQUENCE, name="pyfaidx.Faidx", runtime_types=("pyfaidx.Faidx",)),
        _copied(_SEQUENCE, name="pysam.FastaFile", runtime_types=("pysam.FastaFile",)),
        _copied(_SEQUENCE, name="pysam.Fastafile"),  # (pysam's older name for it)
        _copied(_SEQUENCE, name="pysam.AlignmentFile", mode_position=1,
                runtime_types=("pysam.AlignmentFile",)),
        _copied(_SOCKET, name="socket.socket"),
        _copied(_SOCKET, name="socket.create_connection"),
    )


def _builtin() -> dict[str, HandleType]:
    return {row.name: row for row in _rows()}


@record(frozen=True)
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

    def node_attrs(self, handle: str) -> tuple[str, ...]:
        """Attributes of a `handle` naming its root node (`f.root`), whose children keep it."""
        htype = self.lookup(handle)
        return htype.node_attrs if htype else ()

    def iterable_methods(self, handle: str) -> tuple[str, ...]:
        """Methods whose result, called on a `handle`, lists objects each keeping it."""
        htype = self.lookup(handle)
        return htype.iterable_methods if htype else ()

    def pair_methods(self, handle: str) -> tuple[str, ...]:
        """Methods whose result, called on a `handle`, lists (name, object) pairs, each object
        keeping it."""
        htype = self.lookup(handle)
        return htype.pair_methods if htype else ()

    def short_names(self) -> frozenset[str]:
        """The constructors' last name parts (`Session`, `open`): what a subclass's base ends in."""
        return frozenset(t.short_name for t in self.types.values())

    def module_roots(self) -> frozenset[str]:
        """The libraries' top-level modules (`lmdb`, `h5py`, `boto3`)."""
        return frozenset(t.module_root for t in self.types.values())

    def prefilter_pairs(self) -> frozenset[tuple[str, str]]:
        """(module root, constructor short name): a file that creates this handle contains both."""
        return frozenset((t.module_root, t.short_name) for t in self.types.values())

    def runtime_types(self) -> dict[str, tuple[HandleType, bool]]:
        """The classes of live handles (`module.Class`) → (their row, derived from the handle):
        what the runtime guard looks for. The first row naming a class wins."""
        found: dict[str, tuple[HandleType, bool]] = {}
        for row in self.types.values():
            for name in row.runtime_types:
                found.setdefault(name, (row, False))
            for name in row.runtime_derived_types:
                found.setdefault(name, (row, True))
        return found

    def with_config(self, extra: Iterable[str] = (), disabled: Iterable[str] = ()) -> Registry:
        types = dict(self.types)
        for name in extra:
            # a class named as a handle is also the class of the live object (the guard's)
            types[name] = HandleType(name, fork_safe=False, picklable=False,
                                     runtime_types=(name,))
        for name in disabled:
            types.pop(name, None)
        return replace(self, types=types)


DEFAULT_REGISTRY = Registry()


def _union(base: frozenset[str], more: Iterable[tuple[str, ...]]) -> frozenset[str]:
    return base.union(*more)
