"""The live figures a rule's strategy chooses by: requests in flight, latency averages, last picks.

The engine owns one TargetBook. A routed request takes a Ticket on the model it is sent to first,
moves it when a fallback answers instead, and ends it once; ending twice, or after a cancel, is a
no-op, so a counter can never go below zero (LiteLLM's least-busy counters do: a decrement on a
path the increment never took). Qt-free and engine-free: the strategies' tests drive it directly.

Queueing: each latency sample is also kept by the load its request met (how many others were in
flight on that target when it began), so a target's expected time at its present load is what
requests at that load took. A target's capacity is known (a local model's `parallel`, a remote's
`slots`) or learned: the lowest load whose latency rose clearly above the unloaded one. Loads
never measured are estimated from the nearest one below, plus a share of a request's hold time for
every request that would wait ahead of this one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

EWMA_ALPHA = 0.2  # weight of the newest sample in the moving averages
LATENCY_TOKENS = 50   # a short answer: how TTFT and per-token time weigh against each other
LEVELS = 8            # loads kept apart; a load of LEVELS - 1 or more shares the last
RISE = 1.4            # latency this many times the unloaded one marks a queue...
RISE_MIN_MS = 10.0    # ...and at least this much more (timer noise on fast targets is not one)
LEVEL_MIN_SAMPLES = 2  # samples at a loaded level before it can mark the capacity


@dataclass
class TargetFigures:
    in_flight: int = 0
    ttft_ms: float | None = None      # moving average of time to first token
    tpot_ms: float | None = None      # moving average of time per output token after the first
    samples: int = 0
    sampled_at: int = 0               # book.clock when the last sample came
    last_pick: int = 0                # book.clock when a strategy last put it first
    hold_ms: float | None = None      # moving average of how long a request holds its place
    # per load met at the start (others in flight): moving average of the score, sample count
    level_ms: list = field(default_factory=lambda: [None] * LEVELS)
    level_samples: list = field(default_factory=lambda: [0] * LEVELS)
    learned: int | None = None        # learned_capacity() as of the last sample

    def learned_capacity(self) -> int | None:
        """The lowest load at which latency clearly rose over the unloaded one, or None."""
        if not self.level_samples[0]:   # seldom seen under steady load: one sample will do
            return None
        base = self.level_ms[0]
        for load in range(1, LEVELS):
            if self.level_samples[load] >= LEVEL_MIN_SAMPLES:
                rise = self.level_ms[load] - base
                if rise > RISE_MIN_MS and rise > (RISE - 1) * base:
                    return load
        return None


def score_ms(ttft_ms: float, tpot_ms: float | None) -> float:
    """What min_latency minimises: the time to a short answer."""
    return ttft_ms + LATENCY_TOKENS * (tpot_ms or 0.0)


def _queued(load: int, capacity: int) -> int:
    """Requests ahead of one that arrives at `load` and waits for a place, itself included."""
    return max(0, load - capacity + 1)


class TargetBook:
    def __init__(self, is_loaded: Callable[[str], bool] | None = None,
                 capacity_of: Callable[[str], int | None] | None = None,
                 usable: Callable[[str], bool] | None = None):
        self.figures: dict[str, TargetFigures] = {}
        self.clock = 0  # counts picks and samples: an order, not a time
        self.is_loaded = is_loaded or (lambda _name: True)
        self.capacity_of = capacity_of or (lambda _name: None)   # known capacity, or None
        self.usable = usable or (lambda _name: True)             # False: ejected (health)

    def capacity(self, model: str) -> int | None:
        """Requests the target serves at once: known, else learned, else None (no queue seen)."""
        known = self.capacity_of(model)
        if known is not None:
            return known
        figures = self.figures.get(model)
        return figures.learned if figures is not None else None

    def expected_ms(self, model: str) -> float | None:
        """The score a request sent now should see, its wait for a place included; None before
        any sample."""
        figures = self.figures.get(model)
        if figures is None or figures.samples == 0:
            return None
        load = figures.in_flight
        counts, levels = figures.level_samples, figures.level_ms
        below = min(load, LEVELS - 1)
        while below >= 0 and not counts[below]:
            below -= 1
        if below < 0:   # measured only at higher loads: no better guess than the lowest
            return levels[next(k for k in range(LEVELS) if counts[k])]
        expected = levels[below]
        if load == below:
            return expected
        capacity = self.capacity(model)
        if capacity:
            hold = figures.hold_ms if figures.hold_ms is not None else expected
            expected += (_queued(load, capacity) - _queued(below, capacity)) / capacity * hold
        return expected

    def of(self, model: str) -> TargetFigures:
        figures = self.figures.get(model)
        if figures is None:
            figures = self.figures[model] = TargetFigures()
        return figures

    def in_flight(self, model: str) -> int:
        figures = self.figures.get(model)
        return figures.in_flight if figures else 0

    def picked(self, model: str) -> None:
        self.clock += 1
        self.of(model).last_pick = self.clock

    def begin(self, model: str) -> "Ticket":
        figures = self.of(model)
        ticket = Ticket(self, model, figures.in_flight)
        figures.in_flight += 1
        return ticket

    def observe(self, model: str, ttft_ms: float | None, tpot_ms: float | None,
                load: int | None = None, hold_ms: float | None = None) -> None:
        """One finished request's latency; `load`: the others in flight when it began."""
        figures = self.of(model)
        if ttft_ms is not None:
            figures.ttft_ms = _ewma(figures.ttft_ms, ttft_ms)
            level = min(load or 0, LEVELS - 1)
            figures.level_ms[level] = _ewma(figures.level_ms[level], score_ms(ttft_ms, tpot_ms))
            figures.level_samples[level] += 1
            figures.learned = figures.learned_capacity()
        if tpot_ms is not None:
            figures.tpot_ms = _ewma(figures.tpot_ms, tpot_ms)
        if hold_ms is not None and ttft_ms is not None:
            figures.hold_ms = _ewma(figures.hold_ms, hold_ms)
        if ttft_ms is not None or tpot_ms is not None:
            self.clock += 1
            figures.samples += 1
            figures.sampled_at = self.clock

    def snapshot(self) -> dict[str, dict]:
        """Per model: in_flight, the averages, the sample count, the capacity it is judged by
        (known or learned, null: no queue seen) and the expected score now (GET /admin/stats)."""
        return {name: {"in_flight": f.in_flight, "ttft_ms": _round(f.ttft_ms),
                       "tpot_ms": _round(f.tpot_ms), "samples": f.samples,
                       "hold_ms": _round(f.hold_ms), "capacity": self.capacity(name),
                       "capacity_learned": self.capacity_of(name) is None,
                       "expected_ms": _round(self.expected_ms(name))}
                for name, f in sorted(self.figures.items())}


