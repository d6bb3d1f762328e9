"""min_latency against upstreams that queue: in simulated time, closed-loop clients on FIFO
servers with a fixed number of places (the policy code, so simulated servers are fine; the real
two-replica bench is bench/'s). Queue-aware, it matches least_loaded where requests queue and
still sends nearly all to the faster replica where none do."""
from __future__ import annotations

import heapq
import random

import pytest

from laya_desktop.routing.strategy import TargetPool
from laya_desktop.routing.target_book import TargetBook

PREFILL_MS, TOKENS = 50.0, 100


def simulate(strategy: str, servers: dict, clients: int = 4, requests: int = 400, seed: int = 1,
             stream: bool = True, book: TargetBook | None = None):
    """servers: {name: (places or None for no queue, service time in ms from an rng)}.
    Returns (p95 latency in ms, requests per server)."""
    rng = random.Random(seed)
    book = book or TargetBook()
    pool = TargetPool(tuple(servers), strategy, rng=random.Random(seed))
    free_at = {name: [0.0] * (places or clients) for name, (places, _) in servers.items()}
    heap, latencies, served, n = [], [], {name: 0 for name in servers}, 0

    def issue(now: float) -> None:
        nonlocal n
        target = pool.order(book)[0]
        ticket = book.begin(target)
        service = servers[target][1](rng)
        places = free_at[target]
        place = min(range(len(places)), key=places.__getitem__)
        start = max(now, places[place])
        places[place] = start + service
        wait = start - now
        if stream:
            ttft, tpot = wait + PREFILL_MS, (service - PREFILL_MS) / (TOKENS - 1)
        else:
            ttft, tpot = wait + service, None
        heapq.heappush(heap, (start + service, n, ticket, ttft, tpot, wait + service))
        n += 1
        served[target] += 1

    for _ in range(clients):
        issue(0.0)
    for _ in range(requests):
        now, _, ticket, ttft, tpot, total = heapq.heappop(heap)
        ticket.end(ttft, tpot, total)
        latencies.append(total)
        issue(now)
    latencies.sort()
    return latencies[int(0.95 * len(latencies))], served


GEMMA = {"a": (1, lambda r: r.uniform(1000, 2000)), "b": (1, lambda r: r.uniform(1000, 2000))}
LATENCY_BOUND = {"fast": (None, lambda r: r.uniform(180, 220)),
                 "slow": (None, lambda r: r.uniform(480, 520))}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("stream", [True, False])
def test_min_latency_does_not_herd_on_replicas_that_queue(seed, stream):
    """Gemma-sized: 1-2 s requests, one at a time per replica, 4 clients."""
    least_p95, _ = simulate("least_loaded", GEMMA, seed=seed, stream=stream)
    p95, served = simulate("min_latency", GEMMA, seed=seed, stream=stream)
    assert p95 <= least_p95 * 1.05, (p95, least_p95)
    assert min(served.values()) >= 0.4 * sum(served.values()), served


@pytest.mark.parametrize("seed", range(5))
def test_min_latency_keeps_90_percent_on_the_fast_replica_when_none_queue(seed):
    """Two replicas, one 300 ms slower, neither queues, 4 clients."""
    _, served = simulate("min_latency", LATENCY_BOUND, seed=seed, stream=False)
    assert served["fast"] >= 0.9 * sum(served.values()), served


def test_capacity_is_learned_from_when_latency_rises():
    book = TargetBook()
    simulate("min_latency", GEMMA, book=book)
    assert book.capacity("a") == book.capacity("b") == 1
    assert book.snapshot()["a"]["capacity_learned"] is True


def test_no_queue_seen_means_no_capacity_assumed():
    book = TargetBook()
    simulate("min_latency", LATENCY_BOUND, book=book, stream=False)
    assert book.capacity("fast") is None


def test_a_known_capacity_prices_the_wait_before_any_queue_was_seen():
    book = TargetBook(capacity_of=lambda m: 1)
    for model, ms in (("a", 100.0), ("b", 150.0)):
        book.observe(model, ms, None, load=0, hold_ms=1000.0)
    hold = book.begin("a")   # a is busy: the next request there waits for its whole hold
    assert book.expected_ms("a") == pytest.approx(100.0 + 1000.0)
    assert TargetPool(("a", "b"), "min_latency").order(book)[0] == "b"
    hold.end()
    assert TargetPool(("a", "b"), "min_latency").order(book)[0] == "a"


def test_a_target_whose_first_answer_is_out_gets_no_second_before_the_others():
    book, pool = TargetBook(), TargetPool(("a", "b", "c"), "min_latency")
    firsts = []
    for _ in range(3):
        firsts.append(pool.order(book)[0])
        book.begin(firsts[-1])
    assert sorted(firsts) == ["a", "b", "c"]   # not three on "a", unmeasured and busy


def test_every_strategy_skips_a_target_judged_down():
    down = {"b"}
    book = TargetBook(usable=lambda m: m not in down)
    for strategy in ("first_available", "least_loaded", "min_latency", "weighted", "spillover",
                     "warm"):
        order = TargetPool(("b", "a", "c"), strategy).order(book)
        assert "b" not in order and order[0] in ("a", "c"), (strategy, order)
    down.update({"a", "c"})   # all down: the order stays whole for the engine's health to decide
    assert sorted(TargetPool(("b", "a", "c"), "least_loaded").order(book)) == ["a", "b", "c"]
