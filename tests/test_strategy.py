"""Target strategies as pure policy: TargetPool.order over a TargetBook filled by hand or by
simulated requests (asyncio tasks standing in for backends: the policy code, so fakes are fine)."""
from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from laya_desktop.config.schema import STRATEGIES, Config, ModelConfig, RouteConfig, RouteTarget
from laya_desktop.routing.request import RouteRequest
from laya_desktop.routing.router import Router
from laya_desktop.routing.strategy import PROBE_EVERY, TargetPool
from laya_desktop.routing.target_book import TargetBook, latency_sample


def sequential_split(pool: TargetPool, book: TargetBook, n: int, latency_ms=None) -> Counter:
    """n requests one after another; each ends (with its latency sample) before the next."""
    counts: Counter = Counter()
    for _ in range(n):
        first = pool.order(book)[0]
        ticket = book.begin(first)
        counts[first] += 1
        ttft = latency_ms[first] if latency_ms else None
        ticket.end(ttft, ttft / 20 if ttft else None)
    return counts


@pytest.mark.parametrize("seed", range(20))
def test_least_loaded_splits_two_equal_targets_45_to_55(seed):
    pool = TargetPool(("a", "b"), "least_loaded", rng=random.Random(seed))
    counts = sequential_split(pool, TargetBook(), 100)
    assert 45 <= counts["a"] <= 55 and counts["a"] + counts["b"] == 100, counts


@pytest.mark.parametrize("seed", range(10))
def test_least_loaded_first_pick_is_random_not_the_first_listed(seed):
    firsts = Counter(TargetPool(("a", "b", "c"), "least_loaded", rng=random.Random(seed * 100 + i))
                     .order(TargetBook())[0] for i in range(60))
    assert set(firsts) == {"a", "b", "c"}   # not always the first listed


def test_least_loaded_prefers_fewer_in_flight():
    book = TargetBook()
    holds = [book.begin("a") for _ in range(3)] + [book.begin("b")]
    assert TargetPool(("a", "b", "c"), "least_loaded").order(book) == ["c", "b", "a"]
    for t in holds:
        t.end()
    assert book.in_flight("a") == book.in_flight("b") == 0


def test_min_latency_sends_85_percent_to_a_target_ten_times_faster():
    pool = TargetPool(("slow", "fast"), "min_latency")
    counts = sequential_split(pool, TargetBook(), 100, latency_ms={"slow": 500.0, "fast": 50.0})
    assert counts["fast"] >= 85, counts
    assert counts["slow"] >= 100 // PROBE_EVERY   # measured again now and then, not forgotten


def test_min_latency_tries_targets_without_data_first():
    book = TargetBook()
    book.observe("a", 10.0, 1.0)
    assert TargetPool(("a", "b"), "min_latency").order(book)[0] == "b"


def test_min_latency_follows_a_target_that_became_slow():
    pool, book = TargetPool(("a", "b"), "min_latency"), TargetBook()
    sequential_split(pool, book, 40, latency_ms={"a": 50.0, "b": 100.0})
    late = sequential_split(pool, book, 100, latency_ms={"a": 1000.0, "b": 100.0})
    assert late["b"] >= 85, late


@pytest.mark.parametrize("clients", [2, 4, 8])
def test_least_loaded_under_concurrency_sends_85_percent_to_the_fast_target(clients):
    """Closed-loop clients, one target 10x slower, in simulated time (a heap of completions, so
    the figure does not depend on this machine's timer): the slow one holds its requests longer,
    so it is seldom the least loaded."""
    import heapq
    book, pool = TargetBook(), TargetPool(("slow", "fast"), "least_loaded", rng=random.Random(1))
    service = {"slow": 10.0, "fast": 1.0}
    counts: Counter = Counter()
    running: list = []
    for n in range(clients):
        first = pool.order(book)[0]
        counts[first] += 1
        heapq.heappush(running, (service[first], n, book.begin(first)))
    while sum(counts.values()) < 1000:
        now, n, ticket = heapq.heappop(running)
        ticket.end()
        first = pool.order(book)[0]
        counts[first] += 1
        heapq.heappush(running, (now + service[first], n, book.begin(first)))
    assert counts["fast"] >= 850, counts


def test_warm_prefers_loaded_targets_and_keeps_list_order_among_them():
    loaded = {"a": False, "b": True, "c": True}
    book = TargetBook(is_loaded=loaded.get)
    pool = TargetPool(("a", "b", "c"), "warm")
    assert pool.order(book) == ["b", "c", "a"]
    loaded["b"] = False
    assert pool.order(book) == ["c", "a", "b"]
    loaded["c"] = False
    assert pool.order(book) == ["a", "b", "c"]   # none loaded: a cold load of the first


def test_weighted_gives_exact_shares_and_interleaves():
    pool = TargetPool(("a", "b", "c"), "weighted", weights=(5.0, 3.0, 2.0))
    book = TargetBook()
    picks = [pool.order(book)[0] for _ in range(100)]
    assert Counter(picks) == {"a": 50, "b": 30, "c": 20}
    longest = max(len(run) for run in "".join(picks).replace("b", " ").replace("c", " ").split())
    assert longest <= 2   # smooth: never five a's in a row


