"""Server-sent events in OpenAI's format, and a streaming response that notices a client leaving.

Starlette only watches for `http.disconnect` on older ASGI versions; on 2.4 it waits until a write
fails, which may be never while a runner is still processing a prompt. This response always watches,
and cancels the body iterator at once so its `finally` frees the runner's slot.
"""
from __future__ import annotations

import asyncio
import json

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

DONE = b"data: [DONE]\n\n"


def sse(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


class DisconnectAwareStreamingResponse(StreamingResponse):
    """`then`, if given, runs once the response is done (sent, failed or the client gone), on the
    loop's next turn: after the stream's last held write has left (engine/http_server.py)."""

    def __init__(self, *args, then=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._then = then

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Plain asyncio rather than an anyio task group, whose cancel scope formats the task's
        # repr into every cancel reason: a watcher task cancels this one when the client leaves.
        task = asyncio.current_task()
        left = False

        async def watch() -> None:
            nonlocal left
            await self.listen_for_disconnect(receive)
            left = True
            task.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await self.stream_response(send)
        except OSError:
            pass  # the client went away mid-write
        except asyncio.CancelledError:
            if not left:
                raise
            if hasattr(task, "uncancel"):   # Python 3.11+: the cancel was ours, not the caller's
                task.uncancel()
        finally:
            # the watcher cannot have run since the last write completed the response: no await
            # lies between that write and this
            watcher.cancel()
            if self._then is not None:
                asyncio.get_running_loop().call_soon(self._then)
        if self.background is not None:
            await self.background()
