"""Per-model admission: at most `limit` requests in flight, a bounded FIFO queue behind them.

The runner itself serves `parallel` sequences; the engine keeps the rest here so that
`max_queue` and `queue_timeout_ms` mean what models.yaml says, and so a full queue can send the
request to a fallback before anything was started.
"""
from __future__ import annotations

import asyncio
import collections


class QueueFull(Exception):
    pass


class QueueTimeout(Exception):
    pass


class ModelQueue:
    def __init__(self, limit: int, max_queue: int):
        self.limit = limit
        self.max_queue = max_queue
        self.active = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    @property
    def queued(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self, timeout_s: float) -> None:
        if self.active < self.limit and not self.queued:
            self.active += 1
            return
        if self.queued >= self.max_queue:
            raise QueueFull()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            if waiter.done() and not waiter.cancelled():
                # The slot was handed to us just as we gave up: pass it on.
                self.release()
            else:
                waiter.cancel()
                self._waiters.remove(waiter)  # don't let given-up waiters pile up behind a long request
            if isinstance(exc, asyncio.TimeoutError):
                raise QueueTimeout() from None
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes straight to the next in line
                return
        self.active -= 1

    def resize(self, limit: int, max_queue: int) -> None:
        self.max_queue = max_queue
        grow = limit - self.limit
        self.limit = limit
        for _ in range(max(0, grow)):
            if not self._wake_one():
                break

    def _wake_one(self) -> bool:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.active += 1
                waiter.set_result(None)
                return True
        return False
