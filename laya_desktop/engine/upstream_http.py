"""A lean HTTP/1.1 client for the engine's calls to remote models: keep-alive connections per
origin on asyncio protocols, each request sent in one write, the answer framed by hand.

httpx's transport (httpcore, h11 and anyio under it) took about half of the engine's CPU time on
a relayed request: some 700 Python calls, and the head and the body of a request as two writes,
so the upstream woke twice. This client covers what a remote model needs — POST over http:// or
https:// (httpx's SSL context: its CA bundle and SSL_CERT_* variables), Content-Length, chunked or
close-delimited answers, the connect, read and pool timeouts, httpx's keep-alive limits and idle
expiry, one retry on a new connection for a kept one the server closed as the request went out —
and raises httpx's exception classes, so the code past it sees no difference. Proxies
stay with httpx (engine/remote.py chooses).

Its answer, `UpstreamResponse`, has the part of httpx.Response that the engine reads:
status_code, headers.get, aread, aiter_raw, aiter_lines, aclose.
"""
from __future__ import annotations

import asyncio
import codecs
import ssl
from typing import AsyncIterator

import httpx

MAX_HEAD_BYTES = 64 * 1024    # status line and headers; h11's default limit is 16 KiB
HIGH_WATER = 256 * 1024       # unread answer bytes before the socket stops being read
KEEPALIVE_EXPIRY_S = 5.0      # httpx.Limits' default: an idle connection older than this is closed
WATCHDOG_TICKS = 10
LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"   # where str.splitlines splits


class Origin:
    """Where a URL's requests go and the fixed part of their head (request line and Host)."""
    __slots__ = ("key", "scheme", "host", "port", "request_line")

    def __init__(self, parsed: httpx.URL):
        if parsed.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{parsed.scheme}://'.")
        self.scheme, self.host = parsed.scheme, parsed.host
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.key = (self.scheme, self.host, self.port)
        self.request_line = b"POST " + parsed.raw_path + b" HTTP/1.1\r\nHost: " + parsed.netloc + b"\r\n"


class Headers(dict):
    """An answer's headers by lower-case name; repeated ones joined with ", " as httpx does."""

    def get(self, name: str, default=None):
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name.lower())