class Ticket:
    """One request's hold on one model's in-flight count."""

    __slots__ = ("book", "model", "open", "load")

    def __init__(self, book: TargetBook, model: str, load: int = 0):
        self.book, self.model, self.open = book, model, True
        self.load = load   # the others in flight on `model` when this request took its place

    def move(self, model: str) -> None:
        """A fallback serves instead: the hold moves with the request."""
        if not self.open or model == self.model:
            return
        self.book.of(self.model).in_flight -= 1
        figures = self.book.of(model)
        self.load = figures.in_flight
        figures.in_flight += 1
        self.model = model

    def end(self, ttft_ms: float | None = None, tpot_ms: float | None = None,
            hold_ms: float | None = None) -> None:
        if not self.open:
            return
        self.open = False
        self.book.of(self.model).in_flight -= 1
        self.book.observe(self.model, ttft_ms, tpot_ms, self.load, hold_ms)


def latency_sample(status: int | None, ttft_ms: float | None, duration_ms: float | None,
                   completion_tokens: int | None) -> tuple[float | None, float | None]:
    """(ttft, time per output token) of a finished request, or Nones when it says nothing."""
    if status != 200 or ttft_ms is None:
        return None, None
    tpot = None
    if duration_ms is not None and completion_tokens and completion_tokens > 1:
        tpot = max(0.0, duration_ms - ttft_ms) / (completion_tokens - 1)
    return ttft_ms, tpot


def _ewma(old: float | None, new: float) -> float:
    return new if old is None else old + EWMA_ALPHA * (new - old)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
