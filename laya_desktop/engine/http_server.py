"""The engine's HTTP/1.1 server protocol: uvicorn's httptools protocol, with what an answer writes
in one turn of the event loop sent as one write.

uvicorn writes a response's status line and headers as soon as the app starts the response, and
each piece of the body when it comes: a whole answer was two sends, a relayed stream that had
all its bytes three (head and chunk, then the chunked terminator), so the client woke that often
and the engine paid a loopback send each time. Here the writes of one turn are joined and sent
when the loop runs its next callbacks; a stream's chunks that come one turn apart still leave
one by one, and past FLUSH_BYTES held the bytes leave at once (flow control sees them).
"""
from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as UvicornProtocol

FLUSH_BYTES = 256 * 1024


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


class EngineHttpProtocol(UvicornProtocol):
    """uvicorn's httptools protocol (uvicorn.Config(http=EngineHttpProtocol)) over HeldWrites."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = HeldWrites(transport, self.loop)
