"""The runner decodes with as many of its threads as are faster than fewer (runners/thread_governor.py):
the policy on a fake clock and step times, then a real runner switching its thread count between
steps without changing a greedy answer."""
from __future__ import annotations

import pytest

from gguf_factory import write_tiny_gguf
from laya_desktop.runners import thread_governor as G
from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
from runner_steps import run, text_of


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def drive(governor: G.ThreadGovernor, clock: Clock, seconds_at, steps: int, batch: int = 8,
          step_s: float = 0.1) -> list[int]:
    """Run `steps` decode steps of `batch`, each taking seconds_at(threads) and advancing the clock
    by step_s; the thread count of each step."""
    used = []
    for _ in range(steps):
        threads = governor.threads_for(batch)
        governor.observe(threads, batch, seconds_at(threads))
        clock.now += step_s
        used.append(threads)
    return used


QUIET = {2: 0.090, 1: 0.150}.__getitem__    # two threads 1.7x one
BUSY = {2: 0.300, 1: 0.160}.__getitem__     # another process holds a core: two collapse


def test_levels_halve_down_to_one():
    assert G.ThreadGovernor(8).levels == [8, 4, 2, 1]
    assert G.ThreadGovernor(6).levels == [6, 3, 1]
    assert G.ThreadGovernor(2).levels == [2, 1]


def test_quiet_keeps_every_thread_and_tries_fewer_rarely():
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    used = drive(governor, clock, QUIET, 2200)   # 220 s
    assert governor.threads == 2 and governor.switches == 0
    # a try of one thread at 30 s, then 60 s and 120 s later (each lost): three tries of 3 steps
    assert used.count(1) == 3 * G.PROBE_STEPS
    assert used[:310].count(1) == G.PROBE_STEPS and used[:290].count(1) == 0


def test_a_core_held_from_the_start_shows_in_a_few_long_steps_and_is_found_at_once():
    # the machine is never quiet, so no window of steps is fast on average; but while the other
    # thread waits for a core some steps take ten times longer, and the rest show what two
    # threads can do: the fastest step is the reference (a typical step would hide it)
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    pattern = iter([0.09] * 6 + [0.9] * 2 + [0.09] * 6 + [0.9] * 2 + [0.9, 0.09] * 200)
    used = drive(governor, clock, lambda threads: next(pattern) if threads == 2 else 0.15, 40)
    assert governor.threads == 1 and governor.switches == 1
    assert used.index(1) <= G.RECENT               # long before the periodic try at 30 s


def test_a_core_taken_midway_drops_to_one_thread_within_a_few_steps():
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    drive(governor, clock, QUIET, 50)
    used = drive(governor, clock, BUSY, 20)
    assert governor.threads == 1 and governor.switches == 1
    start = used.index(1)
    assert start <= G.RECENT                      # slow steps seen, then the probe:
    assert used[start:start + 2 * G.PROBE_STEPS] == [1, 2] * G.PROBE_STEPS   # taking turns
    assert set(used[start + 2 * G.PROBE_STEPS:]) == {1}
    assert "at 1 threads took 160.0 ms, at 2 195.0 ms on average"   # 6 quiet, 6 slow in governor.last_switch


def test_a_machine_busy_from_the_start_is_found_by_the_periodic_try():
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    drive(governor, clock, BUSY, 299)             # no fast step to compare with: no trigger
    assert governor.threads == 2
    drive(governor, clock, BUSY, 10)              # the try of fewer threads at 30 s
    assert governor.threads == 1


def test_below_the_most_more_threads_are_tried_with_backoff_and_taken_back_when_free():
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    drive(governor, clock, QUIET, 10)
    drive(governor, clock, BUSY, 10)
    assert governor.threads == 1
    used = drive(governor, clock, BUSY, 600)      # 60 s still busy: tries at 10, 30 and 70 s lost
    assert governor.threads == 1
    assert used.count(2) == 2 * G.PROBE_STEPS
    used = drive(governor, clock, QUIET, 400)     # the core is free again: the next try wins
    assert governor.threads == 2 and governor.switches == 2
    assert used[-100:] == [2] * 100


def test_steps_reading_a_prompt_are_not_compared_and_a_batch_change_ends_a_probe():
    clock = Clock()
    governor = G.ThreadGovernor(2, clock)
    drive(governor, clock, QUIET, 10)
    for _ in range(5):                            # prompt steps, however slow, change nothing
        assert governor.threads_for(None) == 2
        governor.observe(2, None, 5.0)
    drive(governor, clock, BUSY, G.RECENT)        # slow: a probe of one thread is due
    assert governor.threads_for(8) == 1
    governor.observe(1, 8, 0.01)
    assert governor.threads_for(4) == 2           # another batch size: the probe is dropped
    governor.observe(2, 4, 0.3)
    assert governor.threads == 2 and governor.switches == 0


def test_eight_threads_step_down_one_level_at_a_time():
    clock = Clock()
    governor = G.ThreadGovernor(8, clock)
    times = {8: 0.05, 4: 0.07, 2: 0.12, 1: 0.2}
    drive(governor, clock, times.__getitem__, 10)
    times[8] = 0.4                                # half the cores taken: four threads best now
    drive(governor, clock, times.__getitem__, 30)
    assert governor.threads == 4


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("threads") / "tiny.gguf", n_layer=4, n_embd=128)


def greedy(backend, prompts: list[str]) -> list[str]:
    cmds = [{"kind": "completion", "prompt": p, "params": {"max_tokens": 24, "temperature": 0}}
            for p in prompts]
    events = run(backend, *cmds)
    return [text_of(events[f"r{i}"]) for i in range(len(prompts))]


def test_the_thread_count_a_step_runs_with_does_not_change_a_greedy_answer(gguf, monkeypatch):
    prompts = ["the cat sat on", "a b c d e", "once upon a time", "hello world"]
    one = LlamaCppBackend({"name": "one", "path": str(gguf), "n_ctx": 256, "parallel": 4,
                           "n_threads": 1})
    try:
        assert one.governor is None
        expected = greedy(one, prompts)
    finally:
        one.close()
    two = LlamaCppBackend({"name": "two", "path": str(gguf), "n_ctx": 256, "parallel": 4,
                           "n_threads": 2})
    try:
        assert two.governor.levels == [2, 1] and two.stats()["n_threads_now"] == 2
        counts = iter([2, 1] * 200)               # every step switches
        monkeypatch.setattr(two.governor, "threads_for", lambda batch: next(counts))
        assert greedy(two, prompts) == expected
        stats = two.stats()
        assert stats["n_threads_now"] in (1, 2)
        # every step is counted at the count it ran with; the governor itself never switched
        steps = stats["steps_by_threads"]
        assert set(steps) == {1, 2} and abs(steps[1] - steps[2]) <= 1 and sum(steps.values()) >= 24
        assert stats["thread_switches"] == 0
    finally:
        two.close()
    fixed = LlamaCppBackend({"name": "fixed", "path": str(gguf), "n_ctx": 256, "parallel": 4,
                             "n_threads": 2, "adaptive_threads": False})
    try:
        assert fixed.governor is None and greedy(fixed, prompts) == expected
        assert fixed.stats()["steps_by_threads"] == {} and fixed.stats()["thread_switches"] == 0
    finally:
        fixed.close()
