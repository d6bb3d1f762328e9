"""The scheduler's decisions, in-process with fake effects (llama-swap's fakeEffects tests).

Runners here have no process: `FakeRunner` answers what the scheduler and dispatch ask of a
runner, and `FakeEffects` starts and stops them, samples a machine whose memory is the sum of
what they hold, and keeps the events. Every case runs in milliseconds; the same paths against
real runner processes are in test_admission_race.py, test_memory_guard_e2e.py and test_faults.py.
"""
from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from laya_desktop.config.validate import validate_config
from laya_desktop.engine.calls import Call
from laya_desktop.engine.dispatch import start_generation
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.memory_policy import GIB
from laya_desktop.engine.model_manager import LoadRefused, ModelManager, ServedState
from laya_desktop.engine.runner_handle import RunnerError, RunnerState
from laya_desktop.telemetry.model_sample import ModelSample, ModelState

RAM_TOTAL = 16 * GIB
BASE_USED = 4 * GIB        # the rest of the machine
SIZE = 6 * GIB             # every model's estimate: one fits above the 2 GiB reserve, two never


class FakeRunner:
    """A runner without a process: the state the scheduler asks about, streams that answer."""

    def __init__(self, model, on_crash=None, on_hang=None, silence_s=30.0):
        self.model = model
        self.state = RunnerState.UNLOADED
        self.pid: int | None = None
        self.loaded_at: float | None = None
        self.retired = False
        self.info: dict = {}
        self.stats: dict = {}
        self.error: str | None = None
        self.reply = "hi"
        self.closed: list[tuple[str, bool]] = []

    is_ready = property(lambda self: self.state is RunnerState.READY)
    is_loading = property(lambda self: self.state is RunnerState.LOADING)

    def retire(self) -> None:
        self.retired = True

    def reconfigure(self, model, silence_s: float) -> None:
        self.model = model

    async def open_stream(self, req_id: str, command: dict) -> asyncio.Queue:
        if not self.is_ready:
            raise RunnerError(f"model '{self.model.name}' is not loaded", "model_unloaded")
        queue: asyncio.Queue = asyncio.Queue()
        for event in ({"event": "queued", "id": req_id, "prompt_tokens": 3},
                      {"event": "token", "id": req_id, "text": self.reply},
                      {"event": "done", "id": req_id, "finish_reason": "stop",
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1}}):
            queue.put_nowait(event)
        return queue

    async def close_stream(self, req_id: str, cancel: bool) -> None:
        self.closed.append((req_id, cancel))


class FakeEffects:
    """Loads take `load_s`; a loaded model holds its estimate as private memory."""

    def __init__(self, sizes: dict[str, int] | None = None, load_s: float = 0.01):
        self.sizes = sizes if sizes is not None else {}
        self.load_s = load_s
        self.fail: set[str] = set()         # models whose runner fails to start
        self.log: list[tuple] = []
        self.events: list[tuple[str, dict]] = []
        self.manager: ModelManager | None = None
        self.resident: dict[str, int] = {}
        self.extra_used = 0                 # something else on the machine eating memory
        self._pids = itertools.count(1000)

    async def start(self, served) -> None:
        runner = served.handle
        runner.state, runner.pid = RunnerState.LOADING, next(self._pids)
        self.log.append(("start", served.name))
        await asyncio.sleep(self.load_s)
        if served.name in self.fail:
            runner.state, runner.pid = RunnerState.ERROR, None
            raise RunnerError(f"cannot load model '{served.name}': broken", "load_failed")
        runner.state, runner.loaded_at = RunnerState.READY, time.time()
        self.resident[served.name] = self.sizes.get(served.name, 0)
        self.log.append(("ready", served.name))

    async def stop(self, served, reason: str, grace_s: float | None) -> bool:
        runner = served.handle
        while runner.is_loading:            # as RunnerHandle.stop: a start under way ends first
            await asyncio.sleep(0.001)
        if runner.pid is None:
            return False
        runner.state, runner.pid, runner.loaded_at = RunnerState.UNLOADED, None, None
        self.resident.pop(served.name, None)
        self.log.append(("stop", served.name))
        return True

    async def estimate(self, model):
        size = self.sizes.get(model.name)
        return None if size is None else (size, 0)

    def sample(self) -> dict:
        used = BASE_USED + self.extra_used + sum(self.resident.values())
        models = {s.name: ModelSample(ModelState(s.state), pid=s.handle.pid,
                                      private=self.resident.get(s.name), shared=0).to_json()
                  for s in self.manager.all() if s.handle is not None}
        return {"ram_total": RAM_TOTAL, "ram_used": used, "ram_available": RAM_TOTAL - used,
                "gpus": [], "models": models}

    def ram_available(self) -> int:
        return self.sample()["ram_available"]

    async def wait_memory_back(self, before: int, freed: int) -> None:
        self.log.append(("memory_back", freed))

    def record(self, kind: str, **fields) -> None:
        self.events.append((kind, fields))

    def kinds(self, *wanted: str) -> list[tuple[str, str]]:
        return [(k, f.get("model")) for k, f in self.events if not wanted or k in wanted]


