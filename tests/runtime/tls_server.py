"""A small keep-alive HTTP(S) item server for the runtime tests and the demo.

Endpoints (JSON bodies, HTTP/1.1, explicit Content-Length so connections stay open):

- ``GET /list[?limit=N]``: the item ids ``[0, 1, ..., N-1]`` (the programs call it in
  ``__init__`` to size the dataset, which also "warms" their connection pool);
- ``GET /item/<i>``: ``{"index": i, "payload": payload_for(i)}``;
- the same under ``/private/...``, answered only with ``Authorization: Bearer <TOKEN>``
  (401 otherwise): a handle whose configuration (auth headers) is lost in a worker shows.

Every connection has a socket timeout, the TLS handshake happens in the connection's own
thread (a stuck client never blocks ``accept``), and the server stops by itself after
``lifetime`` seconds even if nobody calls :meth:`ItemServer.stop`.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

ITEM_COUNT = 4096
TOKEN = "dev-token"
PRIVATE = "/private"
CONNECTION_TIMEOUT = 20.0
DEFAULT_LIFETIME = 900.0
_ITEM_PATH = re.compile(r"^/item/(\d+)$")


def payload_for(index: int) -> str:
    """The deterministic payload of item ``index`` (384 characters)."""
    return hashlib.sha256(f"workersafe-item-{index}".encode()).hexdigest() * 6


class ItemHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT  # StreamRequestHandler applies it to the socket
    server: ItemServer
    _headers_buffer: list[bytes]  # (BaseHTTPRequestHandler's, untyped in typeshed)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = url.path
        if path.startswith(f"{PRIVATE}/"):
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send_json(401, {"error": "missing or wrong bearer token"})
                return
            path = path.removeprefix(PRIVATE)
        if path == "/list":
            self._send_json(200, list(range(_limit(url.query))))
            return
        match = _ITEM_PATH.match(path)
        if match and int(match.group(1)) < ITEM_COUNT:
            index = int(match.group(1))
            self._send_json(200, {"index": index, "payload": payload_for(index)})
            return
        self._send_json(404, {"error": f"no such resource: {url.path}"})

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        if self.server.answer_delay:
            time.sleep(self.server.answer_delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.tls is None:
            # Plain HTTP: the whole answer in one write, so a worker reading the shared socket
            # takes another's answer whole (a wrong item) rather than half of one (an error).
            self._headers_buffer.append(b"\r\n" + data)
            self.flush_headers()
        else:
            self.end_headers()
            self.wfile.write(data)
        self.server.count_request()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        """Silence the per-request log: the programs under test make thousands."""


def _limit(query: str) -> int:
    values = parse_qs(query).get("limit", [])
    return min(int(values[0]), ITEM_COUNT) if values and values[0].isdigit() else ITEM_COUNT


class ItemServer(ThreadingHTTPServer):
    """Threading HTTP/1.1 server, TLS when given an ``ssl.SSLContext``."""

    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None = None, answer_delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), ItemHandler)
        self.tls = tls
        # seconds each answer waits: the requests of workers sharing a connection then overlap
        self.answer_delay = answer_delay
        self.requests_served = 0
        self.connection_errors = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._deadline: threading.Timer | None = None

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}"

    def start(self, lifetime: float = DEFAULT_LIFETIME) -> ItemServer:
        self._thread = threading.Thread(target=self.serve_forever, name="item-server", daemon=True)
        self._thread.start()
        self._deadline = threading.Timer(lifetime, self.stop)
        self._deadline.daemon = True
        self._deadline.start()
        return self

    def stop(self) -> None:
        """Idempotent; safe from any thread except the serving one."""
        if self._deadline is not None and self._deadline is not threading.current_thread():
            self._deadline.cancel()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self.server_close()

    def count_request(self) -> None:
        with self._lock:
            self.requests_served += 1

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Runs in the connection's thread: set the timeout, then the TLS handshake."""
        request.settimeout(CONNECTION_TIMEOUT)
        # Headers and body go out in two writes: without this, Nagle + delayed ACK add 40 ms.
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        with self.tls.wrap_socket(request, server_side=True) as conn:
            super().finish_request(conn, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Broken connections are the point of these tests: count them, don't print them."""
        with self._lock:
            self.connection_errors += 1

    def shutdown_request(self, request: Any) -> None:
        try:
            request.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.close_request(request)


@dataclass(frozen=True)
class LocalCA:
    """A ``trustme`` CA, the server context it signs, and its bundle on disk."""

    ca: trustme.CA
    server_context: ssl.SSLContext
    bundle: Path


def make_test_ca(directory: Path) -> LocalCA:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
    bundle = directory / "workersafe-test-ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return LocalCA(ca=ca, server_context=server_context, bundle=bundle)
