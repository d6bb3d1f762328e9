"""The engine's HTTP/1.1 server protocol: uvicorn's httptools protocol, with what an answer writes
in one turn of the event loop sent as one write, and bounds on what a client can hold.

uvicorn writes a response's status line and headers as soon as the app starts the response, and
each piece of the body when it comes: a whole answer was two sends, a relayed stream that had
all its bytes three (head and chunk, then the chunked terminator), so the client woke that often
and the engine paid a loopback send each time. Here the writes of one turn are joined and sent
when the loop runs its next callbacks; a stream's chunks that come one turn apart still leave
one by one, and past FLUSH_BYTES held the bytes leave at once (flow control sees them).

Bounds: a connection that keeps the engine waiting for its bytes is closed (idle,
a head not complete in time, a body that stalls; 408 where a request is under way), a request
head over MAX_HEAD_BYTES gets 431 before more of it is read, and past the connection cap the
longest idle connection is closed for the new one (else the oldest head still coming after
SLOW_HEAD_S gets 408), or the new one gets 503. No timer per
request: one sweep per server every `Bounds.sweep_s` looks at each connection's state; the
per-read cost is a byte count and a comparison. Nothing is timed while the engine itself works
(a generation, a stream, a body it has not read yet).

`EngineServer` is uvicorn's server without its 10 Hz tick: an idle engine wakes once a second.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from dataclasses import dataclass, replace

import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as UvicornProtocol

FLUSH_BYTES = 256 * 1024
TICK_S = 1.0   # uvicorn's Date header is refreshed this often, as uvicorn does

# What a client may make the engine wait for or hold; docs/reliability.md ("Bounds") says why.
IDLE_S = 60.0           # nothing sent: before the first request and between requests; closed
HEADER_S = 60.0         # a request head not complete this long after it began: 408
BODY_STALL_S = 60.0     # no byte of a body this long: 408
BODY_MIN_BPS = 1024     # past its first BODY_STALL_S, a body must have averaged this: 408
MAX_HEAD_BYTES = 64 * 1024   # request line and headers together: 431
MAX_HEADERS = 256
MAX_CONNECTIONS = 4096  # open client connections, however many descriptors the process may have
EVICT_IDLE_AFTER_S = 1.0     # at the cap, an idle connection this old is closed for a new one
SLOW_HEAD_S = 10.0      # at the cap, with none idle, a head under way this long gets 408 for one
MAX_REFUSING = 64       # 503 answers lingering at once; past this the oldest is closed
RETRY_AFTER_S = 1
LINGER_S = 2.0          # after an answer that ends a connection, the client's bytes are drained
SWEEP_S = 1.0

IDLE, HEAD, BODY, BUSY = "idle", "head", "body", "busy"

log = logging.getLogger("laya.engine")


@dataclass(frozen=True)
class Bounds:
    idle_s: float = IDLE_S
    header_s: float = HEADER_S
    body_stall_s: float = BODY_STALL_S
    body_min_bps: float = BODY_MIN_BPS
    max_head_bytes: int = MAX_HEAD_BYTES
    max_headers: int = MAX_HEADERS
    slow_head_s: float = SLOW_HEAD_S
    max_connections: int | None = None   # None: no cap (`laya serve` sets one, see fd_limit.py)

    def scaled(self, factor: float) -> "Bounds":
        """The timeouts times `factor`: tests run them in seconds."""
        return replace(self, idle_s=self.idle_s * factor, header_s=self.header_s * factor,
                       body_stall_s=self.body_stall_s * factor,
                       slow_head_s=self.slow_head_s * factor)

    @property
    def sweep_s(self) -> float:
        return max(0.02, min(SWEEP_S, self.idle_s / 10, self.header_s / 10, self.body_stall_s / 10))


class HeldWrites:
    """A transport whose writes of one loop turn leave together at its end; everything else is
    the socket transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None
        self._size = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        held = self._held
        if held is None:
            self._held, self._size = [data], len(data)
            self._loop.call_soon(self.flush)
            return
        if len(data) >= FLUSH_BYTES:   # a large body: two sends rather than a copy of it
            self.flush()
            self._transport.write(data)
            return
        held.append(data)
        self._size += len(data)
        if self._size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():   # the client may have left in the meantime
                self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