def config(*names: str, **per_model):
    raw = {"models": [{"name": n, "backend": "llama_cpp", "path": f"/{n}.gguf",
                       **per_model.get(n, {})} for n in names],
           "routes": [{"name": "default", "target": names[0]}],
           "scheduler": {"queue_timeout_ms": 50, "max_queue": 1},
           "memory": {"reserved_system_gb": 2, "ram_high_pct": 90}}
    cfg, errors = validate_config(raw)
    assert not errors, errors
    return cfg


def world(*names: str, sizes=None, **per_model) -> tuple[ModelManager, FakeEffects]:
    effects = FakeEffects({n: SIZE for n in names} if sizes is None else sizes)
    manager = ModelManager(config(*names, **per_model), effects, make_runner=FakeRunner)
    effects.manager = manager
    return manager, effects


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def chat_call() -> Call:
    return Call(api="chat", path="/v1/chat/completions", body={}, chat={},
                command={"kind": "chat", "messages": [{"role": "user", "content": "x"}],
                         "params": {}})


# -- states, asked not compared ---------------------------------------------------------------

def test_served_state_is_the_wire_string():
    manager, _ = world("a")
    served = manager.get("a")
    assert served.state == "unloaded" and served.state is ServedState.UNLOADED
    served.handle.state = RunnerState.READY
    assert served.state == "ready" and served.answers_now and not served.busy
    served.queue.active = 1
    assert served.state == "busy" and served.busy
    import json
    assert json.dumps({"state": served.state}) == '{"state": "busy"}'
    assert f"{served.state}" == "busy"


# -- admission: serialised across models ----------------------------------------------------

def test_model_manager_admits_one_model_at_a_time():
    manager, effects = world("m0", "m1", "m2", "m3", sizes={})
    log = effects.log

    async def estimate(model):
        # what a plan would see: every other model loaded or loading
        seen = sorted(s.name for s in manager.all()
                      if (s.handle.is_ready or s.handle.is_loading) and s.name != model.name)
        log.append(("admit", model.name, tuple(seen)))
        await asyncio.sleep(0.01)
        return None
    effects.estimate = estimate

    async def main():
        served = manager.all()
        await asyncio.gather(*(manager.ensure_ready(s) for s in served),
                             *(manager.ensure_ready(s) for s in served))
    run(main())
    admits = [e for e in log if e[0] == "admit"]
    assert len(admits) == 4                      # concurrent callers of one model share its load
    # strictly admit, load, ready for one model before the next admission starts, and each plan
    # sees every model admitted before it
    for i, (_, name, seen) in enumerate(admits):
        assert len(seen) == i
        at = log.index(("admit", name, seen))
        assert log[at + 1:at + 3] == [("start", name), ("ready", name)], log


def test_two_idle_loads_at_once_the_second_waits_then_evicts_the_first():
    manager, effects = world("first", "second")

    async def main():
        await asyncio.gather(manager.ensure_ready(manager.get("first")),
                             manager.ensure_ready(manager.get("second")))
    run(main())
    assert effects.kinds("model_loading", "model_loaded", "model_unloaded") == [
        ("model_loading", "first"), ("model_loaded", "first"),
        ("model_unloaded", "first"), ("model_loading", "second"), ("model_loaded", "second")]
    evicted = next(f for k, f in effects.events if k == "model_unloaded")
    assert evicted["guard_action"] == "evict" and "making room for second" in evicted["reason"]
    assert ("memory_back", SIZE) in effects.log
    assert [s.name for s in manager.all() if s.handle.is_ready] == ["second"]


