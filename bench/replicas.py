"""One rule over two replicas: where the requests go and what they wait, through Laya and through
LiteLLM's router, under the same load. A table on stdout, JSON under bench/results/replicas/.

    .venv/bin/python bench/replicas.py [--cases queueing latency] [--gateways laya litellm]
                                       [--requests N] [--json]
    .venv/bin/python bench/replicas.py --cases affinity     # bench/replica_affinity.py

The replicas are stand-ins on loopback (bench/replica_server.py), each in its own process:
- queueing ("Gemma-sized"): two like replicas whose requests take 1-2 s and that serve one at a
  time (the rest queue at the replica); 4 clients. A strategy that sends every request to the
  replica that looked fastest makes a queue there while the other idles. Goal: min_latency's
  p95 no worse than least_loaded's, with the replicas' `slots` left for Laya to learn (a row
  with `slots: 1` declared is shown beside).
- latency ("latency-bound"): two replicas that do not queue, one 300 ms slower; 4 clients.
  Goal: min_latency sends at least 90 % to the fast one.

Each gateway runs every strategy on a fresh process of its own (Laya's engine with the rule
`targets: [..], strategy: S`; LiteLLM's proxy with S's LiteLLM twin, bench/litellm_gateway.py),
the same requests in the same order from the same load generator (laya_desktop.loadtest), streamed,
after two warm-up requests. Each replica notes, per request, when it arrived and when its answer
ended, so the gateway's added latency is the client's latency less the replica's own time
(queue included): no clock is compared across processes. The machine is shared, so the load
average is in the results' header; compare rows of one run, not runs.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import EngineProcess, free_port  # noqa: E402
from litellm_gateway import MODEL, STRATEGY, executable, litellm_proxy, version  # noqa: E402
from publish import begin, publish  # noqa: E402
from replica_server import Replica, replica_processes  # noqa: E402

from laya_desktop.loadtest.generator import run_loadtest  # noqa: E402
from laya_desktop.loadtest.prompts import Prompt  # noqa: E402
from laya_desktop.loadtest.report import percentile  # noqa: E402

CASES = {
    "queueing": {"replicas": {"a": Replica(1.0, 2.0, one_at_a_time=True, seed=1),
                              "b": Replica(1.0, 2.0, one_at_a_time=True, seed=2)},
                 "clients": 4, "requests": 64,
                 "strategies": ["least_loaded", "min_latency", ("min_latency", 1)], "fast": None},
    "latency": {"replicas": {"fast": Replica(0.1, 0.1, seed=1), "slow": Replica(0.4, 0.4, seed=2)},
                "clients": 4, "requests": 40, "strategies": ["least_loaded", "min_latency"],
                "fast": "fast"},
}
GOAL_FAST_SHARE = 90.0
WARMUP = 2
MAX_TOKENS = 32          # a Gemma-sized answer, streamed a token a chunk


async def _drive(url: str, model: str, key: str | None, clients: int, first: int, n: int):
    # request i draws its time by i: every strategy and gateway meets the same work
    prompts = [Prompt(f"[req {first + i} {i}] Say hello.") for i in range(n)]
    return await run_loadtest(url, concurrency=clients, requests=n, max_tokens=MAX_TOKENS,
                              prompts=prompts, model=model, api_key=key, stream=True)


def _records(urls: dict[str, str]) -> dict[int, tuple[str, float, float]]:
    """req -> (the replica that answered it, its own time in ms queue included, its wait in the
    replica's queue in ms)."""
    out = {}
    for name, url in urls.items():
        for r in httpx.get(url[:-3] + "/stats", timeout=10).json()["records"]:
            if r["req"] is not None:
                out[r["req"]] = (name, (r["ended"] - r["arrived"]) * 1000,
                                 (r["began"] - r["arrived"]) * 1000)
    return out


def _figures(report, records: dict, first: int, names: list[str], fast: str | None) -> dict:
    by_index = {first + r.index: r for r in report.results}
    ok = [r for r in report.results if r.ok]
    served = {name: 0 for name in names}
    added, own, waits = [], [], []
    for req, r in by_index.items():
        if req in records and r.ok:
            name, replica_ms, wait_ms = records[req]
            served[name] += 1
            added.append(r.latency_ms - replica_ms)
            own.append(replica_ms)
            waits.append(wait_ms)
    total = max(sum(served.values()), 1)
    lat = [r.latency_ms for r in ok]
    # the second half: after a strategy had the first half to learn the replicas (capacity, speed)
    late = [r.latency_ms for r in ok if r.index >= len(report.results) // 2]
    row = {"requests": len(report.results), "errors": len(report.results) - len(ok),
           "share_pct": {n: round(100 * c / total, 1) for n, c in served.items()},
           "latency_mean_ms": _r(statistics.fmean(lat)) if lat else None,
           "latency_p50_ms": _r(percentile(lat, 50)), "latency_p95_ms": _r(percentile(lat, 95)),
           "second_half_p95_ms": _r(percentile(late, 95)),
           "replica_own_p95_ms": _r(percentile(own, 95)),
           "replica_queue_wait_mean_ms": _r(statistics.fmean(waits)) if waits else None,
           "replica_queue_wait_p95_ms": _r(percentile(waits, 95)),
           "added_mean_ms": _r(statistics.fmean(added)) if added else None,
           "added_p50_ms": _r(percentile(added, 50)), "added_p95_ms": _r(percentile(added, 95))}
    if fast:
        row["fast_share_pct"] = row["share_pct"][fast]
    return row


def _r(v):
    return None if v is None else round(v, 1)


def _laya(urls: dict[str, str], strategy: str, clients: int, first: int, n: int, folder: Path,
          slots: int | None = None):
    models = [{"name": name, "backend": "openai", "base_url": url,
               **({"slots": slots} if slots else {})} for name, url in urls.items()]
    config = {"models": models, "memory": {"guard": False},
              "routes": [{"name": "replicas", "targets": list(urls), "strategy": strategy}]}
    engine = EngineProcess(config, folder).start()
    try:
        asyncio.run(_drive(engine.url, "auto", None, 1, first - WARMUP, WARMUP))
        report = asyncio.run(_drive(engine.url, "auto", None, clients, first, n))
        book = httpx.get(engine.url + "/admin/stats", timeout=10).json().get("targets")
    finally:
        engine.stop()
    return report, {"target_book": book}


def _litellm(urls: dict[str, str], strategy: str, clients: int, first: int, n: int, folder: Path,
             slots: int | None = None):
    with litellm_proxy(urls, strategy, free_port(), folder / "litellm.log") as (url, key):
        asyncio.run(_drive(url, MODEL, key, 1, first - WARMUP, WARMUP))
        report = asyncio.run(_drive(url, MODEL, key, clients, first, n))
    return report, {"routing_strategy": STRATEGY[strategy]}


GATEWAYS = {"laya": _laya, "litellm": _litellm}


def run_case(name: str, gateways: list[str], requests: int | None) -> dict:
    case = CASES[name]
    n = requests or case["requests"]
    rows = []
    first = 1000
    with replica_processes(case["replicas"]) as urls, tempfile.TemporaryDirectory() as tmp:
        for variant in case["strategies"]:
            # ("min_latency", 1): the replicas declared with `slots: 1`, so Laya need not learn it
            strategy, slots = variant if isinstance(variant, tuple) else (variant, None)
            for gateway in gateways:
                if slots and gateway != "laya":
                    continue      # LiteLLM has no such setting
                folder = Path(tmp) / f"{gateway}-{strategy}-{slots}"
                folder.mkdir()
                report, extra = GATEWAYS[gateway](urls, strategy, case["clients"], first, n, folder,
                                                  slots)
                row = _figures(report, _records(urls), first, list(urls), case["fast"])
                rows.append({"case": name, "gateway": gateway, "strategy": strategy, "slots": slots,
                             **row, **extra})
                first += n + 100
    replicas = {k: {"low_s": r.low_s, "high_s": r.high_s, "one_at_a_time": r.one_at_a_time}
                for k, r in case["replicas"].items()}
    return {"clients": case["clients"], "requests": n, "replicas": replicas, "rows": rows}


def verdicts(cases: dict) -> dict:
    """The goals, on Laya's rows."""
    out = {}
    rows = {(r["case"], r["strategy"]): r for c in cases.values() for r in c["rows"]
            if r["gateway"] == "laya" and not r["slots"]}
    if ("queueing", "min_latency") in rows and ("queueing", "least_loaded") in rows:
        ml, ll = rows[("queueing", "min_latency")], rows[("queueing", "least_loaded")]
        out["queueing_min_latency_p95_le_least_loaded"] = (
            ml["latency_p95_ms"] is not None and ll["latency_p95_ms"] is not None
            and ml["latency_p95_ms"] <= ll["latency_p95_ms"])
        out["queueing_min_latency_second_half_p95_le_least_loaded"] = (
            ml["second_half_p95_ms"] is not None and ll["second_half_p95_ms"] is not None
            and ml["second_half_p95_ms"] <= ll["second_half_p95_ms"])
    if ("latency", "min_latency") in rows:
        out["latency_min_latency_fast_share_ge_90"] = (
            rows[("latency", "min_latency")]["fast_share_pct"] >= GOAL_FAST_SHARE)
    return out


def table(cases: dict, verdict: dict) -> str:
    head = (f"{'case':<9} {'gateway':<8} {'strategy':<21} {'share':<22} {'mean ms':>8} "
            f"{'p95 ms':>8} {'2nd half p95':>12} {'queue p95':>9} {'errors':>6} {'added p50':>9} "
            f"{'added p95':>9}")
    lines = [head, "-" * len(head)]
    for name, c in cases.items():
        for r in c["rows"]:
            share = " ".join(f"{k} {v:.0f}%" for k, v in r["share_pct"].items())
            label = r["strategy"] + (f", slots {r['slots']}" if r["slots"] else "")
            lines.append(f"{name:<9} {r['gateway']:<8} {label:<21} {share:<22} "
                         f"{_f(r['latency_mean_ms']):>8} {_f(r['latency_p95_ms']):>8} "
                         f"{_f(r['second_half_p95_ms']):>12} {_f(r['replica_queue_wait_p95_ms']):>9} "
                         f"{r['errors']:>6} {_f(r['added_p50_ms']):>9} {_f(r['added_p95_ms']):>9}")
    for goal, held in verdict.items():
        lines.append(f"{goal}: {'yes' if held else 'NO'}")
    return "\n".join(lines)


def _f(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["queueing", "latency"],
                        choices=[*CASES, "affinity"])
    parser.add_argument("--gateways", nargs="+", default=list(GATEWAYS), choices=list(GATEWAYS))
    parser.add_argument("--requests", type=int, default=None, help="per run (default: the case's)")
    parser.add_argument("--json", action="store_true")
    args, rest = parser.parse_known_args()
    if "affinity" in args.cases:
        from replica_affinity import main as affinity
        return affinity(rest + (["--json"] if args.json else []))
    started = begin()
    gateways = list(args.gateways)
    skipped = None
    if "litellm" in gateways and executable() is None:
        gateways.remove("litellm")
        skipped = "LiteLLM is not installed (see bench/litellm_gateway.py)"
        print(skipped, file=sys.stderr)
    cases = {name: run_case(name, gateways, args.requests) for name in args.cases}
    verdict = verdicts(cases)
    report = {"cases": cases, "goals": verdict, "litellm": version() if "litellm" in gateways else None,
              "litellm_skipped": skipped, "max_tokens": MAX_TOKENS, "warmup_requests": WARMUP}
    publish("replicas", report, table(cases, verdict), args.json, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
