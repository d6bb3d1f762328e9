"""Server-sent events in OpenAI's format, and a streaming response that notices a client leaving.

Starlette only watches for `http.disconnect` on older ASGI versions; on 2.4 it waits until a write
fails, which may be never while a runner is still processing a prompt. This response always watches,
and cancels the body iterator at once so its `finally` frees the runner's slot.
"""
from __future__ import annotations

import json
from functools import partial

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

DONE = b"data: [DONE]\n\n"


def sse(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


class DisconnectAwareStreamingResponse(StreamingResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as tg:
            async def run_then_cancel(func) -> None:
                try:
                    await func()
                except OSError:
                    pass  # the client went away mid-write
                tg.cancel_scope.cancel()

            tg.start_soon(run_then_cancel, partial(self.stream_response, send))
            await run_then_cancel(partial(self.listen_for_disconnect, receive))
        if self.background is not None:
            await self.background()
