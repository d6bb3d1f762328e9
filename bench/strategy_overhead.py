"""What a rule's target strategy adds to a routing decision: a table on stdout, JSON in
bench/results/strategy_overhead/.

    .venv/bin/python bench/strategy_overhead.py [--targets 2 4] [--requests 20000]

Baseline ("plain"): the first-match decision (`Router.decide_body`, the part X-Laya-Route-Us
times) on a single-target rule. Each strategy row times, on the same request right after it, the
decision on a rule with N targets plus `Decision.candidates(book)` (the order the engine tries
them in) and the in-flight hold taken (`TargetBook.begin`), over a book whose figures change as
the requests go. Goal: at most 5 us added at p50.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from publish import begin, write

from laya_desktop.config.schema import STRATEGIES
from laya_desktop.config.validate import validate_config
from laya_desktop.routing.router import Router
from laya_desktop.routing.target_book import TargetBook

GOAL_US = 5.0
PATH = "/v1/chat/completions"


def _router(targets: int, strategy: str | None) -> Router:
    names = [f"m{i}" for i in range(targets)]
    models = [{"name": n, "backend": "openai", "base_url": "http://127.0.0.1:9/v1"} for n in names]
    if strategy is None:
        rule = {"name": "default", "target": names[0]}
    else:
        entries: list = list(names)
        if strategy == "weighted":
            entries = [{"model": n, "weight": i + 1} for i, n in enumerate(names)]
        elif strategy == "spillover":
            entries = [{"model": n, "max_active": 2} for n in names]
        rule = {"name": "default", "targets": entries, "strategy": strategy}
    config, errors = validate_config({"models": models, "routes": [
        {"name": "code", "match": {"tags": ["code"]}, "target": names[0]}, rule]})
    assert not errors, errors
    return Router(config)


def _bodies(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"model": "auto", "messages": [{"role": "user", "content": "x" * rng.randint(50, 2000)}]}
            for _ in range(n)]


def _time(base: Router, router: Router, bodies: list[dict], book: TargetBook,
          seed: int) -> tuple[list[float], list[float]]:
    """Microseconds per request for the plain decision and for the decision with the strategy,
    request by request side by side (so a busy moment of the machine hits both). A few requests
    stay in flight and end out of order with latency samples (untimed: that is the request's
    end, not its routing), so least_loaded, min_latency and spillover see changing figures."""
    rng = random.Random(seed)
    held: list = []
    plain, chosen = [], []
    clock = time.perf_counter_ns
    for body in bodies:
        started = clock()
        base.decide_body(PATH, body, None)
        middle = clock()
        decision = router.decide_body(PATH, body, None)
        held.append(book.begin(decision.candidates(book)[0]))
        ended = clock()
        plain.append((middle - started) / 1000)
        chosen.append((ended - middle) / 1000)
        if len(held) > 3:
            held.pop(rng.randrange(len(held))).end(rng.uniform(20, 200), rng.uniform(5, 50))
    return plain, chosen


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(targets: int, requests: int, seed: int) -> list[dict]:
    bodies = _bodies(requests, seed)
    base = _router(targets, None)
    rows = []
    for strategy in STRATEGIES:
        router = _router(targets, strategy)
        book = TargetBook(is_loaded=lambda m: m != "m0")
        _time(base, router, bodies[:2000], book, seed)   # warm up
        plain, chosen = _time(base, router, bodies, book, seed)
        b50, p50 = statistics.median(plain), statistics.median(chosen)
        rows.append({"targets": targets, "strategy": strategy, "plain_p50_us": round(b50, 2),
                     "p50_us": round(p50, 2), "p99_us": round(_pct(chosen, 0.99), 2),
                     "added_p50_us": round(p50 - b50, 2), "ratio": round(p50 / b50, 2)})
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'targets':>7}  {'strategy':<16} {'plain p50':>9} {'p50 us':>8} {'p99 us':>8} "
            f"{'added p50':>10} {'ratio':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['targets']:>7}  {r['strategy']:<16} {r['plain_p50_us']:>9.2f} "
                     f"{r['p50_us']:>8.2f} {r['p99_us']:>8.2f} {r['added_p50_us']:>10.2f} "
                     f"{r['ratio']:>6.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    begun = begin()
    rows = [row for n in args.targets for row in run(n, args.requests, args.seed)]
    print(format_table(rows))
    worst = max(r["added_p50_us"] for r in rows)
    print(f"largest p50 added by a strategy: {worst:.2f} us (goal <= {GOAL_US} us)")
    out = write("strategy_overhead", {
        "requests": args.requests, "goal_added_p50_us": GOAL_US, "largest_added_p50_us": worst,
        "results": rows}, begun)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
