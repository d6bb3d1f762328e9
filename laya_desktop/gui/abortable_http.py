"""httpx clients whose connections another thread can cut, before or after the response headers.

On Linux a socket read blocked in one thread is not woken by `close()` from another, and httpx has
no handle on a request still waiting for its headers. These clients connect through a network
backend that records every socket it opens; `Sockets.abort()` shuts them down (the blocked read
returns at once) and refuses new connections. Qt-free.
"""
from __future__ import annotations

import socket
import threading
import weakref

import httpcore
import httpx

DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's own

class Sockets:
    """The open sockets of one or more clients. `abort()` is final and may be called from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._aborted = False

    @property
    def aborted(self) -> bool:
        return self._aborted

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if not self._aborted:
                self._live.add(sock)
                return
        _cut(sock)

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            live = list(self._live)
        for sock in live:
            _cut(sock)


def _cut(sock: socket.socket) -> None:
    # The base class's shutdown: on an SSLSocket it must not touch the TLS object another thread reads.
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, sockets: Sockets) -> None:
        self._inner, self._sockets = inner, sockets
        sockets.add(inner.get_extra_info("socket"))

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._sockets)

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, sockets: Sockets) -> None:
        self._sockets, self._inner = sockets, httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if self._sockets.aborted:
            raise httpcore.ConnectError("connection aborted")
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options),
                       self._sockets)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        if self._sockets.aborted:
            raise httpcore.ConnectError("connection aborted")
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options), self._sockets)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AbortableTransport(httpx.HTTPTransport):
    """httpx's own transport (request mapping, errors) over a connection pool on `_Backend`."""

    def __init__(self, sockets: Sockets, limits: httpx.Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits=limits)
        # httpx builds its pool without a network-backend hook; rebuild it with httpcore's public API.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(sockets))


def abortable_client(sockets: Sockets, trust_env: bool = False, **kwargs) -> httpx.Client:
    """An httpx.Client whose connections `sockets.abort()` cuts. With `trust_env`, requests that go
    through a proxy from the environment use httpx's own transport, out of reach of the abort (their
    timeouts still bound them)."""
    return httpx.Client(transport=AbortableTransport(sockets), trust_env=trust_env, **kwargs)
