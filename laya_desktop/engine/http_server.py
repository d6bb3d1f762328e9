"""The engine's HTTP/1.1 server protocol: uvicorn's httptools protocol, with an answer's head and
body sent in one write.

uvicorn writes a response's status line and headers as soon as the app starts the response, and
the body when it comes: for a whole answer that is two sends, so the client wakes twice and the
engine pays for a second loopback send.
Here a write is held until the next write, which then goes out with it, or until the event loop
runs its next callbacks: a whole answer leaves as one send, a stream's head still leaves at once.
"""
from __future__ import annotations

import asyncio

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as UvicornProtocol
except ImportError:   # httptools is a dependency; a checkout without it still serves, on h11
    from uvicorn.protocols.http.h11_impl import H11Protocol as UvicornProtocol

COPY_LIMIT = 256 * 1024


class HeldWrites:
    """A transport whose writes leave with the next write or on the loop's next turn; everything
    else is the socket transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) < COPY_LIMIT:
                self._transport.write(held + data)
                return
            self._transport.write(held)   # a large body: two sends rather than a copy
            self._transport.write(data)
        elif data:
            self._held = data
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():   # the client may have left in the meantime
                self._transport.write(held)

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