def test_a_busy_model_is_never_evicted_for_a_load():
    manager, effects = world("first", "second")

    async def main():
        first = manager.get("first")
        await manager.ensure_ready(first)
        await first.queue.acquire(1)                 # a request in flight
        with pytest.raises(LoadRefused, match="not enough memory"):
            await manager.ensure_ready(manager.get("second"))
    run(main())
    assert effects.kinds("load_refused") == [("load_refused", "second")]
    refused = next(f for k, f in effects.events if k == "load_refused")
    assert refused["needed_bytes"] == SIZE
    assert ("stop", "first") not in effects.log and ("start", "second") not in effects.log


def test_a_pinned_model_is_never_evicted_for_a_load():
    manager, effects = world("first", "second", first={"keep_in_memory": True})

    async def main():
        await manager.ensure_ready(manager.get("first"))
        with pytest.raises(LoadRefused):
            await manager.ensure_ready(manager.get("second"))
    run(main())
    assert ("stop", "first") not in effects.log


def test_a_loading_model_counts_its_estimate_as_spoken_for():
    """The second plan runs while the first model still holds nothing (its load is slow), yet
    the first's estimate is taken as used: the second evicts it only once it is ready."""
    manager, effects = world("first", "second")
    effects.load_s = 0.05

    async def main():
        first = asyncio.ensure_future(manager.ensure_ready(manager.get("first")))
        await asyncio.sleep(0.01)                    # first is loading, resident 0
        await manager.ensure_ready(manager.get("second"))
        await first
    run(main())
    assert effects.log.index(("ready", "first")) < effects.log.index(("stop", "first")) \
        < effects.log.index(("start", "second"))


def test_a_failed_start_is_recorded_and_the_next_load_tries_again():
    manager, effects = world("a")
    effects.fail.add("a")

    async def main():
        with pytest.raises(RunnerError) as err:
            await manager.ensure_ready(manager.get("a"))
        assert err.value.code == "load_failed"
        effects.fail.clear()
        await manager.ensure_ready(manager.get("a"))
    run(main())
    assert effects.kinds("load_failed", "model_loaded") == [("load_failed", "a"),
                                                            ("model_loaded", "a")]


def test_a_caller_leaving_does_not_cut_short_a_load():
    manager, effects = world("a")
    effects.load_s = 0.05

    async def main():
        waiter = asyncio.ensure_future(manager.ensure_ready(manager.get("a")))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.sleep(0.08)
    run(main())
    assert manager.get("a").handle.is_ready
    assert effects.kinds("model_loaded") == [("model_loaded", "a")]


# -- unloads --------------------------------------------------------------------------------

def test_unload_of_a_model_that_is_not_up_records_nothing():
    manager, effects = world("a")
    assert run(manager.unload("a")) is False
    assert run(manager.unload("nope")) is False
    assert effects.events == []


def test_two_unloads_at_once_record_one_event():
    manager, effects = world("a")

    async def main():
        await manager.ensure_ready(manager.get("a"))
        return await asyncio.gather(manager.unload("a", reason="x"), manager.unload("a", reason="y"))
    assert sorted(run(main())) == [False, True]
    assert effects.kinds("model_unloaded") == [("model_unloaded", "a")]


def test_a_config_change_during_a_load_stops_it_and_never_restarts_it():
    manager, effects = world("a")
    effects.load_s = 0.05

    async def main():
        old = manager.get("a")
        load = asyncio.ensure_future(manager.ensure_ready(old))
        await asyncio.sleep(0.01)
        changed = config("a", a={"n_ctx": 1234})
        to_warm = await manager.apply_config(changed)
        assert to_warm == []
        await load                                   # the load in progress finished, then stopped
        assert old.handle.retired and not old.handle.is_ready
        with pytest.raises(RunnerError) as err:
            await manager.ensure_ready(old)          # a request still holding the old model
        assert err.value.code == "model_unloaded"
        new = manager.get("a")
        assert new is not old and new.config.n_ctx == 1234 and not new.handle.is_ready
    run(main())
    assert effects.log.count(("start", "a")) == 1
    assert ("model_unloaded", "a") in effects.kinds()
    assert next(f for k, f in effects.events if k == "model_unloaded")["reason"] == "config changed"


