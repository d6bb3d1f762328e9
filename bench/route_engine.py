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

    python bench/route_engine.py [--rules 100] [--requests 2000] [--baseline-tree DIR] [--awake] [--json]
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
from publish import publish  # noqa: E402
from awake import cpus_awake  # noqa: E402

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
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="another checkout whose engine is measured beside this one's")
    parser.add_argument("--awake", action="store_true",
                        help="a nice-19 busy loop on every CPU meanwhile, so no decision runs on a "
                        "CPU just woken from idle (bench/awake.py)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees = {"this": Path(__file__).resolve().parents[1]}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    load_before = os.getloadavg()

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
        for i, body in enumerate(bodies):  # each engine goes first in turn: a busy moment hits all
            for name in order[i % len(order):] + order[:i % len(order)]:
                r = clients[name].post("/v1/chat/completions", json=body)
                header[name].append(float(r.headers["x-laya-route-us"]))

    report = {"rules": args.rules, "requests": args.requests, "keywords": len(keywords),
              "engine_route_us": percentiles(header["this"]), "in_process_us": percentiles(in_process),
              "ratio_p50": round(statistics.median(header["this"]) / statistics.median(in_process), 2),
              "load_average": [round(x, 2) for x in (load_before[0], os.getloadavg()[0])],
              "cpus": os.cpu_count(), "cpus_awake": args.awake}
    row = lambda label, p: (f"  {label:<34} p50 {p['p50']:>7} µs  p95 {p['p95']:>7}  "  # noqa: E731
                            f"p99 {p['p99']:>7}")
    lines = [f"rules {args.rules}, {len(keywords)} keywords, {args.requests} ordinary prompts, "
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
    publish("route_engine", report, "\n".join(lines), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
