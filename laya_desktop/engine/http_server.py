"""The engine's HTTP/1.1 server protocol: uvicorn's httptools protocol, with what an answer writes
in one turn of the event loop sent as one write.

uvicorn writes a response's status line and headers as soon as the app starts the response, and
each piece of the body when it comes: a whole answer was two sends, a relayed stream that had
all its bytes three (head and chunk, then the chunked terminator), so the client woke that often
and the engine paid a loopback send each time. Here the writes of one turn are joined and sent
when the loop runs its next callbacks; a stream's chunks that come one turn apart still leave
one by one, and past FLUSH_BYTES held the bytes leave at once (flow control sees them).

`EngineServer` is uvicorn's server without its 10 Hz tick: an idle engine wakes once a second.
"""
from __future__ import annotations

import asyncio

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as UvicornProtocol

FLUSH_BYTES = 256 * 1024
TICK_S = 1.0   # uvicorn's Date header is refreshed this often, as uvicorn does


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