def answer(status: int, default_headers, message: str, code: str, *extra: bytes) -> bytes:
    """A whole answer that ends its connection, with an OpenAI-shaped error body."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    body = json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()
    head = [STATUS_LINE[status]]
    for name, value in default_headers:
        head += [name, b": ", value, b"\r\n"]
    head += [b"content-type: application/json\r\ncontent-length: ", str(len(body)).encode(),
             b"\r\nconnection: close\r\n", *extra, b"\r\n"]
    return b"".join(head) + body


class Drain(asyncio.Protocol):
    """A connection after an answer that ended it: our side is half-closed, and whatever the client
    still sends is read and dropped until it closes or LINGER_S pass. Closing with unread bytes
    would reset the connection, and the reset can destroy the answer before the client reads it
    (what nginx's lingering close is for)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, on_lost):
        self._on_lost = on_lost
        self._timer = loop.call_later(LINGER_S, transport.close)

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> None:
        return None   # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._timer.cancel()
        self._on_lost(exc)


def end_with(transport: asyncio.Transport, loop, data: bytes, on_lost) -> None:
    """Write `data`, half-close, drain (see Drain)."""
    transport.write(data)
    if transport.can_write_eof():
        transport.write_eof()
    transport.set_protocol(Drain(transport, loop, on_lost))


class Gate:
    """One server's connections against its Bounds: the cap when one is accepted, and the sweep
    that closes those that kept the engine waiting too long. The sweep runs only while there are
    connections, so an idle engine still wakes once a second at most."""

    def __init__(self, bounds: Bounds, connections: set, loop: asyncio.AbstractEventLoop):
        self.bounds, self.connections, self.loop = bounds, connections, loop
        # as of the last sweep, oldest first: (idle since, connection), (head since, connection)
        self.idle: deque = deque()
        self.slow_heads: deque = deque()
        self.refusing: dict[asyncio.Transport, None] = {}   # lingering 503s, oldest first
        self.refused = self.evicted = self.timed_out = 0
        self._refused_logged = 0
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def of(cls, protocol: "EngineHttpProtocol") -> "Gate":
        # One per uvicorn server: kept on its ServerState, which all its connections share.
        state = protocol.server_state
        gate = getattr(state, "laya_gate", None)
        if gate is None:
            gate = state.laya_gate = cls(protocol.bounds, protocol.connections, protocol.loop)
        return gate

    def admit(self) -> bool:
        if self._timer is None:
            self._timer = self.loop.call_later(self.bounds.sweep_s, self.sweep)
        cap = self.bounds.max_connections
        return cap is None or len(self.connections) < cap or self._make_room()

    def _make_room(self) -> bool:
        """Close the longest idle connection, if one has been idle EVICT_IDLE_AFTER_S (a client
        that has just connected is about to send its request), as nginx reuses keep-alive ones;
        else answer 408 to the oldest head that is still coming after slow_head_s (a client
        sends a head in milliseconds: this is a slowloris, or a link too slow to serve anyway)."""
        now = self.loop.time()
        while self.idle:
            since, conn = self.idle[0]
            if now - since < EVICT_IDLE_AFTER_S:
                break
            self.idle.popleft()
            if conn in self.connections and conn.idle_since() == since:
                self.connections.discard(conn)   # before connection_lost: it counts no longer
                conn.transport.close()
                self.evicted += 1
                return True
        while self.slow_heads:
            since, conn = self.slow_heads.popleft()
            if conn in self.connections and conn.head_since() == since:
                self.connections.discard(conn)
                conn.time_out("the request head was too slow, and the engine needed its room")
                self.evicted += 1
                return True
        return False

    def refuse(self, transport: asyncio.Transport, default_headers) -> None:
        """Answer 503 at once, without reading the request. The answers linger (Drain) to reach
        the client; in a flood only the newest MAX_REFUSING do, so refusals cannot take the
        descriptors that the engine keeps for itself."""
        self.refused += 1
        if len(self.refusing) >= MAX_REFUSING:
            oldest = next(iter(self.refusing))   # its answer has had the longest to be read
            del self.refusing[oldest]
            oldest.close()
        self.refusing[transport] = None
        cap = self.bounds.max_connections
        end_with(transport, self.loop, answer(
            503, default_headers, f"the engine is at its limit of {cap} open connections; "
            f"try again in {RETRY_AFTER_S} s", "too_many_connections",
            b"retry-after: %d\r\n" % RETRY_AFTER_S), lambda exc: self.refusing.pop(transport, None))

    def sweep(self) -> None:
        now = self.loop.time()
        idle, slow = [], []
        slow_from = now - self.bounds.slow_head_s
        for conn in list(self.connections):
            if not isinstance(conn, EngineHttpProtocol):
                continue
            since = conn.check(now)
            if since is not None:
                idle.append((since, conn))
            elif conn._phase_seen is HEAD and not conn._ended and conn._since <= slow_from:
                slow.append((conn._since, conn))
        idle.sort(key=lambda item: item[0])
        slow.sort(key=lambda item: item[0])
        self.idle, self.slow_heads = deque(idle), deque(slow)
        if self.refused != self._refused_logged:   # one line a sweep, not one per refusal
            log.warning("%d connections refused with 503 at the limit of %d open connections",
                        self.refused - self._refused_logged, self.bounds.max_connections)
            self._refused_logged = self.refused
        self._timer = (self.loop.call_later(self.bounds.sweep_s, self.sweep)
                       if self.connections else None)


class EngineHttpProtocol(UvicornProtocol):
    """uvicorn's httptools protocol (uvicorn.Config(http=EngineHttpProtocol)) over HeldWrites,
    within `bounds` (`EngineHttpProtocol.bounded(Bounds(...))` for others)."""

    bounds = Bounds()
    # Slots: uvicorn's ~28 attributes fit CPython's shared-key instance dict (30 at most); a
    # dozen more in the dict would slow every attribute read of uvicorn's hot path
    # (bench/gateway_overhead.py shows it).
    __slots__ = ("_gate", "_max_head", "_check_from", "_received", "_chunk_at", "_head_at", "_refusing_head",
                 "_phase_seen", "_for", "_since", "_from", "_progress", "_ended")

    @classmethod
    def bounded(cls, bounds: Bounds) -> type:
        return type(cls.__name__, (cls,), {"bounds": bounds, "__slots__": ()})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._gate = Gate.of(self)
        self._max_head = self.bounds.max_head_bytes
        self._check_from = min(self._max_head, 4 * self.bounds.max_headers)
        self._received = 0           # bytes read on this connection
        self._chunk_at = 0           # _received where the chunk being parsed began
        self._head_at: int | None = None   # _received where the open request head began
        self._refusing_head = False
        # the sweep's view: what it saw last (phase and the object it was for), since when
        self._phase_seen, self._for = IDLE, None
        self._since = 0.0
        self._from = 0               # _received when the sweep first saw this phase
        self._progress = (0, 0.0)    # (_received, when) at the last sweep that saw bytes come
        self._ended = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self._gate.admit():
            self._gate.refuse(transport, self.server_state.default_headers)
            return
        super().connection_made(transport)
        self.transport = HeldWrites(transport, self.loop)
        self._since = self.loop.time()

    # --- the hot path: a count and a comparison per read, a store per request head ---
    def data_received(self, data: bytes) -> None:
        at = self._received
        self._received = end = at + len(data)
        head_at = self._head_at
        if head_at is not None and end - head_at > self._max_head:
            return self._refuse_head()
        self._chunk_at = at
        UvicornProtocol.data_received(self, data)   # not super(): 50 ns a call
        head_at = self._head_at
        if head_at is not None and end - head_at > self._max_head:
            self._refuse_head()   # a head begun in this read, already too long

    def on_message_begin(self) -> None:
        UvicornProtocol.on_message_begin(self)
        self._head_at = self._chunk_at   # counts the whole read: never less than the head

    def on_headers_complete(self) -> None:
        head_at, self._head_at = self._head_at, None
        # A head that came whole in one read passed data_received's check. A field takes at least
        # 4 bytes ("X:\r\n"), so a read under _check_from cannot hold too many, nor too many bytes.
        if self._received - head_at > self._check_from and self._head_too_large(head_at):
            self._refusing_head = True
            raise HeadTooLarge()   # httptools stops; uvicorn calls send_400_response
        UvicornProtocol.on_headers_complete(self)

    def _head_too_large(self, head_at: int) -> bool:
        return (len(self.headers) > self.bounds.max_headers
                or (self._received - head_at > self._max_head
                    and head_size(self.parser.get_method(), self.url, self.headers)
                    > self._max_head))

    def send_400_response(self, msg: str) -> None:
        if self._refusing_head:
            self._refusing_head = False
            if len(self.headers) > self.bounds.max_headers:
                return self._refuse_head(f"more than {self.bounds.max_headers} header fields")
            return self._refuse_head()
        super().send_400_response(msg)

    def _refuse_head(self, why: str | None = None) -> None:
        if self._head_at == REFUSED:
            return   # bytes that came in the same turn as the refusal
        self._head_at = REFUSED
        self._end(431, why or f"the request head is over {self._max_head // 1024} KiB",
                  "request_header_fields_too_large")

    # --- the sweep ---
    def idle_since(self) -> float | None:
        phase, of = self._phase()
        return self._since if phase is self._phase_seen is IDLE and of is self._for else None

    def head_since(self) -> float | None:
        phase, of = self._phase()
        return self._since if phase is self._phase_seen is HEAD and of is self._for else None

    def _phase(self) -> tuple[str, object]:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # the engine waits for body bytes only while it reads them and owes nothing first
            if (cycle.more_body and not cycle.response_started and not self.flow.read_paused
                    and not cycle.waiting_for_100_continue):
                return BODY, cycle
            return BUSY, None
        if self._head_at is not None:
            return HEAD, self.scope
        return IDLE, cycle

    def check(self, now: float) -> float | None:
        """Close this connection if it has kept the engine waiting too long; the time it has been
        idle since when it is idle (a candidate to close at the cap), else None."""
        if self._ended:
            return None
        phase, of = self._phase()
        if phase is not self._phase_seen or of is not self._for:
            self._phase_seen, self._for, self._since = phase, of, now
            self._from, self._progress = self._received, (self._received, now)
            return now if phase is IDLE else None
        waited, bounds = now - self._since, self.bounds
        if phase is IDLE:
            if waited < bounds.idle_s:
                return self._since
            self._gate.timed_out += 1
            self._ended = True
            self.transport.close()   # nothing asked, nothing to answer
        elif phase is HEAD:
            if waited >= bounds.header_s:
                self.time_out(f"the request head was not complete within {bounds.header_s:g} s")
        elif phase is BODY:
            if self._received != self._progress[0]:
                self._progress = (self._received, now)
            if now - self._progress[1] >= bounds.body_stall_s:
                self.time_out(f"no byte of the request body came for {bounds.body_stall_s:g} s")
            elif (waited >= bounds.body_stall_s
                  and (self._received - self._from) / waited < bounds.body_min_bps):
                self.time_out(f"the request body came slower than {bounds.body_min_bps:g} B/s")
        return None

    def time_out(self, why: str) -> None:
        self._gate.timed_out += 1
        self._end(408, why, "request_timeout")

    def _end(self, status: int, why: str, code: str) -> None:
        """Answer `status` and end the connection; a request still under way on it is told it
        is gone (its receive() ends now, not after the drain, and its answer goes nowhere)."""
        self._ended = True
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()   # an answer is under way: no second one inside it
                return
        self.transport.flush()
        end_with(self.transport._transport, self.loop,
                 answer(status, self.server_state.default_headers, why, code), self.connection_lost)


class HeadTooLarge(Exception):
    pass


def head_size(method: bytes, url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed request head ("M URL HTTP/1.1", "name: value" lines, CRLFs)."""
    return len(method) + len(url) + 14 + sum(len(name) + len(value) + 4 for name, value in headers)


REFUSED = -(1 << 62)   # _head_at once a head is refused: every later read is over the limit


class EngineServer(uvicorn.Server):

    """uvicorn's server, ticking once a second instead of ten times (its tick only refreshes the
    Date header every tenth time and looks at `should_exit`); setting `should_exit`, from any
    thread or a signal handler, ends the wait at once."""

    def __init__(self, config: uvicorn.Config):
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Future | None = None
        super().__init__(config)

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        loop, wake = self._loop, self._wake
        if value and loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(_set, wake)
            except RuntimeError:
                pass   # the loop is closed: nothing is waiting any more

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            # on_tick refreshes the Date header when the counter is a multiple of 10
            counter = (counter + 10) % 864000
            self._wake = wake = self._loop.create_future()
            if self._should_exit:   # set before this wait could be woken
                break
            timer = self._loop.call_later(TICK_S, _set, wake)
            await wake
            timer.cancel()
            should_exit = await self.on_tick(counter)
        self._wake = None


def _set(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
