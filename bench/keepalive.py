"""What a stream's heartbeat wrapper costs per streamed output, under the engine's event loop.

Every streamed answer passes through `with_keepalive` (engine/keepalive.py), once per token. The
outputs here come the way a runner's tokens do: one per turn of the loop, through a queue. Three
ways, in alternating rounds of the same run:
- `plain`: the outputs read directly (no heartbeat at all): the floor;
- `task per output`: the wrapper before this one, which waited on each output's `__anext__` in a
  task of its own with `asyncio.wait(timeout=...)`: the baseline;
- `with_keepalive`: one reading task per stream and a timer per silence.

    .venv/bin/python bench/keepalive.py [--outputs 20000] [--rounds 5] [--json]

Prints µs per output (medians over rounds) and what each wrapper adds to `plain`; writes
bench/results/keepalive/.
"""
from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from laya_desktop.engine.keepalive import KEEPALIVE_S, with_keepalive  # noqa: E402
from laya_desktop.engine.outputs import KeepAlive  # noqa: E402
from publish import begin, publish  # noqa: E402


async def task_per_output(outputs, every_s: float = KEEPALIVE_S):
    """The baseline: the wrapper as it was (engine/serving.py until December 2026)."""
    source = outputs.__aiter__()
    pending = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(source.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=every_s)
            if not done:
                yield KeepAlive()
                continue
            finished, pending = pending, None
            try:
                out = finished.result()
            except StopAsyncIteration:
                return
            yield out
    finally:
        if pending is not None:
            pending.cancel()


WAYS = {"plain": None, "task per output": task_per_output, "with_keepalive": with_keepalive}


async def _source(queue: asyncio.Queue):
    while (item := await queue.get()) is not None:
        yield item


async def _produce(queue: asyncio.Queue, n: int) -> None:
    for i in range(n):
        queue.put_nowait(i)
        await asyncio.sleep(0)   # one output per turn of the loop, as a runner's tokens come
    queue.put_nowait(None)


async def us_per_output(wrap, n: int) -> float:
    queue: asyncio.Queue = asyncio.Queue()
    producer = asyncio.ensure_future(_produce(queue, n))
    source = _source(queue)
    stream = wrap(source) if wrap else source
    started = time.perf_counter()
    count = 0
    async for _ in stream:
        count += 1
    elapsed = time.perf_counter() - started
    await producer
    assert count == n, (count, n)
    return elapsed / n * 1e6


async def measure(n: int, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in WAYS}
    for _ in range(rounds):
        for name, wrap in WAYS.items():
            times[name].append(await us_per_output(wrap, n))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    times = uvloop.run(measure(args.outputs, args.rounds))
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians["plain"]
    lines = ["| way | µs per output (median) | added to plain, µs |", "|---|---|---|"]
    for name, value in medians.items():
        lines.append(f"| {name} | {value:.2f} | {value - floor:.2f} |")
    base = medians["task per output"] - floor
    new = medians["with_keepalive"] - floor
    lines.append(f"\nwith_keepalive adds {new:.2f} µs per output against {base:.2f} µs "
                 f"for a task per output ({new / base:.2f}x)")
    report = {"outputs": args.outputs, "rounds": args.rounds, "machine": platform.machine(),
              "python": platform.python_version(), "us_per_output": times,
              "median_us": medians, "added_us": {k: v - floor for k, v in medians.items()}}
    publish("keepalive", report, "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    sys.exit(main())
