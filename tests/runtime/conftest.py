"""Fixtures for the runtime proof: a local TLS item server and the programs' environment."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helper modules sit next to this file; import them whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_harness import (  # noqa: E402
    RUN_LOG,
    Target,
    format_run_log,
    write_fasta,
    write_hdf5,
    write_lmdb_shards,
    write_sqlite,
    write_zip_archive,
)
from tls_server import ItemServer, LocalCA, make_test_ca  # noqa: E402

SERVER_LIFETIME = 2700.0  # seconds: the server stops by itself even if teardown never runs
# (bounded, yet longer than the whole runtime suite takes on a loaded 2-core machine)
ARCHIVE_ITEMS = 256


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "runtime: runs real DataLoader workers against a local server (slow)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RUN_LOG:
        terminalreporter.write_sep("-", "runtime programs: outcome per configuration")
        terminalreporter.write_line(format_run_log())


@pytest.fixture(scope="session")
def local_ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCA:
    return make_test_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="session")
def ca_bundle(local_ca: LocalCA) -> Path:
    """The PEM file of the test CA, for REQUESTS_CA_BUNDLE / SSL_CERT_FILE."""
    return local_ca.bundle


@pytest.fixture(scope="session")
def tls_server(local_ca: LocalCA) -> Iterator[ItemServer]:
    server = ItemServer(local_ca.server_context).start(lifetime=SERVER_LIFETIME)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http_server() -> Iterator[ItemServer]:
    """Plain HTTP variant (a shared pool over plain HTTP hangs or returns wrong items). Each
    answer waits 20 ms, so that workers sharing the connection send before it comes: without
    it, staggered workers could each read their own answer, then open connections of their
    own (urllib3 reopens one it finds readable), and the race was won in 1 run of 5 at times."""
    server = ItemServer(None, answer_delay=0.02).start(lifetime=SERVER_LIFETIME)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zip_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_zip_archive(tmp_path_factory.mktemp("data") / "items.zip", ARCHIVE_ITEMS)


@pytest.fixture(scope="session")
def data_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The HDF5 file, SQLite database, LMDB shards and FASTA file the file-backed programs
    read."""
    pytest.importorskip("h5py")
    pytest.importorskip("lmdb")
    pytest.importorskip("pyfaidx")
    root = tmp_path_factory.mktemp("files")
    return {
        "WS_FASTA": str(write_fasta(root / "items.fa", ARCHIVE_ITEMS)),
        "WS_H5": str(write_hdf5(root / "items.h5", ARCHIVE_ITEMS)),
        "WS_SQLITE": str(write_sqlite(root / "items.db", ARCHIVE_ITEMS)),
        "WS_LMDB": str(write_lmdb_shards(root / "shards", ARCHIVE_ITEMS)),
    }


@pytest.fixture(scope="session")
def runtime_target(
    tls_server: ItemServer, ca_bundle: Path, zip_archive: Path, data_files: dict[str, str]
) -> Target:
    """Environment shared by every program: server URL, trusted CA, data files."""
    return Target(base_url=tls_server.base_url, ca_bundle=ca_bundle, data_file=zip_archive,
                  extra_env=data_files)
