"""A stream's outputs with a `KeepAlive` in every silence, for clients that time out idle streams.

One task reads the outputs into a queue for the whole stream, and one timer, re-armed once per
period rather than per output, adds the heartbeat. Waiting on each output with a timeout instead
takes a task and `asyncio.wait`'s futures and timer for every streamed token, several times
what this way costs under uvloop (`bench/keepalive.py`, both side by side).

The queue has no bound: a local runner's events are queued already (runner_handle), and a remote
answer is as long as its max_tokens.
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from laya_desktop.engine.outputs import KeepAlive, Output

KEEPALIVE_S = 10.0   # a stream with nothing new for this long gets its API's heartbeat


class _End:
    """Put after the last output, with the source's exception if it raised one."""

    def __init__(self, error: BaseException | None = None):
        self.error = error


async def with_keepalive(outputs: AsyncIterator[Output],
                         every_s: float = KEEPALIVE_S) -> AsyncIterator[Output]:
    """The outputs, in order, with a KeepAlive whenever none came for `every_s` seconds; an
    exception of the outputs is raised here after the outputs before it."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    last = loop.time()   # when the reader last got anything from `queue`

    async def read() -> None:
        try:
            async for out in outputs:
                queue.put_nowait(out)
        except asyncio.CancelledError as exc:   # ours, once the stream ended, or the source's own
            queue.put_nowait(_End(exc))
            raise
        except Exception as exc:
            queue.put_nowait(_End(exc))
        else:
            queue.put_nowait(_End())

    def beat() -> None:
        nonlocal timer
        due = last + every_s
        if loop.time() >= due:
            if queue.empty():   # the reader waits: nothing came for every_s
                queue.put_nowait(KeepAlive())
            due = loop.time() + every_s
        timer = loop.call_at(due, beat)

    reader = asyncio.ensure_future(read())
    timer = loop.call_at(last + every_s, beat)
    try:
        while True:
            out = await queue.get()
            last = loop.time()
            if isinstance(out, _End):
                if out.error is not None:
                    raise out.error
                return
            yield out
    finally:
        timer.cancel()
        reader.cancel()
