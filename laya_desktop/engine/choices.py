"""`n` choices of one request: their generations' outputs merged into one stream, each output
tagged with its choice's index, as OpenAI's `n` streams them (chunks of choices interleaved).

Each choice's `Finished` carries the usage so far (the prompt counted once, the completions
summed), so the last one to finish carries the request's total: writers that put one usage in an
answer take the last.
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from laya_desktop.engine.outputs import Failed, Finished, Output, Usage

_END = object()


async def _pump(index: int, outputs: AsyncIterator[Output], queue: asyncio.Queue) -> None:
    try:
        async for out in outputs:
            await queue.put((index, out))
    except Exception as exc:  # noqa: BLE001 - a choice that broke ends the request cleanly
        await queue.put((index, Failed("internal", f"choice {index} failed: {exc!r}")))
    finally:
        await queue.put((index, _END))


async def merged_choices(streams: list[AsyncIterator[Output]]) -> AsyncIterator[Output]:
    queue: asyncio.Queue = asyncio.Queue()
    tasks = [asyncio.ensure_future(_pump(i, s, queue)) for i, s in enumerate(streams)]
    total, open_streams = None, len(streams)
    try:
        while open_streams:
            index, out = await queue.get()
            if out is _END:
                open_streams -= 1
                continue
            if isinstance(out, Failed):
                yield out
                return
            if isinstance(out, Finished):
                u = out.usage
                total = u if total is None else Usage(
                    total.prompt_tokens, total.completion_tokens + u.completion_tokens,
                    total.cached_tokens, total.cached_from)
                out = Finished(out.finish_reason, total, index)
            elif hasattr(out, "choice"):
                out.choice = index
            yield out
    finally:
        for task in tasks:
            task.cancel()
