"""Admission is serialised across models: two loads at once against memory for one.

The scheduler holds one admission lock from the plan to the ready runner, and the policy
counts each admitted model's estimate as spoken for until it is resident (`reserved_bytes`).
Semantics when the second model does not fit next to the first: it waits for the first load to
finish, then plans like any load — it evicts the first if that one is idle, and is refused
(503 load_refused, Retry-After) if the first is busy. Never are both admitted against the same
free memory.

The scheduler's side of it, with fake effects and in milliseconds: test_scheduler_policy.py.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from laya_desktop.config.schema import MemoryConfig
from laya_desktop.runners.memory_estimate import estimate_model_bytes
from laya_desktop.engine.memory_policy import GIB, LoadedModel, MemoryState, plan_admission

from engine_harness import running_engine
from test_memory_guard_e2e import settled_available

# make test-slow: races with real runner processes; the scheduler's own tests
# (test_scheduler_policy) run in-process
pytestmark = pytest.mark.slow

MIB = 1 << 20
CFG = MemoryConfig(reserved_system_gb=2, ram_high_pct=90, vram_high_pct=92)


def state(available_gib: float) -> MemoryState:
    return MemoryState(ram_total=16 * GIB, ram_available=int(available_gib * GIB), ram_used=4 * GIB)


# -- the policy, pure ---------------------------------------------------------------------------

@pytest.mark.parametrize("loaded, fits, evict", [
    ([], True, []),                                                      # 3 GiB above the reserve
    # a model admitted with a 2 GiB estimate that holds only 0.5 GiB so far: 1.5 GiB spoken for
    ([LoadedModel("a", busy=True, memory_bytes=GIB // 2, reserved_bytes=3 * GIB // 2)], False, []),
    # the same one idle: evicting it gives back what it holds and what it was promised
    ([LoadedModel("a", memory_bytes=GIB // 2, reserved_bytes=3 * GIB // 2)], True, ["a"]),
    # a model still loading (busy, holds nothing yet): its whole estimate is spoken for
    ([LoadedModel("a", busy=True, memory_bytes=0, reserved_bytes=2 * GIB)], False, []),
    # a small promise leaves room
    ([LoadedModel("a", busy=True, memory_bytes=0, reserved_bytes=GIB // 2)], True, []),
])
def test_admission_counts_promised_memory(loaded, fits, evict):
    plan = plan_admission(2 * GIB, 0, state(5), loaded, CFG)
    assert plan.fits is fits and plan.evict == evict, plan.message


def test_emergency_release_ignores_promised_memory():
    from laya_desktop.engine.memory_policy import plan_emergency
    loaded = [LoadedModel("a", memory_bytes=GIB, reserved_bytes=10 * GIB)]
    assert plan_emergency(state(5), loaded, CFG) == []


# -- a real engine --------------------------------------------------------------------------------

def race_config(gguf, reserve_gb: float) -> dict:
    # n_ctx x parallel makes a KV cache of ~1 GiB: an estimate large enough to stand clear of
    # the machine's memory noise (other processes coming and going move available RAM by 100 MB
    # and more between two samples), small enough to load in a few seconds.
    models = [{"name": n, "backend": "llama_cpp", "path": str(gguf), "n_ctx": 262144,
               "parallel": 16, "idle_ttl_s": 0} for n in ("first", "second")]
    return {"models": models, "routes": [{"name": "default", "target": "first"}],
            "memory": {"sample_hz": 4, "reserved_system_gb": reserve_gb}}


def estimate(gguf) -> int:
    from laya_desktop.config.validate import validate_config
    config, errors = validate_config(race_config(gguf, 2))
    assert not errors
    return estimate_model_bytes(config.models[0])[0]


def room_for_one(gguf) -> float:
    """A reserve that leaves room for 1.5 estimates: one fits with margin, two never."""
    return round((settled_available() - 1.5 * estimate(gguf)) / GIB, 3)


def events(c) -> list[dict]:
    return c.get("/admin/events?since=0").json()["events"]


def at_once(fns):
    barrier = threading.Barrier(len(fns))

    def go(fn):
        barrier.wait()
        return fn()
    with ThreadPoolExecutor(len(fns)) as pool:
        return [f.result(timeout=120) for f in [pool.submit(go, fn) for fn in fns]]


@pytest.mark.timeout(180)
def test_two_idle_loads_at_once_the_second_waits_then_evicts_the_first(tiny_gguf, tmp_path):
    with running_engine(race_config(tiny_gguf, room_for_one(tiny_gguf)), tmp_path) as eng:
        def load(name):
            with eng.client() as c:
                return c.post(f"/admin/models/{name}/load")
        results = at_once([lambda: load("first"), lambda: load("second")])
        assert [r.status_code for r in results] == [200, 200], [r.text for r in results]
        with eng.client() as c:
            models = c.get("/admin/models").json()["models"]
            ready = [m["name"] for m in models if m["state"] == "ready"]
            assert len(ready) == 1, models
            deadline = time.monotonic() + 5
            while len(eng.runner_pids()) != 1:
                assert time.monotonic() < deadline, (eng.runner_pids(), models)
                time.sleep(0.05)
            log = [(e["kind"], e["model"]) for e in events(c)
                   if e["kind"] in ("model_loading", "model_loaded", "model_unloaded")]
        winner = ready[0]
        loser = "first" if winner == "second" else "second"
        # strictly one after the other: the loser loaded, then made way, then the winner loaded
        assert log == [("model_loading", loser), ("model_loaded", loser),
                       ("model_unloaded", loser), ("model_loading", winner),
                       ("model_loaded", winner)], log


@pytest.mark.timeout(180)
def test_two_requests_at_once_one_is_served_the_other_refused(tiny_gguf, tmp_path):
    with running_engine(race_config(tiny_gguf, room_for_one(tiny_gguf)), tmp_path) as eng:
        chat = {"max_tokens": 100000, "stream": True,
                "messages": [{"role": "user", "content": "go"}]}
        served_at = {}

        def ask(name):
            with eng.client() as c, c.stream("POST", "/v1/chat/completions",
                                            json={**chat, "model": name}) as r:
                if r.status_code != 200:
                    r.read()
                    return r.status_code, r.json(), dict(r.headers)
                lines = r.iter_lines()
                for line in lines:   # hold the stream open (the model busy) for a while
                    if line.startswith("data: {") and '"content"' in line:
                        served_at[name] = time.monotonic()
                        break
                deadline = time.monotonic() + 3
                for line in lines:
                    if time.monotonic() > deadline:
                        break
                return 200, None, dict(r.headers)
        results = dict(zip(("first", "second"),
                           at_once([lambda: ask("first"), lambda: ask("second")])))
        codes = sorted(code for code, _, _ in results.values())
        assert codes == [200, 503], results
        refused = next(body for code, body, _ in results.values() if code == 503)
        headers = next(h for code, _, h in results.values() if code == 503)
        assert refused["error"]["code"] == "load_refused", refused
        assert headers.get("retry-after")
        with eng.client() as c:
            kinds = [(e["kind"], e["model"]) for e in events(c)]
        loaded = [m for k, m in kinds if k == "model_loaded"]
        assert len(loaded) == 1 and len(served_at) == 1
        assert ("load_refused", "first" if loaded == ["second"] else "second") in kinds


# -- other races: a config apply during a load; the idle TTL firing as a request arrives ---------

@pytest.mark.timeout(180)
def test_config_apply_during_a_load_leaves_no_orphan_and_a_clean_answer(tiny_gguf, tmp_path):
    config = race_config(tiny_gguf, 2)
    config["memory"] = {"sample_hz": 4}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(lambda: eng.client().post("/admin/models/first/load"))
            deadline = time.monotonic() + 30
            while ("model_loading", "first") not in [(e["kind"], e["model"]) for e in events(c)]:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            changed = {**config, "models": [{**m, "n_ctx": 4096} for m in config["models"]]}
            assert c.put("/admin/config", json=changed).status_code == 200
            r = load.result(timeout=120)
        # the load of the replaced model ends cleanly: done, or a 503 naming the config change
        assert r.status_code in (200, 503), r.text
        if r.status_code == 503:
            assert r.json()["error"]["code"] == "model_unloaded", r.text
        deadline = time.monotonic() + 10
        while len(eng.runner_pids()) > 0:  # the old runner is gone, no new one was started
            assert time.monotonic() < deadline, eng.runner_pids()
            time.sleep(0.05)
        r = c.post("/v1/chat/completions", json={"model": "first", "max_tokens": 2,
                                                 "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 200, r.text
        models = {m["name"]: m for m in c.get("/admin/models").json()["models"]}
        assert models["first"]["n_ctx"] == 4096 and models["first"]["state"] == "ready"
        assert len(eng.runner_pids()) == 1


@pytest.mark.timeout(180)
def test_idle_ttl_firing_as_requests_arrive_never_fails_one(tiny_gguf, tmp_path):
    config = {"models": [{"name": "m", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 256, "parallel": 1, "idle_ttl_s": 1}],
              "routes": [{"name": "default", "target": "m"}]}
    chat = {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "x"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        import random
        rng = random.Random(3)
        statuses = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:   # requests land around the TTL's expiry (1 s, checked
            statuses.append(c.post("/v1/chat/completions", json=chat).status_code)  # each second)
            time.sleep(rng.uniform(0.8, 2.2))
        unloads = [e for e in events(c) if e["kind"] == "idle_unload"]
        assert statuses and set(statuses) == {200}, statuses
        assert unloads, "the TTL never fired: the test did not test the race"
        print(f"{len(statuses)} requests around the TTL, {len(unloads)} idle unloads, all 200")
