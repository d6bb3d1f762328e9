"""Routing time as the engine reports it (X-Laya-Route-Us) on ordinary prompts, 100 rules.

The rules are `laya bench route`'s workload (60 % keyword rules, 20 % tag rules, 20 % length plus
keywords, a catch-all last); the prompts are ordinary English prose with a few of the rules'
keywords mixed in, so most prompts hit few keywords. The targets are remote models on a closed
loopback port: the request fails after routing, which is all this measures. The same bodies are
also decided in this process, side by side, as the baseline the header is compared with.

With --baseline-tree DIR (another checkout, say `git worktree add DIR <commit>`), an engine
running that tree's Laya gets every body too, in alternating order with this one's.

With --awake, a nice-19 busy loop runs on every CPU meanwhile (bench/awake.py): the decision on a
CPU that was not idle a moment before.

With --dense, the requests are `laya bench route`'s instead: prompts made of the keywords'
5,000-word vocabulary (tens of keywords each), tags, a quarter with content parts.

With --shipped-rules, the rules are those of the shipped models.yaml (by path, by prompt size, a
catch-all; no keywords), their targets replaced by the workload's remote models.

    python bench/route_engine.py [--rules 100 | --shipped-rules] [--requests 2000] [--dense]
                                 [--baseline-tree DIR] [--awake] [--json]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gateway_overhead import _engine_from  # noqa: E402
from publish import begin, publish  # noqa: E402
from awake import cpus_awake  # noqa: E402

from laya_desktop.config.store import config_to_dict, default_config_text, parse_config_text  # noqa: E402
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


def shipped_rules(workload):
    """The shipped models.yaml's rules, each target and fallback one of the workload's models."""
    shipped, errors = parse_config_text(default_config_text())
    assert shipped is not None, errors
    names = [m.name for m in workload.config.models]
    for route in shipped.routes:
        route.target = names[0]
        route.fallback = names[1:1 + len(route.fallback)]
    workload.config.routes = shipped.routes
    return workload


def percentiles(values: list[float]) -> dict:
    xs = sorted(values)
    pick = lambda q: round(xs[min(len(xs) - 1, int(q / 100 * len(xs)))], 2)  # noqa: E731
    return {"p50": pick(50), "p95": pick(95), "p99": pick(99)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="another checkout whose engine is measured beside this one's")
    parser.add_argument("--awake", action="store_true",
                        help="a nice-19 busy loop on every CPU meanwhile, so no decision runs on a "
                        "CPU just woken from idle (bench/awake.py)")
    parser.add_argument("--dense", action="store_true",
                        help="`laya bench route`'s requests: prompts of the keywords' vocabulary, "
                        "tags, a quarter with content parts")
    parser.add_argument("--shipped-rules", action="store_true",
                        help="the shipped models.yaml's rules instead of --rules N")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    trees = {"this": Path(__file__).resolve().parents[1]}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    load_before = os.getloadavg()

    workload = build_workload(args.rules, args.requests if args.dense else 0)
    if args.shipped_rules:
        workload = shipped_rules(workload)
        args.rules = len(workload.config.routes)
    keywords = sorted({k for r in workload.config.routes for k in r.match.keywords})
    rng = random.Random(7)
    if args.dense:  # `laya bench route`'s requests, streamed: ask for one token, not streamed
        requests = [(path, {**body, "max_tokens": 1, "stream": False}, tags)
                    for path, body, tags in workload.requests]
    else:
        requests = [("/v1/chat/completions", {
            "model": "auto", "max_tokens": 1,
            "messages": [{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": ordinary_prompt(rng, keywords)}]}, None)
            for _ in range(args.requests)]

    router = Router(workload.config)
    in_process = []
    for path, body, tags in requests:
        started = time.perf_counter_ns()
        router.decide_body(path, body, tags)
        in_process.append((time.perf_counter_ns() - started) / 1000)

    header: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack, \
            cpus_awake(args.awake):
        config = config_to_dict(workload.config)
        clients = {}
        for name, tree in trees.items():
            (Path(folder) / name).mkdir()
            engine = stack.enter_context(_engine_from(tree, config, Path(folder) / name))
            clients[name] = stack.enter_context(httpx.Client(base_url=engine.url))
        order = list(trees)
        for i, (path, body, tags) in enumerate(requests):  # each engine first in turn
            for name in order[i % len(order):] + order[:i % len(order)]:
                r = clients[name].post(path, json=body,
                                       headers={"X-Laya-Tags": tags} if tags else None)
                header[name].append(float(r.headers["x-laya-route-us"]))

    report = {"rules": args.rules, "shipped_rules": args.shipped_rules, "dense": args.dense,
              "requests": args.requests, "keywords": len(keywords),
              "engine_route_us": percentiles(header["this"]), "in_process_us": percentiles(in_process),
              "ratio_p50": round(statistics.median(header["this"]) / statistics.median(in_process), 2),
              "load_average": [round(x, 2) for x in (load_before[0], os.getloadavg()[0])],
              "cpus": os.cpu_count(), "cpus_awake": args.awake}
    row = lambda label, p: (f"  {label:<34} p50 {p['p50']:>7} µs  p95 {p['p95']:>7}  "  # noqa: E731
                            f"p99 {p['p99']:>7}")
    lines = [f"rules {args.rules}{' (shipped)' if args.shipped_rules else ''}, {len(keywords)} "
             f"keywords, {args.requests} {'dense' if args.dense else 'ordinary'} prompts, "
             f"load average {report['load_average'][0]} -> {report['load_average'][1]} "
             f"on {report['cpus']} CPUs" + (", CPUs kept awake" if args.awake else ""),
             row("X-Laya-Route-Us (engine)", report["engine_route_us"])]
    if "baseline" in trees:
        base = report["baseline"] = {"tree": str(trees["baseline"]),
                                     "engine_route_us": percentiles(header["baseline"])}
        report["ratio_to_baseline_p50"] = round(
            statistics.median(header["this"]) / statistics.median(header["baseline"]), 2)
        lines.append(row("X-Laya-Route-Us (baseline tree)", base["engine_route_us"]))
    lines += [row("decide_body (in process)", report["in_process_us"]),
              f"  ratio engine / in-process at p50: {report['ratio_p50']}"]
    if "baseline" in trees:
        lines.append(f"  ratio engine / baseline engine at p50: {report['ratio_to_baseline_p50']}")
    publish("route_engine", report, "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
