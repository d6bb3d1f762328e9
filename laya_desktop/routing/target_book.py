"""The live figures a rule's strategy chooses by: requests in flight, latency averages, last picks.

The engine owns one TargetBook. A routed request takes a Ticket on the model it is sent to first,
moves it when a fallback answers instead, and ends it once; ending twice, or after a cancel, is a
no-op, so a counter can never go below zero (LiteLLM's least-busy counters do: a decrement on a
path the increment never took). Qt-free and engine-free: the strategies' tests drive it directly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

EWMA_ALPHA = 0.2  # weight of the newest sample in the moving averages


@dataclass
class TargetFigures:
    in_flight: int = 0
    ttft_ms: float | None = None      # moving average of time to first token
    tpot_ms: float | None = None      # moving average of time per output token after the first
    samples: int = 0
    sampled_at: int = 0               # book.clock when the last sample came
    last_pick: int = 0                # book.clock when a strategy last put it first


class TargetBook:
    def __init__(self, is_loaded: Callable[[str], bool] | None = None):
        self.figures: dict[str, TargetFigures] = {}
        self.clock = 0  # counts picks and samples: an order, not a time
        self.is_loaded = is_loaded or (lambda _name: True)

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
        ticket = Ticket(self, model)
        self.of(model).in_flight += 1
        return ticket

    def observe(self, model: str, ttft_ms: float | None, tpot_ms: float | None) -> None:
        figures = self.of(model)
        if ttft_ms is not None:
            figures.ttft_ms = _ewma(figures.ttft_ms, ttft_ms)
        if tpot_ms is not None:
            figures.tpot_ms = _ewma(figures.tpot_ms, tpot_ms)
        if ttft_ms is not None or tpot_ms is not None:
            self.clock += 1
            figures.samples += 1
            figures.sampled_at = self.clock

    def snapshot(self) -> dict[str, dict]:
        """Per model: in_flight, the averages and the sample count (GET /admin/stats)."""
        return {name: {"in_flight": f.in_flight, "ttft_ms": _round(f.ttft_ms),
                       "tpot_ms": _round(f.tpot_ms), "samples": f.samples}
                for name, f in sorted(self.figures.items())}


class Ticket:
    """One request's hold on one model's in-flight count."""

    __slots__ = ("book", "model", "open")

    def __init__(self, book: TargetBook, model: str):
        self.book, self.model, self.open = book, model, True

    def move(self, model: str) -> None:
        """A fallback serves instead: the hold moves with the request."""
        if not self.open or model == self.model:
            return
        self.book.of(self.model).in_flight -= 1
        self.book.of(model).in_flight += 1
        self.model = model

    def end(self, ttft_ms: float | None = None, tpot_ms: float | None = None) -> None:
        if not self.open:
            return
        self.open = False
        self.book.of(self.model).in_flight -= 1
        self.book.observe(self.model, ttft_ms, tpot_ms)


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
