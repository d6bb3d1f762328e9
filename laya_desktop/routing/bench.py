"""`laya bench route`: routing decision latency on a synthetic but realistic workload.

The workload is fixed: of N rules, 60 % keyword rules (3 to 5 keywords), 20 % tag
rules, 20 % min_prompt_chars plus keywords, in shuffled order, and a catch-all last; keywords from
a vocabulary of 5,000 random words; prompts of 50 to 5,000 characters (uniform) made of words of
the same vocabulary; requests carry some tags. Each Router.decide_body call is timed on its own,
extraction and lowercasing included, as X-Laya-Route-Us times it.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import random
import string
import sys
import time
from dataclasses import dataclass

from laya_desktop.config.schema import Config, ModelConfig, RouteConfig, RouteMatch
from laya_desktop.routing.router import Router

VOCABULARY_SIZE = 5000
TAGS = [f"tag-{i}" for i in range(50)]
MODELS = [f"model-{i}" for i in range(8)]
PATH = "/v1/chat/completions"


@dataclass
class Workload:
    config: Config
    requests: list[tuple[str, dict, str | None]]  # (path, body, X-Laya-Tags header)
    keywords: int


def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10))))
    return sorted(words)


def _rules(rng: random.Random, vocab: list[str], n: int) -> list[RouteConfig]:
    n_tag = n_min = round(0.2 * n)
    n_keyword = max(0, n - 1 - n_tag - n_min)
    kinds = ["keywords"] * n_keyword + ["tags"] * n_tag + ["min+keywords"] * n_min
    rng.shuffle(kinds)
    rules = []
    for i, kind in enumerate(kinds):
        if kind == "tags":
            match = RouteMatch(tags=rng.sample(TAGS, rng.randint(1, 2)))
        else:
            match = RouteMatch(keywords=rng.sample(vocab, rng.randint(3, 5)))
            if kind == "min+keywords":
                match.min_prompt_chars = rng.randrange(500, 4600, 100)
        rules.append(RouteConfig(name=f"r{i}-{kind}", target=rng.choice(MODELS), match=match,
                                 fallback=rng.sample(MODELS, rng.randint(0, 2))))
    rules.append(RouteConfig(name="default", target=MODELS[0], fallback=[MODELS[1]]))
    return rules


def _prompt(rng: random.Random, words: list[str]) -> str:
    length = rng.randint(50, 5000)
    return " ".join(rng.choices(words, k=length // 4 + 2))[:length]


def _request(rng: random.Random, words: list[str]) -> tuple[str, dict, str | None]:
    prompt = _prompt(rng, words)
    messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant."}]
    if rng.random() < 0.3:
        messages += [{"role": "user", "content": _prompt(rng, words)[:200]},
                     {"role": "assistant", "content": "Sure, here is what I found."}]
    if rng.random() < 0.25:
        messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    else:
        messages.append({"role": "user", "content": prompt})
    body: dict = {"model": "auto", "messages": messages, "temperature": 0.7,
                  "max_tokens": 512, "stream": True}
    tags = rng.sample(TAGS, rng.randint(0, 2))
    header = None
    if rng.random() < 0.5:
        body["tags"] = tags
    elif tags:
        header = ",".join(tags)
    return PATH, body, header


def build_workload(n_rules: int, n_requests: int, seed: int = 1) -> Workload:
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    # some capitalised words, so that lowercasing does real work
    words = [w.capitalize() if rng.random() < 0.1 else w for w in vocab]
    models = [ModelConfig(name=m, backend="openai", base_url="http://127.0.0.1:9/v1")
              for m in MODELS]
    config = Config(models=models, routes=_rules(rng, vocab, n_rules))
    keywords = len({k for r in config.routes for k in r.match.keywords})
    requests = [_request(rng, words) for _ in range(n_requests)]
    return Workload(config, requests, keywords)


def time_decisions(router: Router, requests: list, warmup: int = 500) -> list[int]:
    """Nanoseconds per decide_body call, in request order."""
    decide = router.decide_body
    for path, body, header in requests[:warmup]:
        decide(path, body, header)
    clock = time.perf_counter_ns
    samples = []
    gc.collect()
    gc.freeze()  # the request pool is the benchmark's own data: keep it out of full collections
    for path, body, header in requests:
        start = clock()
        decide(path, body, header)
        samples.append(clock() - start)
    gc.unfreeze()
    return samples


def percentile_us(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank percentile, in microseconds."""
    rank = max(1, math.ceil(q / 100 * len(sorted_ns)))
    return round(sorted_ns[rank - 1] / 1000, 1)


def bench_route(n_rules: int, n_requests: int, seed: int = 1, scanner: str | None = None) -> dict:
    """The JSON result, plus details under keys starting with '_' (not part of --json)."""
    started = time.perf_counter()
    workload = build_workload(n_rules, n_requests, seed)
    built = time.perf_counter()
    router = Router(workload.config, scanner=scanner)
    compiled = time.perf_counter()
    samples = sorted(time_decisions(router, workload.requests))
    return {
        "rules": n_rules, "requests": n_requests,
        "p50_us": percentile_us(samples, 50), "p95_us": percentile_us(samples, 95),
        "p99_us": percentile_us(samples, 99),
        "_max_us": round(samples[-1] / 1000, 1),
        "_mean_us": round(sum(samples) / len(samples) / 1000, 1),
        "_keywords": workload.keywords, "_scanner": router.scanner_name,
        "_tiers": router.tier_count, "_workload_s": round(built - started, 2),
        "_compile_ms": round((compiled - built) * 1000, 1),
    }


def format_table(results: list[dict]) -> str:
    head = (f"{'rules':>6} {'requests':>8} {'keywords':>8} {'scanner':>14} {'p50 us':>7} "
            f"{'p95 us':>7} {'p99 us':>7} {'max us':>7} {'compile ms':>10}")
    rows = [f"{r['rules']:>6} {r['requests']:>8} {r['_keywords']:>8} {r['_scanner']:>14} "
            f"{r['p50_us']:>7} {r['p95_us']:>7} {r['p99_us']:>7} {r['_max_us']:>7} "
            f"{r['_compile_ms']:>10}" for r in results]
    return "\n".join([head, *rows])


def run_bench_route(args: argparse.Namespace) -> int:
    if args.rules < 1 or args.requests < 1:
        print("laya bench route: --rules and --requests must be at least 1", file=sys.stderr)
        return 2
    print(f"building {args.rules} rules and {args.requests} requests ...", file=sys.stderr)
    result = bench_route(args.rules, args.requests, getattr(args, "seed", 1))
    table = format_table([result])
    if args.json:
        print(table, file=sys.stderr)
        print(json.dumps({k: v for k, v in result.items() if not k.startswith("_")}))
    else:
        print(table)
    return 0