def test_spillover_fills_one_target_before_the_next():
    book = TargetBook()
    pool = TargetPool(("a", "b", "c"), "spillover", limits=(2, 1, None))
    holds = []
    for expected in ("a", "a", "b", "c", "c"):
        first = pool.order(book)[0]
        assert first == expected
        holds.append(book.begin(first))
    holds[0].end()
    assert pool.order(book)[0] == "a"   # room again on the first


def test_spillover_when_all_are_full_the_least_over_goes_first():
    book = TargetBook()
    pool = TargetPool(("a", "b"), "spillover", limits=(1, 1))
    holds = [book.begin("a"), book.begin("a"), book.begin("b")]
    assert pool.order(book) == ["b", "a"]
    for t in holds:
        t.end()


def test_first_available_keeps_list_order():
    assert TargetPool(("a", "b"), "first_available").order(TargetBook()) == ["a", "b"]


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="valid: first_available"):
        TargetPool(("a", "b"), "fastest")


# --- counters ----------------------------------------------------------------------------------

def test_ticket_end_twice_and_move_after_end_leave_counts_alone():
    book = TargetBook()
    t = book.begin("a")
    t.move("b")
    assert (book.in_flight("a"), book.in_flight("b")) == (0, 1)
    t.end()
    t.end()
    t.move("a")
    assert (book.in_flight("a"), book.in_flight("b")) == (0, 0)


def test_counters_never_negative_with_tasks_that_finish_out_of_order_cancel_and_fail():
    """200 requests at once over three targets: random service times (so they finish out of
    order), a third cancelled mid-way, a fifth failing, some moving to a fallback; a watcher
    samples the counts throughout."""
    async def main():
        rng = random.Random(7)
        book = TargetBook()
        pool = TargetPool(("a", "b", "c"), "least_loaded", rng=rng)
        seen: list[int] = []
        stop = asyncio.Event()

        async def watch():
            while not stop.is_set():
                seen.extend(f.in_flight for f in book.figures.values())
                await asyncio.sleep(0)

        async def request(i):
            order = pool.order(book)
            ticket = book.begin(order[0])
            try:
                await asyncio.sleep(rng.random() * 0.01)
                if i % 7 == 0:
                    ticket.move(order[1])   # the first choice could not serve
                if i % 5 == 0:
                    raise RuntimeError("backend failed")
                await asyncio.sleep(rng.random() * 0.01)
                ticket.end(5.0, 0.5)
            finally:
                ticket.end()   # what RequestRecord.finish does on every path

        watcher = asyncio.ensure_future(watch())
        tasks = [asyncio.ensure_future(request(i)) for i in range(200)]
        await asyncio.sleep(0.004)
        for task in tasks[::3]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        stop.set()
        await watcher
        return book, seen
    book, seen = asyncio.run(main())
    assert seen and min(seen) >= 0 and max(seen) > 0
    assert all(f.in_flight == 0 for f in book.figures.values())


def test_latency_sample_only_from_successes():
    assert latency_sample(200, 100.0, 1100.0, 11) == (100.0, 100.0)
    assert latency_sample(200, 100.0, 1100.0, 1) == (100.0, None)
    assert latency_sample(503, 100.0, 1100.0, 11) == (None, None)
    assert latency_sample(200, None, 1100.0, 11) == (None, None)


# --- the router hands the pool over --------------------------------------------------------------

def _config(strategy, *targets, fallback=()):
    models = [ModelConfig(name=m, backend="openai", base_url="http://x/v1") for m in "abcd"]
    return Config(models=models, routes=[RouteConfig(
        name="r", target=targets[0].model, targets=list(targets), strategy=strategy,
        fallback=list(fallback))])


def test_router_decision_orders_targets_then_fallbacks():
    cfg = _config("least_loaded", RouteTarget("a"), RouteTarget("b"), fallback=["b", "c"])
    decision = Router(cfg).decide(RouteRequest("/v1/chat/completions", None, (), "", 0))
    book = TargetBook()
    book.begin("a")
    assert decision.candidates(book) == ["b", "a", "c"]   # "b" is not tried twice
    assert decision.candidates() == ["a", "c"]            # no live figures: list order


def test_single_target_rule_has_no_pool():
    cfg = _config("first_available", RouteTarget("a"))
    decision = Router(cfg).decide(RouteRequest("/v1/chat/completions", None, (), "", 0))
    assert decision.pool is None and decision.candidates(TargetBook()) == ["a"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_returns_each_target_once(strategy):
    pool = TargetPool(("a", "b", "c"), strategy, limits=(1, 1, 1) if strategy == "spillover" else ())
    book = TargetBook(is_loaded=lambda m: m != "a")
    for _ in range(30):
        order = pool.order(book)
        assert sorted(order) == ["a", "b", "c"]
        book.begin(order[0]).end(1.0, 0.1)
