"""What the engine adds on the remote path: an `openai` model in front of an OpenAI-compatible
upstream on loopback, one request at a time, against a direct call to the same upstream.

The upstream (tests/loopback_upstream.py's chat upstream, speaking HTTP/1.1 with keep-alive) runs
in its own process, and so does the engine; this process is the client. Each pair is one direct
POST and one POST through the engine (non-streamed, max_tokens 1), in alternating order, so a
busy moment of the machine hits both. The overhead is the median of the per-pair differences.
The engine's CPU time per request (user + system, from /proc) is reported beside it: on a busy
machine the wall-clock figure also holds the waits for a CPU at each of the two extra hops.

    python bench/gateway_overhead.py [--pairs 300] [--stream] [--json]
"""
from __future__ import annotations

import argparse
import multiprocessing
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import running_engine  # noqa: E402
from loopback_upstream import ChatUpstream, _Handler  # noqa: E402
from publish import publish  # noqa: E402

GOAL_MS = 1.0
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


def measure(pairs: int, stream: bool) -> dict:
    receive, send = multiprocessing.Pipe(duplex=False)
    upstream = multiprocessing.Process(target=_serve_upstream, args=(send,), daemon=True)
    upstream.start()
    port = receive.recv()
    base = f"http://127.0.0.1:{port}/v1"
    config = {"models": [{"name": "remote", "backend": "openai", "base_url": base}],
              "routes": [{"name": "default", "target": "remote"}]}
    body = {**BODY, "stream": True} if stream else BODY
    direct, gateway = [], []
    try:
        with tempfile.TemporaryDirectory() as folder, \
                running_engine(config, Path(folder)) as engine, \
                httpx.Client(timeout=30) as upstream_client, \
                httpx.Client(timeout=30) as engine_client:
            calls = [lambda: _timed_post(upstream_client, base + "/chat/completions",
                                         {**body, "model": "upstream"}),
                     lambda: _timed_post(engine_client, engine.url + "/v1/chat/completions", body)]
            for _ in range(WARMUP):
                calls[0](), calls[1]()
            engine_cpu = _cpu_s(engine.proc.pid)
            for i in range(pairs):
                order = (0, 1) if i % 2 == 0 else (1, 0)
                times = {k: calls[k]() for k in order}
                direct.append(times[0])
                gateway.append(times[1])
            engine_cpu = _cpu_s(engine.proc.pid) - engine_cpu
    finally:
        upstream.terminate()
        upstream.join()
    added = [g - d for g, d in zip(gateway, direct)]
    return {"pairs": pairs, "stream": stream, "direct_ms": percentiles(direct),
            "gateway_ms": percentiles(gateway), "added_ms": percentiles(added),
            "added_p50_ms": round(statistics.median(added), 3), "goal_ms": GOAL_MS,
            "engine_cpu_ms_per_request": round(engine_cpu * 1000 / pairs, 3),
            "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} CPUs"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--stream", action="store_true", help="stream: true requests (SSE relay)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.pairs, args.stream)
    row = lambda name, p: f"  {name:<22} p50 {p['p50']:>7.3f} ms  p95 {p['p95']:>7.3f}  p99 {p['p99']:>7.3f}"  # noqa: E731
    table = "\n".join([
        f"{args.pairs} pairs, one request at a time, max_tokens 1, stream {args.stream}",
        row("direct to upstream", report["direct_ms"]),
        row("through the engine", report["gateway_ms"]),
        row("added (per pair)", report["added_ms"]),
        f"  overhead p50 {report['added_p50_ms']:.3f} ms (goal <= {GOAL_MS} ms); engine CPU "
        f"{report['engine_cpu_ms_per_request']:.3f} ms a request (user + system)"])
    publish("gateway_overhead_stream" if args.stream else "gateway_overhead", report, table, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
