"""engine/upstream_http.py, the engine's lean HTTP/1.1 client, against a scripted loopback server
that answers with exact bytes, split and paused where a real network splits them; httpx reads
the same answers as the reference for what the engine used to see."""
from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import httpx
import pytest

from laya_desktop.engine.upstream_http import Origin, UpstreamClient


class ScriptedServer:
    """Answers every request on a connection with `script`: a list of bytes to send, floats to
    pause for, and "close" to end the connection. Keeps each request's bytes and each
    connection's client port. With `answers`, a connection's request after that many is read, and
    gets `cut` and the connection's end (`reset`: a TCP RST); with no `cut`, a keep-alive timeout
    that ran out just as the request came."""

    def __init__(self, script: list, tls: ssl.SSLContext | None = None,
                 answers: int | None = None, cut: bytes = b"", reset: bool = False):
        self.script, self.tls = script, tls
        self.answers, self.cut, self.reset = answers, cut, reset
        self.requests: list[bytes] = []
        self.ports: list[int] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/v1/chat/completions") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                conn, addr = self._sock.accept()
            except OSError:
                return
            self.ports.append(addr[1])
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                return   # the client refused our certificate
        with conn:
            buffer = b""
            answered = 0
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, rest = buffer.partition(b"\r\n\r\n")
                length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), b"0"))
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:length])
                buffer = rest[length:]
                if answered == self.answers:
                    conn.sendall(self.cut)
                    if self.reset:
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                answered += 1
                for step in self.script:
                    if step == "close":
                        return
                    if isinstance(step, float):
                        time.sleep(step)
                    else:
                        conn.sendall(step)

    def close(self) -> None:
        self._sock.close()


@contextlib.contextmanager
def scripted(*script, tls: ssl.SSLContext | None = None, answers: int | None = None,
             cut: bytes = b"", reset: bool = False):
    server = ScriptedServer(list(script), tls, answers, cut, reset)
    try:
        yield server
    finally:
        server.close()


def _client(read_timeout_s: float = 5.0) -> UpstreamClient:
    return UpstreamClient(connect_timeout_s=5.0, read_timeout_s=read_timeout_s)


async def _post(client: UpstreamClient, url: str, body: bytes = b"{}", how: str = "aread"):
    response = await client.post(Origin(httpx.URL(url)), {"Content-Type": "application/json"}, body)
    try:
        if how == "aread":
            return response, await response.aread()
        if how == "raw":
            return response, [piece async for piece in response.aiter_raw()]
        return response, [line async for line in response.aiter_lines()]
    finally:
        await response.aclose()


async def _httpx_lines(url: str) -> list[str]:
    async with httpx.AsyncClient() as client:
        async with client.stream("POST", url, content=b"{}") as response:
            return [line async for line in response.aiter_lines()]


def test_a_length_framed_answer_in_pieces_and_the_connection_kept():
    body = b'{"choices": [1, 2, 3]}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    with scripted(head[:10], 0.02, head[10:] + body[:5], 0.02, body[5:]) as server:
        async def twice():
            client = _client()
            first = await _post(client, server.url(), b'{"a": 1}')
            second = await _post(client, server.url())
            await client.aclose()
            return first, second
        (response, content), (_, again) = asyncio.run(twice())
    assert response.status_code == 200 and content == again == body
    assert response.headers.get("content-type") == "application/json"
    assert response.headers["CONTENT-LENGTH"] == str(len(body))
    assert len(server.ports) == 1   # keep-alive: both requests on one connection
    request = server.requests[0]
    assert request.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port)
    assert b"\r\nContent-Length: 8\r\n\r\n" in request and request.endswith(b'{"a": 1}')


def test_a_chunked_answer_with_extensions_and_trailers():
    chunks = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel",
              0.02, b"lo\r\n", b"1", 0.02, b"\r\n \r\n0\r\nX-Trailer: yes\r\n\r\n")
    with scripted(*chunks) as server:
        async def go():
            client = _client()
            raw = await _post(client, server.url(), how="raw")
            again = await _post(client, server.url(), how="aread")
            await client.aclose()
            return raw, again
        (_, pieces), (_, whole) = asyncio.run(go())
    assert b"".join(pieces) == whole == b"hello "
    assert len(server.ports) == 1


@pytest.mark.parametrize("pieces, expected", [
    ([b"data: a\r", 0.02, b"\ndata: b\n\n", 0.02, b"tail"], ["data: a", "data: b", "", "tail"]),
    ([b"one\rtwo\r\n", 0.02, b"\r\nthree\n", b"fo", 0.02, b"ur\xc3", 0.02, b"\xa9\n"],
     ["one", "two", "", "three", "four\u00e9"]),
])
def test_lines_are_split_where_httpx_splits_them(pieces, expected):
    data = b"".join(p for p in pieces if isinstance(p, bytes))
    script = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(data),
              *pieces]
    with scripted(*script) as server:
        _, lines = asyncio.run(_post(_client(), server.url(), how="lines"))
        assert lines == asyncio.run(_httpx_lines(server.url())) == expected