def test_nothing_loads_after_shutdown():
    manager, effects = world("a", "b")

    async def main():
        await manager.ensure_ready(manager.get("a"))
        await manager.stop_all()
        with pytest.raises(RunnerError, match="shutting down"):
            await manager.ensure_ready(manager.get("b"))
    run(main())
    assert ("stop", "a") in effects.log and ("start", "b") not in effects.log


# -- emergency release ----------------------------------------------------------------------

def loaded_world(*names, sizes, **per_model):
    manager, effects = world(*names, sizes=sizes, **per_model)

    async def main():
        for name in names:
            await manager.ensure_ready(manager.get(name))
            await asyncio.sleep(0.002)               # distinct load times: the LRU order
    run(main())
    effects.events.clear()
    return manager, effects


def release_once(manager, effects) -> list[tuple[str, str]]:
    async def main():
        unloading = manager.scheduler.on_sample(effects.sample())
        if unloading is not None:
            await unloading
    run(main())
    return effects.kinds("emergency_unload")


def test_emergency_release_unloads_the_least_recently_used_idle_model_first():
    manager, effects = loaded_world("old", "new", sizes={"old": GIB, "new": GIB})
    assert release_once(manager, effects) == []      # no pressure, nothing to do
    effects.extra_used = 9 * GIB                     # 2 GiB available: at the reserve
    assert release_once(manager, effects) == [("emergency_unload", "old")]
    event = effects.events[-1][1]
    assert event["freed_bytes"] == GIB and event["busy"] is False and "reserve" in event["reason"]


def test_emergency_release_takes_a_busy_model_last_and_a_pinned_one_never():
    manager, effects = loaded_world("pinned", "busy", "idle",
                                    sizes={"pinned": GIB, "busy": GIB, "idle": GIB},
                                    pinned={"keep_in_memory": True})
    run(manager.get("busy").queue.acquire(1))
    effects.extra_used = 9 * GIB
    assert release_once(manager, effects) == [("emergency_unload", "idle")]
    assert release_once(manager, effects) == [("emergency_unload", "idle"),
                                              ("emergency_unload", "busy")]
    assert effects.events[-1][1]["busy"] is True
    assert release_once(manager, effects) == [("emergency_unload", "idle"),
                                              ("emergency_unload", "busy")]
    assert manager.get("pinned").handle.is_ready


