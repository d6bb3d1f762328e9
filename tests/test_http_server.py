"""engine/http_server.py: uvicorn's httptools protocol with what an answer writes in one loop turn
sent as one write, uvicorn's server ticking once a second, and the bounds' answers (503, 431, 408)
on both event loops (the engine process's own checks are in test_socket_limits.py).
A real uvicorn server on loopback; the socket transport's writes are recorded as they happen."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from engine_harness import free_port
from laya_desktop.engine.http_server import TICK_S, Bounds, EngineHttpProtocol, EngineServer

WRITES: list[bytes] = []


class RecordingTransport:
    """The loop's transport, every write noted (uvloop's transports' attributes are read-only)."""

    def __init__(self, transport: asyncio.Transport):
        self._transport = transport

    def write(self, data: bytes) -> None:
        WRITES.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


class RecordingProtocol(EngineHttpProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(RecordingTransport(transport))


async def whole(request):
    return JSONResponse({"answer": "x" * 100})


async def stream(request):
    async def events():
        await asyncio.sleep(0.5)
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"
    return StreamingResponse(events(), media_type="text/event-stream")


async def stream_at_once(request):
    async def events():
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"
    return StreamingResponse(events(), media_type="text/event-stream")


class CountingServer(EngineServer):
    ticks = 0

    async def on_tick(self, counter: int) -> bool:
        CountingServer.ticks += 1
        return await super().on_tick(counter)


@contextlib.contextmanager
def server(stopped: list | None = None):
    """The engine's server on loopback; `stopped` gets the seconds from should_exit to its end."""
    app = Starlette(routes=[Route("/whole", whole), Route("/stream", stream),
                            Route("/stream-at-once", stream_at_once)])
    port = free_port()
    running = CountingServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                            lifespan="off", http=RecordingProtocol))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asked = time.monotonic()
        running.should_exit = True   # from another thread, as the parent-pipe watch does
        thread.join(timeout=10)
        if stopped is not None:
            stopped.append(time.monotonic() - asked)


def test_a_whole_answer_leaves_in_one_write_and_keep_alive_holds():
    with server() as url, httpx.Client(base_url=url) as client:
        WRITES.clear()
        for _ in range(3):
            response = client.get("/whole")
            assert response.status_code == 200 and response.json() == {"answer": "x" * 100}
        assert len(WRITES) == 3   # one per answer: head and body together
        assert all(w.startswith(b"HTTP/1.1 200 OK\r\n") and w.endswith(b"x" * 100 + b'"}')
                   for w in WRITES)


def test_a_stream_that_has_all_its_events_leaves_in_one_write():
    with server() as url, httpx.Client(base_url=url) as client:
        WRITES.clear()
        response = client.get("/stream-at-once")
        assert response.text == "data: 1\n\ndata: 2\n\n"
    (write,) = WRITES   # head, both chunks and the chunked terminator
    assert write.startswith(b"HTTP/1.1 200 OK\r\n") and write.endswith(b"0\r\n\r\n")


def test_a_streams_head_leaves_before_its_first_event():
    with server() as url:
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
            WRITES.clear()
            sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            started = time.monotonic()
            first = sock.recv(65536)
            waited = time.monotonic() - started
            assert first.startswith(b"HTTP/1.1 200 OK\r\n") and b"data: 1" not in first
            assert waited < 0.4   # not held back until the event 0.5 s later
            rest = b""
            while b"0\r\n\r\n" not in rest:
                rest += sock.recv(65536)
    assert b"data: 1\n\n" in rest and b"data: 2\n\n" in rest


def test_the_idle_server_ticks_once_a_second_and_stops_at_once():
    stopped: list[float] = []
    with server(stopped) as url:
        with httpx.Client(base_url=url) as client:
            assert client.get("/whole").headers["date"].endswith(" GMT")   # uvicorn's Date header
        CountingServer.ticks = 0
        time.sleep(2.5 * TICK_S)
        ticks = CountingServer.ticks
    assert 2 <= ticks <= 3   # uvicorn's own loop ticks 10 times a second
    assert stopped[0] < 0.5 * TICK_S   # woken by should_exit, not by the next tick


# --- bounds: the paths that swap the connection's protocol, on both loops ----------

@contextlib.contextmanager
def bounded_server(loop: str, bounds):
    app = Starlette(routes=[Route("/whole", whole), Route("/stream", stream)])
    port = free_port()
    running = EngineServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                          lifespan="off", loop=loop,
                                          http=EngineHttpProtocol.bounded(bounds)))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port
    finally:
        running.should_exit = True
        thread.join(timeout=10)


def _until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_refusal_answers_then_drains_on_either_loop(loop):
    bounds = Bounds(max_connections=1, header_s=0.5)
    with bounded_server(loop, bounds) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as held:
            held.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")  # busy
            assert held.recv(65536).startswith(b"HTTP/1.1 200 OK")
            with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
                extra.sendall(b"GET /whole HTTP/1.1\r\nHost: x\r\n\r\n")
                refused = _until_closed(extra)
            assert refused.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1\r\n" in refused
            assert b"0\r\n\r\n" in _until_closed(held)   # the stream was not cut
        with socket.create_connection(("127.0.0.1", port), timeout=5) as big:
            big.sendall(b"GET /whole HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000)
            assert _until_closed(big).startswith(b"HTTP/1.1 431 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
            slow.sendall(b"GET /whole HTTP/1.1\r\n")
            started = time.monotonic()
            assert _until_closed(slow).startswith(b"HTTP/1.1 408 ")
            assert 0.5 <= time.monotonic() - started < 1.5
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/whole").status_code == 200


def test_the_bounds_scale_their_timeouts_only():
    scaled = Bounds(max_connections=7).scaled(0.05)
    assert (scaled.idle_s, scaled.header_s, scaled.body_stall_s) == (3, 3, 3)
    assert scaled.max_connections == 7 and scaled.max_head_bytes == Bounds().max_head_bytes
    assert scaled.sweep_s == pytest.approx(0.3) and Bounds().sweep_s == 1
