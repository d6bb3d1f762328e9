"""Routing time as the engine reports it (X-Laya-Route-Us) on ordinary prompts, 100 rules.

The rules are `laya bench route`'s workload (60 % keyword rules, 20 % tag rules, 20 % length plus
keywords, a catch-all last); the prompts are ordinary English prose with a few of the rules'
keywords mixed in, so most prompts hit few keywords. The targets are remote models on a closed
loopback port: the request fails after routing, which is all this measures. The same bodies are
also decided in this process, side by side, as the baseline the header is compared with.

    python bench/route_engine.py [--rules 100] [--requests 2000] [--json]
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import running_engine  # noqa: E402
from publish import publish  # noqa: E402

from laya_desktop.config.store import config_to_dict  # noqa: E402
from laya_desktop.routing.bench import build_workload  # noqa: E402
from laya_desktop.routing.router import Router  # noqa: E402

PROSE = ("the a of and to in is that it for on with as was be by this are or from at an have "
         "not but they which you one all were we there their been has more when will would can "
         "if about so what out up into some could them other than then now only its time these "
         "two may first new any like our over such also after most work very through where "
         "please explain how why code function error list write short summary of this text "
         "about my project and give me some ideas for the next step").split()


def ordinary_prompt(rng: random.Random, keywords: list[str]) -> str:
    words = rng.choices(PROSE, k=rng.randint(10, 600))
    for _ in range(rng.randint(0, 3) if keywords else 0):
        words.insert(rng.randrange(len(words) + 1), rng.choice(keywords))
    return " ".join(words).capitalize() + "."


def percentiles(values: list[float]) -> dict:
    xs = sorted(values)
    pick = lambda q: round(xs[min(len(xs) - 1, int(q / 100 * len(xs)))], 2)  # noqa: E731
    return {"p50": pick(50), "p95": pick(95), "p99": pick(99)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    workload = build_workload(args.rules, 0)
    keywords = sorted({k for r in workload.config.routes for k in r.match.keywords})
    rng = random.Random(7)
    bodies = [{"model": "auto", "max_tokens": 1,
               "messages": [{"role": "system", "content": "You are a helpful assistant."},
                            {"role": "user", "content": ordinary_prompt(rng, keywords)}]}
              for _ in range(args.requests)]

    router = Router(workload.config)
    in_process = []
    for body in bodies:
        started = time.perf_counter_ns()
        router.decide_body("/v1/chat/completions", body, None)
        in_process.append((time.perf_counter_ns() - started) / 1000)

    header = []
    with tempfile.TemporaryDirectory() as folder:
        config = config_to_dict(workload.config)
        with running_engine(config, Path(folder)) as engine, httpx.Client(base_url=engine.url) as c:
            for body in bodies:
                r = c.post("/v1/chat/completions", json=body)
                header.append(float(r.headers["x-laya-route-us"]))

    report = {"rules": args.rules, "requests": args.requests, "keywords": len(keywords),
              "engine_route_us": percentiles(header), "in_process_us": percentiles(in_process),
              "ratio_p50": round(statistics.median(header) / statistics.median(in_process), 2)}
    table = (f"rules {args.rules}, {len(keywords)} keywords, {args.requests} ordinary prompts\n"
             f"  X-Laya-Route-Us (engine)   p50 {report['engine_route_us']['p50']:>7} µs  "
             f"p95 {report['engine_route_us']['p95']:>7}  p99 {report['engine_route_us']['p99']:>7}\n"
             f"  decide_body (in process)   p50 {report['in_process_us']['p50']:>7} µs  "
             f"p95 {report['in_process_us']['p95']:>7}  p99 {report['in_process_us']['p99']:>7}\n"
             f"  ratio engine / in-process at p50: {report['ratio_p50']}")
    publish("route_engine", report, table, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