def head_bytes(origin: Origin, headers: dict, length: int) -> bytes:
    """The request's head; a header that would end the head early is refused, as h11 does."""
    lines = [origin.request_line]
    for name, value in headers.items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value or ":" in name:
            raise httpx.LocalProtocolError(f"Illegal header {name!r}")
        try:
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
        except UnicodeEncodeError:
            raise httpx.LocalProtocolError(f"header {name!r} is not Latin-1 text") from None
    lines.append(b"Content-Length: %d\r\n\r\n" % length)
    return b"".join(lines)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: the bytes it received, and a waiter woken when more come."""

    def __init__(self, pool: "UpstreamClient", origin_key: tuple):
        self.pool, self.origin_key = pool, origin_key
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost: BaseException | None = None
        self.idle_since = 0.0
        self.busy = False   # a request is on it
        self.received = 0   # data_received calls, for the read-timeout watchdog
        self._waiter: asyncio.Future | None = None
        self._paused = False
        self._watchdog: asyncio.TimerHandle | None = None

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.received += 1
        if len(self.buffer) > HIGH_WATER and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self):
        self.eof = True
        self._wake()
        return False   # close our side too

    def connection_lost(self, exc) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        self.pool._forget(self)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # for the reader
    async def more(self) -> None:
        """Wait until more bytes or the end arrived (or the read timeout passed: ReadTimeout)."""
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def watch(self, timeout_s: float) -> None:
        """Keep the read timeout while a request is on this connection: one timer that ticks
        every tenth of the timeout fails a wait after 11 ticks without bytes, between 1 and
        1.1 timeouts after the last (a timer per wait cost more than the rest of the read)."""
        self.busy = True
        if self._watchdog is None:
            self._watchdog = self.loop.call_later(timeout_s / WATCHDOG_TICKS, self._tick,
                                                  timeout_s, self.received, 0)

    def _tick(self, timeout_s: float, seen: int, quiet: int) -> None:
        self._watchdog = None
        if not self.busy or self.eof:
            return
        quiet = quiet + 1 if self.received == seen and self._waiter is not None else 0
        if quiet > WATCHDOG_TICKS:
            _time_out(self._waiter)
            quiet = 0
        self._watchdog = self.loop.call_later(timeout_s / WATCHDOG_TICKS, self._tick,
                                              timeout_s, self.received, quiet)

    def broken(self, what: str) -> httpx.HTTPError:
        """The error for an end of the connection before `what` was complete."""
        if isinstance(self.lost, OSError):
            return httpx.ReadError(str(self.lost) or type(self.lost).__name__)
        return httpx.RemoteProtocolError(what)

    def reusable(self) -> bool:
        return (not self.eof and not self.buffer and self.loop is asyncio.get_running_loop()
                and self.loop.time() - self.idle_since < KEEPALIVE_EXPIRY_S)

    def close(self) -> None:
        self.busy = False
        if self.transport is not None:
            self.transport.close()
        self.pool._forget(self)


def _time_out(waiter: asyncio.Future | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("timed out"))


class UpstreamResponse:
    """An answer whose body is read from its connection as the caller asks for it."""

    def __init__(self, conn: _Connection, status_code: int, reason: str, headers: Headers,
                 framing: str, length: int, keep_alive: bool):
        self.status_code, self.reason_phrase, self.headers = status_code, reason, headers
        self._conn, self._framing, self._left = conn, framing, length
        self._keep_alive = keep_alive
        self._content: bytes | None = None
        self._done = framing == "none"
        if self._done:
            self._finish()

    def _finish(self) -> None:
        """The body is all read: the connection goes back to the pool, or is closed."""
        self._done = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pool._release(conn, self._keep_alive)

    async def _next(self) -> bytes:
        """The body's next bytes (b"" at its end)."""
        if self._done:
            return b""
        conn = self._conn
        if self._framing == "length":
            while not conn.buffer:
                if conn.eof:
                    raise conn.broken("peer closed connection without sending complete message "
                                      f"body: {self._left} bytes missing")
                await conn.more()
            piece = bytes(conn.buffer[:self._left])
            del conn.buffer[:len(piece)]
            self._left -= len(piece)
            if not self._left:
                self._finish()
            return piece
        if self._framing == "chunked":
            return await self._next_chunk(conn)
        while not conn.buffer and not conn.eof:   # close-delimited
            await conn.more()
        if not conn.buffer:
            self._keep_alive = False
            self._finish()
            return b""
        piece = bytes(conn.buffer)
        conn.buffer.clear()
        return piece

    async def _next_chunk(self, conn: _Connection) -> bytes:
        while True:
            if self._left > 0:   # inside a chunk's data
                while not conn.buffer:
                    if conn.eof:
                        raise conn.broken("peer closed connection without sending complete message body: incomplete chunked read")
                    await conn.more()
                piece = bytes(conn.buffer[:self._left])
                del conn.buffer[:len(piece)]
                self._left -= len(piece)
                if not self._left:
                    self._left = -1   # its CRLF comes next
                return piece
            line = await _line(conn)
            if self._left == -1:      # the CRLF after a chunk's data
                if line:
                    raise httpx.RemoteProtocolError("malformed chunked encoding")
                self._left = 0
                continue
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpx.RemoteProtocolError(f"malformed chunk size {size_text[:20]!r}") from None
            if size < 0:
                raise httpx.RemoteProtocolError("malformed chunk size")
            if size == 0:
                while await _line(conn):   # trailers, up to the blank line
                    pass
                self._finish()
                return b""
            self._left = size

    async def aread(self) -> bytes:
        if self._content is None:
            conn = self._conn
            if self._framing == "length" and conn is not None and len(conn.buffer) >= self._left:
                # the usual case: the whole body came with the head
                self._content = bytes(conn.buffer[:self._left])
                del conn.buffer[:self._left]
                self._left = 0
                self._finish()
            else:
                self._content = b"".join([piece async for piece in self.aiter_raw()])
        return self._content

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        if self._content is not None:
            if self._content:
                yield self._content
            return
        while True:
            piece = await self._next()
            if not piece:
                return
            yield piece

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body as text lines without their ends, split where httpx splits them
        (str.splitlines: \\n, \\r\\n, \\r and the other Unicode line ends)."""
        decoder = codecs.getincrementaldecoder(_charset(self.headers.get("content-type", "")))(
            errors="replace")
        carry = ""   # the text after the last whole line
        async for piece in self.aiter_raw():
            text = carry + decoder.decode(piece)
            cut = len(text) - 1 if text.endswith("\r") else len(text)   # maybe half a \r\n
            done, carry = text[:cut], text[cut:]
            lines = done.splitlines()
            if done and done[-1] not in LINE_ENDS:
                carry = lines.pop() + carry
            for line in lines:
                yield line
        for line in (carry + decoder.decode(b"", final=True)).splitlines():
            yield line

    async def aclose(self) -> None:
        """Done with the answer; a body left unread closes its connection."""
        if not self._done:
            self._done = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip('"')).name
            except LookupError:
                break
    return "utf-8"


async def _line(conn: _Connection) -> bytes:
    """One line of the answer's framing (chunk sizes, trailers), without its end."""
    while True:
        end = conn.buffer.find(b"\n")
        if end >= 0:
            line = bytes(conn.buffer[:end]).rstrip(b"\r")
            del conn.buffer[:end + 1]
            return line
        if conn.eof:
            raise conn.broken("peer closed connection without sending complete message body: incomplete chunked read")
        if len(conn.buffer) > MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError("a chunk's size line is too long")
        await conn.more()


