"""with_keepalive: every output in order, a heartbeat in each silence, errors and early ends."""
import asyncio

import pytest

from laya_desktop.engine.keepalive import with_keepalive
from laya_desktop.engine.outputs import Failed, Finished, KeepAlive, TextDelta


def collect(source, every_s):
    async def run():
        return [out async for out in with_keepalive(source, every_s=every_s)]
    return asyncio.run(run())


def test_keepalive_fills_silences_and_passes_every_output_on():
    async def slow():
        await asyncio.sleep(0.35)   # a long prompt being read
        yield TextDelta("a")
        yield Finished("stop")

    outs = collect(slow(), 0.1)
    assert 2 <= sum(isinstance(o, KeepAlive) for o in outs) <= 4
    assert [o for o in outs if not isinstance(o, KeepAlive)] == [TextDelta("a"), Finished("stop")]


def test_outputs_faster_than_the_period_get_no_heartbeat():
    async def steady():
        for i in range(30):
            await asyncio.sleep(0.01)
            yield TextDelta(str(i))
        yield Finished("stop")

    outs = collect(steady(), 0.1)
    assert outs == [TextDelta(str(i)) for i in range(30)] + [Finished("stop")]


def test_a_silence_after_outputs_gets_its_heartbeat_too():
    async def pause():
        yield TextDelta("a")
        await asyncio.sleep(0.25)   # e.g. a remote model thinking mid-answer
        yield TextDelta("b")

    outs = collect(pause(), 0.1)
    assert outs[0] == TextDelta("a") and outs[-1] == TextDelta("b")
    assert 1 <= sum(isinstance(o, KeepAlive) for o in outs[1:-1]) <= 3


def test_an_error_of_the_outputs_is_raised_after_the_outputs_before_it():
    async def broken():
        yield TextDelta("a")
        raise RuntimeError("upstream went away")

    seen = []

    async def run():
        async for out in with_keepalive(broken(), every_s=1):
            seen.append(out)

    with pytest.raises(RuntimeError, match="upstream went away"):
        asyncio.run(run())
    assert seen == [TextDelta("a")]


def test_a_reader_that_stops_early_closes_the_outputs():
    """A client leaving mid-stream ends the reading task, so the source's finally (which frees
    the runner's slot) runs and no task is left behind."""
    async def run():
        ended = asyncio.Event()

        async def endless():
            try:
                while True:
                    await asyncio.sleep(0.01)
                    yield TextDelta("x")
            finally:
                ended.set()

        stream = with_keepalive(endless(), every_s=0.05)
        assert isinstance(await stream.__anext__(), TextDelta)
        await stream.aclose()
        await asyncio.wait_for(ended.wait(), 1)
        await asyncio.sleep(0)
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(run()) == []


def test_failed_outputs_pass_as_outputs():
    async def failing():
        yield Failed("runner_crashed", "the runner exited", 500)

    assert collect(failing(), 1) == [Failed("runner_crashed", "the runner exited", 500)]
