"""What the engine adds on the remote path: an `openai` model in front of an OpenAI-compatible
upstream on loopback, one request at a time, against a direct call to the same upstream.

The upstream (tests/loopback_upstream.py's chat upstream, speaking HTTP/1.1 with keep-alive) runs
in its own process, and so does the engine; this process is the client. Each pair is one direct
POST and one POST through the engine (non-streamed, max_tokens 1), in alternating order, so a
busy moment of the machine hits both. The overhead is the median of the per-pair differences.
The engine's CPU time per request (user + system, from /proc) is reported beside it: on a busy
machine the wall-clock figure also holds the waits for a CPU at each of the two extra hops.

With --baseline-tree DIR (another checkout, say `git worktree add DIR <commit>`), an engine
running that tree's Laya is measured too, request for request beside this one.

With --awake, a nice-19 busy loop runs on every CPU meanwhile (bench/awake.py), so that no hop
waits for an idle CPU to wake: the cost of the same code on a machine that is not idle.

    python bench/gateway_overhead.py [--pairs 300] [--stream] [--baseline-tree DIR] [--awake] [--json]
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import EngineProcess  # noqa: E402
from loopback_upstream import ChatUpstream, _Handler  # noqa: E402
from awake import cpus_awake  # noqa: E402
from publish import begin, publish  # noqa: E402

GOAL_MS = 1.0
ROOT = Path(__file__).resolve().parents[1]
WARMUP = 30
BODY = {"model": "auto", "max_tokens": 1,
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "Say hello in one word."}]}


class _KeepAliveHandler(_Handler):
    protocol_version = "HTTP/1.1"   # the same connection for every request, as a real upstream
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed ACK


def _serve_upstream(port_out) -> None:
    server = ChatUpstream("upstream")
    server.RequestHandlerClass = _KeepAliveHandler
    port_out.send(server.server_port)
    server.serve_forever()


def percentiles(values: list[float]) -> dict:
    xs = sorted(values)
    pick = lambda q: round(xs[min(len(xs) - 1, int(q / 100 * len(xs)))], 3)  # noqa: E731
    return {"p50": pick(50), "p95": pick(95), "p99": pick(99)}


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _timed_post(client: httpx.Client, url: str, body: dict) -> float:
    started = time.perf_counter()
    response = client.post(url, json=body)
    response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:300]}")
    return elapsed


@contextlib.contextmanager
def _engine_from(tree: Path, config: dict, folder: Path):
    """An engine process running the Laya in `tree` (`python -m` finds the package in its
    working directory first)."""
    here = os.getcwd()
    os.chdir(tree)
    try:
        engine = EngineProcess(config, folder).start()
    finally:
        os.chdir(here)
    try:
        yield engine
    finally:
        engine.stop()


def measure(pairs: int, stream: bool, trees: dict[str, Path]) -> dict:
    receive, send = multiprocessing.Pipe(duplex=False)
    upstream = multiprocessing.Process(target=_serve_upstream, args=(send,), daemon=True)
    upstream.start()
    port = receive.recv()
    base = f"http://127.0.0.1:{port}/v1"
    config = {"models": [{"name": "remote", "backend": "openai", "base_url": base}],
              "routes": [{"name": "default", "target": "remote"}]}
    body = {**BODY, "stream": True} if stream else BODY
    times: dict[str, list[float]] = {"direct": [], **{name: [] for name in trees}}
    cpu: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
            engines = {}
            for name, tree in trees.items():
                (Path(folder) / name).mkdir()
                engines[name] = stack.enter_context(_engine_from(tree, config, Path(folder) / name))
            direct = stack.enter_context(httpx.Client(timeout=30))
            clients = {name: stack.enter_context(httpx.Client(timeout=30)) for name in engines}
            calls = {"direct": lambda: _timed_post(direct, base + "/chat/completions",
                                                   {**body, "model": "upstream"})}
            for name, engine in engines.items():
                calls[name] = (lambda c, url: lambda: _timed_post(c, url, body))(
                    clients[name], engine.url + "/v1/chat/completions")
            for _ in range(WARMUP):
                for call in calls.values():
                    call()
            cpu = {name: _cpu_s(e.proc.pid) for name, e in engines.items()}
            order = list(calls)
            for i in range(pairs):   # each kind goes first in turn: a busy moment hits all
                turn = order[i % len(order):] + order[:i % len(order)]
                for name in turn:
                    times[name].append(calls[name]())
            cpu = {name: _cpu_s(e.proc.pid) - cpu[name] for name, e in engines.items()}
    finally:
        upstream.terminate()
        upstream.join()
    report = {"pairs": pairs, "stream": stream, "direct_ms": percentiles(times["direct"]),
              "goal_ms": GOAL_MS, "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} CPUs"}
    for name, tree in trees.items():
        added = [g - d for g, d in zip(times[name], times["direct"])]
        report[name] = {"tree": str(tree), "gateway_ms": percentiles(times[name]),
                        "added_ms": percentiles(added),
                        "added_p50_ms": round(statistics.median(added), 3),
                        "engine_cpu_ms_per_request": round(cpu[name] * 1000 / pairs, 3)}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--stream", action="store_true", help="stream: true requests (SSE relay)")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="another checkout whose engine is measured beside this one's")
    parser.add_argument("--awake", action="store_true",
                        help="a nice-19 busy loop on every CPU meanwhile, so no hop waits for an "
                        "idle CPU to wake (bench/awake.py)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    trees = {"this": ROOT}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    with cpus_awake(args.awake):
        report = measure(args.pairs, args.stream, trees)
    report["cpus_awake"] = args.awake
    row = lambda name, p: f"  {name:<30} p50 {p['p50']:>7.3f} ms  p95 {p['p95']:>7.3f}  p99 {p['p99']:>7.3f}"  # noqa: E731
    lines = [f"{args.pairs} requests of each kind, one at a time, max_tokens 1, stream {args.stream}"
             + (", CPUs kept awake" if args.awake else ""),
             row("direct to upstream", report["direct_ms"])]
    for name in trees:
        label = "" if name == "this" else ", baseline tree"
        r = report[name]
        lines += [row(f"through the engine{label}", r["gateway_ms"]),
                  row(f"added (per pair){label}", r["added_ms"]),
                  f"  overhead p50 {r['added_p50_ms']:.3f} ms (goal <= {GOAL_MS} ms); engine CPU "
                  f"{r['engine_cpu_ms_per_request']:.3f} ms a request (user + system)"]
    publish("gateway_overhead_stream" if args.stream else "gateway_overhead", report,
            "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
