"""Target strategies: in which order a rule's targets are tried, from the engine's live figures.

A rule with several `targets` names a `strategy`; `order(pool, book)` returns the pool's models in
the order to try them (the rule's `fallback` list follows). Pure policy: the figures come from a
TargetBook, which the engine feeds and tests fill by hand.

- first_available: list order (a single `target` with fallbacks is this).
- warm: loaded targets first, in list order, then the others: a cold load only when no loaded
  target could serve.
- least_loaded: fewest requests in flight (queued at the engine or running). Equal loads go to
  the one chosen least recently, and only never-chosen ones are drawn at random: a pure coin
  toss splits 100 sequential requests outside 45-55 % about one time in four (sd 5).
- min_latency: lowest expected TTFT + LATENCY_TOKENS x time per output token at the target's
  present load (TargetBook.expected_ms: what requests met at that load, or the wait for a place
  against its capacity), so a target that queues is not herded onto because it was fast unloaded.
  A target without a sample yet goes first while it has nothing in flight; every PROBE_EVERY-th
  pick the target sampled longest ago does, when it has a free place, so a target that was slow
  once is measured again.
- weighted: smooth weighted round robin (nginx): exact shares over every sum-of-weights picks,
  never a run of one target longer than its weight calls for.
- spillover: the first target with fewer than its `max_active` requests in flight; all full: the
  least over its limit first.

Every strategy skips a target the engine's health judges down (book.usable); when all of them
are, the order is left whole and the engine's health order decides (engine/replica_health.py).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from laya_desktop.config.schema import STRATEGIES
from laya_desktop.routing.target_book import LATENCY_TOKENS, TargetBook

PROBE_EVERY = 20
__all__ = ["TargetPool", "LATENCY_TOKENS", "PROBE_EVERY"]


@dataclass
class TargetPool:
    models: tuple[str, ...]
    strategy: str = "first_available"
    weights: tuple[float, ...] = ()
    limits: tuple[int | None, ...] = ()      # spillover's max_active; None: no limit
    affinity_ttl_s: float | None = None      # session affinity on: how long it remembers
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)
    _current: list[float] = field(default_factory=list, compare=False, repr=False)
    _total: float = field(default=0.0, compare=False, repr=False)
    _by_weight: list[int] = field(default_factory=list, compare=False, repr=False)
    _picks: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r} (valid: {', '.join(STRATEGIES)})")
        if not self.weights:
            self.weights = (1.0,) * len(self.models)
        if not self.limits:
            self.limits = (None,) * len(self.models)
        self._current = [0.0] * len(self.models)
        self._total = float(sum(self.weights))
        self._by_weight = sorted(range(len(self.models)), key=lambda i: -self.weights[i])

    def has_room(self, model: str, book: TargetBook) -> bool:
        """Under its limit: spillover's max_active where given, else its capacity (known or
        learned); no limit known: room."""
        limit = self.limits[self.models.index(model)] if model in self.models else None
        if limit is None:
            limit = book.capacity(model)
        return limit is None or book.in_flight(model) < limit

    def order(self, book: TargetBook) -> list[str]:
        """The models in the order to try; the first one is noted as picked in the book."""
        chosen = _ORDERS[self.strategy](self, book)
        usable = book.usable
        up = [m for m in chosen if usable(m)]
        if up and len(up) < len(chosen):
            chosen = up
        book.picked(chosen[0])
        return chosen


def _first_available(pool: TargetPool, book: TargetBook) -> list[str]:
    return list(pool.models)


def _warm(pool: TargetPool, book: TargetBook) -> list[str]:
    loaded = book.is_loaded
    warm = [m for m in pool.models if loaded(m)]
    if len(warm) == len(pool.models) or not warm:
        return list(pool.models)
    return warm + [m for m in pool.models if m not in warm]


def _least_loaded(pool: TargetPool, book: TargetBook) -> list[str]:
    keyed = []
    for model in pool.models:
        figures = book.figures.get(model)
        if figures is None:
            keyed.append((0, 0, pool.rng.random(), model))
        else:
            keyed.append((figures.in_flight, figures.last_pick,
                          pool.rng.random() if figures.last_pick == 0 else 0.0, model))
    keyed.sort()
    return [k[3] for k in keyed]


def _min_latency(pool: TargetPool, book: TargetBook) -> list[str]:
    pool._picks += 1
    idle_unmeasured, busy_unmeasured, measured = [], [], []
    for i, model in enumerate(pool.models):
        expected = book.expected_ms(model)
        if expected is None:
            in_flight = book.in_flight(model)
            # its first answer is still out: another target gets the next one, not a queue here
            (busy_unmeasured if in_flight else idle_unmeasured).append((in_flight, i, model))
        else:
            measured.append((expected, book.figures[model].sampled_at, model))
    measured.sort()
    busy_unmeasured.sort()
    ranked = [m[2] for m in idle_unmeasured] + [m[2] for m in measured]
    ranked += [m[2] for m in busy_unmeasured]
    if not idle_unmeasured and len(measured) > 1 and pool._picks % PROBE_EVERY == 0:
        stalest = min(measured, key=lambda m: m[1])[2]
        if book.in_flight(stalest) < (book.capacity(stalest) or 1):
            ranked.remove(stalest)
            ranked.insert(0, stalest)
    return ranked


def _weighted(pool: TargetPool, book: TargetBook) -> list[str]:
    current, weights = pool._current, pool.weights
    best = 0
    for i, weight in enumerate(weights):
        current[i] += weight
        if current[i] > current[best]:
            best = i
    current[best] -= pool._total
    models = pool.models
    return [models[best]] + [models[i] for i in pool._by_weight if i != best]


def _spillover(pool: TargetPool, book: TargetBook) -> list[str]:
    room, full = [], []
    figures = book.figures
    for model, limit in zip(pool.models, pool.limits):
        held = figures.get(model)
        load = held.in_flight if held is not None else 0
        if limit is None or load < limit:
            room.append(model)
        else:
            full.append((load - limit, len(full), model))
    if full:
        full.sort()
        room += [f[2] for f in full]
    return room


_ORDERS = {"first_available": _first_available, "warm": _warm, "least_loaded": _least_loaded,
           "min_latency": _min_latency, "weighted": _weighted, "spillover": _spillover}