def test_emergency_release_goes_on_until_back_under_by_the_band():
    manager, effects = loaded_world("a", "b", "c", sizes={"a": GIB // 4, "b": GIB // 4,
                                                          "c": GIB // 4})
    # just over the reserve: one unload gets back under it, but not under it by the band
    effects.extra_used = RAM_TOTAL - BASE_USED - 3 * GIB // 4 - 2 * GIB + GIB // 8
    assert release_once(manager, effects) == [("emergency_unload", "a")]
    assert manager.scheduler.releasing
    assert release_once(manager, effects) == [("emergency_unload", "a"), ("emergency_unload", "b")]
    effects.extra_used = 0
    release_once(manager, effects)
    assert not manager.scheduler.releasing and manager.get("c").handle.is_ready


def test_emergency_release_is_off_with_the_guard():
    manager, effects = loaded_world("a", sizes={"a": GIB})
    manager._config.memory.guard = False
    effects.extra_used = 12 * GIB
    assert release_once(manager, effects) == []


# -- idle unloads ---------------------------------------------------------------------------

def test_idle_unloads_after_the_ttl_and_never_a_busy_or_pinned_model():
    manager, effects = loaded_world(
        "short", "long", "busy", "pinned", "never", sizes={},
        short={"idle_ttl_s": 1}, long={"idle_ttl_s": 100}, busy={"idle_ttl_s": 1},
        pinned={"idle_ttl_s": 1, "keep_in_memory": True}, never={"idle_ttl_s": 0})
    run(manager.get("busy").queue.acquire(1))
    now = time.time()
    assert run(manager.scheduler.unload_idle(now)) == []
    assert run(manager.scheduler.unload_idle(now + 2)) == ["short"]
    assert effects.kinds() == [("idle_unload", "short")]
    assert effects.events[0][1]["reason"] == "idle for 1 s"
    assert run(manager.scheduler.unload_idle(now + 200)) == ["long"]


# -- dispatch: fallbacks and queue timeouts ---------------------------------------------------

async def generate(manager, candidates, timeout_s=0.05):
    gen = await start_generation(manager, candidates, chat_call(), timeout_s, None)
    events = [e async for e in gen.events()]
    await gen.close()
    return gen, events


def test_a_refused_load_falls_back_to_the_next_candidate():
    manager, effects = world("big", "small", sizes={"big": 20 * GIB, "small": GIB})
    gen, events = run(generate(manager, ["big", "small"]))
    assert gen.served.name == "small" and events[-1]["event"] == "done"
    assert [(a.model, a.error.code, a.error.status) for a in gen.attempts] == [
        ("big", "load_refused", 503)]
    assert manager.get("small").queue.active == 0   # the slot came back


def test_a_failed_start_falls_back_and_the_last_error_names_every_attempt():
    manager, effects = world("a", "b", sizes={})
    effects.fail.update({"a", "b"})
    with pytest.raises(ApiError) as err:
        run(generate(manager, ["a", "b"]))
    assert err.value.status == 503 and err.value.code == "load_failed"
    assert [a["model"] for a in err.value.extra["attempts"]] == ["a", "b"]
    effects.fail.discard("b")
    gen, _ = run(generate(manager, ["a", "b"]))
    assert gen.served.name == "b" and [a.error.code for a in gen.attempts] == ["load_failed"]


def test_a_queue_timeout_falls_back_and_without_a_fallback_is_a_503():
    manager, effects = world("a", "b", sizes={}, a={"parallel": 1})

    async def main():
        a = manager.get("a")
        await a.queue.acquire(1)                     # the one slot held by a long request
        started = time.monotonic()
        gen, _ = await generate(manager, ["a", "b"], timeout_s=0.05)
        waited = time.monotonic() - started
        assert gen.served.name == "b" and gen.attempts[0].error.code == "queue_timeout"
        assert 0.04 <= waited < 1.0
        with pytest.raises(ApiError) as err:
            await generate(manager, ["a"], timeout_s=0.05)
        assert err.value.status == 503 and err.value.code == "queue_timeout"
        assert err.value.headers["Retry-After"] == "1"
        assert a.queue.queued == 0                   # a waiter that gave up leaves the queue
    run(main())


def test_a_full_queue_is_a_429_or_the_next_candidate():
    manager, effects = world("a", "b", sizes={}, a={"parallel": 1})

    async def main():
        a = manager.get("a")
        await a.queue.acquire(1)
        waiter = asyncio.ensure_future(a.queue.acquire(5))   # fills max_queue (1)
        await asyncio.sleep(0)
        with pytest.raises(ApiError) as err:
            await generate(manager, ["a"])
        assert err.value.status == 429 and err.value.code == "queue_full"
        gen, _ = await generate(manager, ["a", "b"])
        assert gen.served.name == "b"
        a.queue.release()
        await waiter
    run(main())


def test_a_request_waiting_in_a_replaced_models_queue_moves_to_the_new_one():
    manager, effects = world("a", sizes={}, a={"parallel": 1})

    async def main():
        old = manager.get("a")
        await old.queue.acquire(1)
        waiting = asyncio.ensure_future(generate(manager, ["a"], timeout_s=2))
        await asyncio.sleep(0.01)
        await manager.apply_config(config("a", a={"parallel": 1, "n_ctx": 1234}))
        old.queue.release()                          # the old slot passes to the waiter
        gen, events = await waiting
        assert gen.served is manager.get("a") and gen.served is not old
        assert events[-1]["event"] == "done"
        assert not old.handle.is_ready and effects.log.count(("start", "a")) == 1
    run(main())


def test_warmup_loads_marked_models_and_a_failure_stops_no_other():
    manager, effects = world("broken", "good", "lazy", sizes={},
                             broken={"warmup": True}, good={"warmup": True})
    effects.fail.add("broken")
    run(manager.warmup())
    assert effects.kinds("load_failed", "model_loaded") == [("load_failed", "broken"),
                                                            ("model_loaded", "good")]
    assert not manager.get("lazy").handle.is_ready
    # turning warmup on in a re-applied config asks for that model alone
    again = config("broken", "good", "lazy", broken={"warmup": True}, good={"warmup": True},
                   lazy={"warmup": True})
    assert run(manager.apply_config(again)) == ["lazy"]