def test_a_close_delimited_answer_is_read_to_the_end_and_not_reused():
    with scripted(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of ", 0.02, b"it", "close") as server:
        async def twice():
            client = _client()
            results = [await _post(client, server.url()) for _ in range(2)]
            await client.aclose()
            return results
        results = asyncio.run(twice())
    assert [content for _, content in results] == [b"all of it"] * 2
    assert len(server.ports) == 2


def test_repeated_and_folded_headers_read_as_httpx_reads_them():
    answer = (b"HTTP/1.1 200 OK\r\nX-Many: a\r\nX-Many: b\r\nX-Folded: one\r\n two\r\n"
              b"Content-Length: 2\r\n\r\nok")
    with scripted(answer) as server:
        response, _ = asyncio.run(_post(_client(), server.url()))
        expected = httpx.post(server.url(), content=b"{}").headers
    assert response.headers.get("x-many") == expected.get("x-many") == "a, b"
    assert response.headers.get("X-Folded") == "one two"


def test_an_informational_answer_is_skipped():
    with scripted(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok") as server:
        response, content = asyncio.run(_post(_client(), server.url()))
    assert (response.status_code, response.reason_phrase, content) == (201, "Created", b"ok")


def test_an_answer_cut_short_is_an_httpx_error():
    with scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b", "close") as server:
        with pytest.raises(httpx.RemoteProtocolError):
            asyncio.run(_post(_client(), server.url()))
    with scripted("close") as server:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            asyncio.run(_post(_client(), server.url()))
    with scripted(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "close") as server:
        with pytest.raises(httpx.RemoteProtocolError):
            asyncio.run(_post(_client(), server.url(), how="raw"))
    with scripted(b"SMTP ready\r\n\r\n") as server:
        with pytest.raises(httpx.RemoteProtocolError, match="status line"):
            asyncio.run(_post(_client(), server.url()))


def test_silence_is_a_read_timeout_and_a_closed_port_a_connect_error():
    with scripted(2.0) as server:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            asyncio.run(_post(_client(read_timeout_s=0.2), server.url()))
        assert time.monotonic() - started < 1.5
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        asyncio.run(_post(_client(), f"http://127.0.0.1:{port}/v1"))


def test_bytes_that_keep_coming_are_no_timeout():
    pieces = [piece for n in range(8) for piece in (0.1, b"%d" % n)]
    with scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n", *pieces) as server:
        started = time.monotonic()
        _, content = asyncio.run(_post(_client(read_timeout_s=0.25), server.url()))
    assert content == b"01234567" and time.monotonic() - started > 0.7   # longer than the timeout


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "rst"])
def test_a_kept_connection_the_server_closed_as_we_sent_is_retried_once_on_a_new_one(reset):
    with scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", answers=1, reset=reset) as server:
        async def go():
            client = _client()
            contents = [(await _post(client, server.url(), b'{"n": %d}' % n))[1] for n in range(3)]
            await client.aclose()
            return contents
        assert asyncio.run(go()) == [b"ok"] * 3
    # the second request reached the first connection, then went again on a new one, as the third
    assert [r.rsplit(b"\r\n\r\n", 1)[1] for r in server.requests] == \
        [b'{"n": 0}', b'{"n": 1}', b'{"n": 1}', b'{"n": 2}', b'{"n": 2}']
    assert len(server.ports) == 3


def test_no_retry_once_an_answer_began_or_on_a_new_connection():
    with scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", answers=1, cut=b"HTTP/1.1 200") as server:
        async def go():
            client = _client()
            first = await _post(client, server.url())
            with pytest.raises(httpx.RemoteProtocolError, match="incomplete response head"):
                await _post(client, server.url())
            await client.aclose()
            return first
        assert asyncio.run(go())[1] == b"ok"
    assert len(server.requests) == 2 and len(server.ports) == 1
    with scripted("close") as server:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            asyncio.run(_post(_client(), server.url()))
    assert len(server.requests) == 1


def test_a_body_left_unread_closes_its_connection():
    with scripted(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", 0.05,
                  b"0\r\n\r\n") as server:
        async def go():
            client = _client()
            response = await client.post(Origin(httpx.URL(server.url())), {}, b"{}")
            await response.aclose()   # before its body
            _, content = await _post(client, server.url())
            await client.aclose()
            return content
        assert asyncio.run(go()) == b"abc"
    assert len(server.ports) == 2


def test_a_header_that_would_end_the_head_is_refused():
    with scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") as server:
        async def go():
            await _client().post(Origin(httpx.URL(server.url())),
                                 {"Authorization": "Bearer x\r\nX-Injected: 1"}, b"{}")
        with pytest.raises(httpx.LocalProtocolError):
            asyncio.run(go())
    assert server.requests == []


@pytest.fixture
def self_signed(tmp_path):
    """A certificate for 127.0.0.1 that no CA bundle holds, and its server context."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"openssl could not make a certificate: {made.stderr[-200:]!r}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return cert, context


def test_https_verifies_the_certificate_against_httpxs_ca_settings(self_signed, monkeypatch):
    cert, context = self_signed
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"
    with scripted(answer, tls=context) as server:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            asyncio.run(_post(_client(), server.url()))
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))   # trusted the way httpx trusts it
        response, content = asyncio.run(_post(_client(), server.url()))
    assert (response.status_code, content) == (200, b"secret")
    assert server.requests[-1].endswith(b"{}")