def _head_end(buffer: bytearray) -> tuple[int, int]:
    """Where the head ends in `buffer` and where the body starts, or (-1, -1)."""
    end = buffer.find(b"\r\n\r\n")
    bare = buffer.find(b"\n\n", 0, end if end >= 0 else len(buffer))
    if bare >= 0:
        return bare, bare + 2
    return (end, end + 4) if end >= 0 else (-1, -1)


def _parse_head(head: bytes) -> tuple[str, int, str, Headers]:
    text = head.decode("latin-1")
    lines = text.split("\r\n") if "\r" in text else text.split("\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if version[:7] != "HTTP/1." or len(code) != 3 or not code.isdigit():
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    fields: dict[str, str] = {}
    name = ""
    for line in lines[1:]:
        if line[:1] in (" ", "\t") and name:   # obs-fold: the previous header goes on (as h11 reads it)
            fields[name] = f"{fields[name]} {line.strip()}".strip()
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name[-1] in " \t" or name[0] in " \t" or "\r" in line:
            raise httpx.RemoteProtocolError(f"malformed header line {line[:80]!r}")
        name, value = name.lower(), value.strip()
        fields[name] = f"{fields[name]}, {value}" if name in fields else value
    return version, int(code), reason, Headers(fields)


def _framing(status: int, headers: Headers) -> tuple[str, int]:
    """How the body is delimited: ("none" | "length" | "chunked" | "close", its length)."""
    if status in (204, 304) or 100 <= status < 200:
        return "none", 0
    coding = dict.get(headers, "transfer-encoding")
    if coding is not None:
        if coding.lower().rsplit(",", 1)[-1].strip() != "chunked":
            raise httpx.RemoteProtocolError(f"unsupported Transfer-Encoding {coding!r}")
        return "chunked", 0
    length = dict.get(headers, "content-length")
    if length is None:
        return "close", 0
    values = {v.strip() for v in length.split(",")}   # a repeated header must agree with itself
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise httpx.RemoteProtocolError(f"bad Content-Length {length!r}")
    size = int(values.pop())
    return ("length", size) if size else ("none", 0)


class UpstreamClient:
    """The pool: up to `max_connections` open, `max_idle` of them kept between requests."""

    def __init__(self, connect_timeout_s: float, read_timeout_s: float,
                 max_connections: int = 200, max_idle: int = 32):
        self.connect_timeout_s, self.read_timeout_s = connect_timeout_s, read_timeout_s
        self.max_connections, self.max_idle = max_connections, max_idle
        self._idle: dict[tuple, list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._slot_waiters: list[asyncio.Future] = []
        self._ssl: ssl.SSLContext | None = None

    async def post(self, origin: Origin, headers: dict, body: bytes) -> UpstreamResponse:
        """POST `body`; the answer's head is read, its body left to the caller."""
        data = head_bytes(origin, headers, len(body)) + body
        conn = self._idle_connection(origin.key)
        if conn is not None:
            seen = conn.received
            try:
                return await self._exchange(conn, data)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                if conn.received != seen:
                    raise
                # Not a byte of an answer on a kept connection: the server closed it as we sent
                # (its keep-alive timeout, often 5 s or less, ran out). Once more on a new one.
        return await self._exchange(await self._connect(origin), data)

    async def _exchange(self, conn: _Connection, data: bytes) -> UpstreamResponse:
        try:
            conn.watch(self.read_timeout_s)
            conn.transport.write(data)
            return await self._read_head(conn)
        except BaseException:
            conn.close()   # cancelled or failed halfway: what is left on it is unknown
            raise

    async def _read_head(self, conn: _Connection) -> UpstreamResponse:
        while True:
            end, body_at = _head_end(conn.buffer)
            while end < 0:
                if conn.eof:
                    raise conn.broken("Server disconnected without sending a response."
                                      if not conn.buffer else "incomplete response head")
                if len(conn.buffer) > MAX_HEAD_BYTES:
                    raise httpx.RemoteProtocolError("the response head is too long")
                await conn.more()
                end, body_at = _head_end(conn.buffer)
            head = bytes(conn.buffer[:end])
            del conn.buffer[:body_at]
            version, status, reason, headers = _parse_head(head)
            if 100 <= status < 200 and status != 101:
                continue   # an informational answer (100 Continue, 103 Early Hints): the real one follows
            framing, length = _framing(status, headers)
            connection = dict.get(headers, "connection", "").lower()
            keep_alive = framing != "close" and (
                "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection)
            return UpstreamResponse(conn, status, reason, headers, framing, length, keep_alive)

    def _idle_connection(self, key: tuple) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.reusable():
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        await self._slot()
        loop = asyncio.get_running_loop()
        conn = _Connection(self, origin.key)
        self._open.add(conn)
        tls = origin.scheme == "https"
        try:
            await asyncio.wait_for(loop.create_connection(
                lambda: conn, origin.host, origin.port, ssl=self._ssl_context() if tls else None,
                server_hostname=origin.host if tls else None), self.connect_timeout_s)
        except asyncio.TimeoutError:
            self._forget(conn)
            raise httpx.ConnectTimeout("timed out") from None
        except OSError as exc:   # refused, unknown host, TLS failure (ssl.SSLError)
            self._forget(conn)
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        except BaseException:
            conn.close()
            raise
        return conn

    async def _slot(self) -> None:
        if len(self._open) < self.max_connections:
            return
        # a connection is closed by then if an idle one of another origin was in the way
        for idle in self._idle.values():
            if idle:
                idle.pop(0).close()
                return
        waiter = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, self.read_timeout_s)
        except asyncio.TimeoutError:
            raise httpx.PoolTimeout("no connection free within the pool timeout") from None
        finally:
            if waiter in self._slot_waiters:
                self._slot_waiters.remove(waiter)

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:   # loads the CA bundle: only once an https remote is used
            self._ssl = httpx.create_ssl_context()
            self._ssl.set_alpn_protocols(["http/1.1"])
        return self._ssl

    def _release(self, conn: _Connection, keep_alive: bool) -> None:
        conn.busy = False
        idle = self._idle.setdefault(conn.origin_key, [])
        if keep_alive and not conn.eof and not conn.buffer and sum(map(len, self._idle.values())) < self.max_idle:
            conn.idle_since = conn.loop.time()
            idle.append(conn)
        else:
            conn.close()

    def _forget(self, conn: _Connection) -> None:
        """`conn` is closed or closing: out of the pool, and its slot free for a waiter."""
        if conn in self._open:
            self._open.discard(conn)
            while self._slot_waiters:
                waiter = self._slot_waiters.pop(0)
                if not waiter.done():
                    waiter.set_result(None)
                    break
        idle = self._idle.get(conn.origin_key)
        if idle and conn in idle:
            idle.remove(conn)

    async def aclose(self) -> None:
        for conn in list(self._open):
            conn.close()
