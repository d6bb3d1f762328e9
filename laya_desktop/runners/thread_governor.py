"""How many of its threads the runner decodes with, step by step: as many as are faster than fewer.

ggml's OpenMP threads meet at a barrier after every op. While every thread has a core, waiting
there by spinning (libgomp's default) is what makes two threads 1.7x one on 2 cores, and it keeps
that speed while the engine and its clients wake beside them for every token. When another process
holds a core, the thread that arrives first spins while the other waits for a core, op after op,
and two threads fall to half of one (bench/threads.py). No fixed spin length serves both: a short
one loses the quiet speed-up whenever the engine wakes. So the threads keep libgomp's wait and the
runner measures instead: when its recent steps turn slow, and every so often anyway, it times a few
steps with half the threads, taking turns with steps at the current count, and keeps whichever
was faster; while below its most, it tries more
threads again every few seconds. Steps compared are decode steps of the same batch size, adjacent
in time, so the model, the batch and the machine's state are alike, and they are compared by their
mean: a core lost for a moment shows as a few steps many times longer than the rest, which a
median would hide. Pure policy: the runner times the steps and calls llama_set_n_threads.
"""
from __future__ import annotations

import statistics
import time
from collections import deque
from typing import Callable

SLOW = 1.3           # recent steps this much slower on average than the best one at their batch
BEST_FOR_S = 30.0    # how long a best step stands as the reference
RETRY_MORE_S = 10.0  # below the most threads: try more this often at first,
RETRY_MORE_MAX_S = 40.0   # doubling after each try that lost, up to this
RETRY_FEWER_S = 30.0  # above one thread: try fewer this often even when no step turned slow (a
RETRY_FEWER_MAX_S = 120.0   # machine busy from the start has no fast step to compare with)
CALM_S = 5.0         # after a lost try of fewer threads, or a move to more: no slowness-probe
PROBE_STEPS = 4      # steps timed at the other count, and as many at the current one, in turns
RECENT = 8           # steps whose mean is compared with the best one
BETTER = 1.1         # the other count wins only when this much faster


class ThreadGovernor:
    def __init__(self, most: int, clock: Callable[[], float] = time.monotonic):
        self.levels = _halvings(most)   # e.g. 8, 4, 2, 1
        self.level = 0                  # index into levels: the count decoding now
        self.switches = 0
        self.last_switch = ""           # why, for the runner's log
        self.steps_by_threads: dict[int, int] = {}   # every step observed, by its thread count
        self._clock = clock
        self._recent: deque[tuple[int, float]] = deque(maxlen=RECENT)   # (batch, s) at level
        self._best: dict[int, tuple[float, float]] = {}   # batch -> (seconds, when) at level
        self._probe: _Probe | None = None
        self._more_at = clock() + RETRY_MORE_S   # when to try more threads (below the most)
        self._more_every = RETRY_MORE_S
        self._fewer_at = clock() + RETRY_FEWER_S
        self._fewer_every = RETRY_FEWER_S
        self._calm_until = 0.0

    @property
    def threads(self) -> int:
        return self.levels[self.level]

    def threads_for(self, batch: int | None) -> int:
        """The thread count for the next step. batch: how many sequences decode one token each
        in it, or None for a step that also reads a prompt (not compared)."""
        probe = self._probe
        if probe is not None:
            if batch == probe.batch:   # the two counts take turns, so a change hits both alike
                return self.levels[probe.level] if probe.next_is_other() else self.threads
            if batch is not None:
                self._probe = None   # the batch changed: the probe would compare unlike steps
        elif batch is not None:   # the clock first: the recent steps are read when a try is due
            now = self._clock()
            if self.level > 0 and now >= self._more_at and self._recent_at(batch):
                self._probe = _Probe(self.level - 1, batch)
                return self.levels[self.level - 1]
            if (self.level + 1 < len(self.levels) and now >= self._fewer_at
                    and self._recent_at(batch)):
                self._probe = _Probe(self.level + 1, batch)
                return self.levels[self.level + 1]
        return self.threads

    def observe(self, threads: int, batch: int | None, seconds: float) -> None:
        """A step's time, with the thread count threads_for(batch) gave it."""
        self.steps_by_threads[threads] = self.steps_by_threads.get(threads, 0) + 1
        if batch is None:
            return
        probe = self._probe
        if probe is not None and batch == probe.batch:
            if threads == self.levels[probe.level]:
                probe.other.append(seconds)
            elif threads == self.threads:
                probe.here.append(seconds)
            if probe.done():
                self._decide(probe)
            return
        if threads != self.threads:
            return
        now = self._clock()
        self._recent.append((batch, seconds))
        best = self._best.get(batch)
        if best is None or seconds <= best[0] or now - best[1] > BEST_FOR_S:
            self._best[batch] = best = (seconds, now)
        here = self._recent_at(batch)
        if (probe is None and self.level + 1 < len(self.levels) and now >= self._calm_until
                and len(here) == RECENT and sum(here) / RECENT > SLOW * best[0]):
            self._probe = _Probe(self.level + 1, batch)

    def _decide(self, probe: _Probe) -> None:
        self._probe = None
        now = self._clock()
        # the current count's steps before the probe too: a core lost now and then shows in a
        # few of them only
        other = statistics.fmean(probe.other)
        here = statistics.fmean(self._recent_at(probe.batch) + probe.here)
        if other * BETTER < here:
            self.last_switch = (f"a step of {probe.batch} at {self.levels[probe.level]} threads "
                                f"took {other * 1000:.1f} ms, at {self.threads} {here * 1000:.1f} "
                                "ms on average")
            more = probe.level < self.level
            self.level = probe.level
            self.switches += 1
            self._recent.clear()
            self._best.clear()
            self._more_every, self._fewer_every = RETRY_MORE_S, RETRY_FEWER_S
            self._more_at, self._fewer_at = now + RETRY_MORE_S, now + RETRY_FEWER_S
            if more:   # the fewer threads' slowness that would trigger a probe is gone now
                self._calm_until = now + CALM_S
        elif probe.level < self.level:   # more threads lost: wait longer before the next try
            self._more_every = min(self._more_every * 2, RETRY_MORE_MAX_S)
            self._more_at = now + self._more_every
        else:   # fewer threads lost: the slow steps are the new normal here
            self._best[probe.batch] = (here, now)
            self._calm_until = now + CALM_S
            self._fewer_every = min(self._fewer_every * 2, RETRY_FEWER_MAX_S)
            self._fewer_at = now + self._fewer_every

    def _recent_at(self, batch: int) -> list[float]:
        return [s for b, s in self._recent if b == batch]


class _Probe:
    """Steps at another thread count (`level`), taking turns with steps at the current one."""

    def __init__(self, level: int, batch: int):
        self.level, self.batch = level, batch
        self.other: list[float] = []
        self.here: list[float] = []

    def next_is_other(self) -> bool:
        return len(self.other) <= len(self.here)

    def done(self) -> bool:
        return len(self.other) >= PROBE_STEPS and len(self.here) >= PROBE_STEPS


def _halvings(most: int) -> list[int]:
    levels = [max(1, most)]
    while levels[-1] > 1:
        levels.append(levels[-1] // 2)
    return levels
