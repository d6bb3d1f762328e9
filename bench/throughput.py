"""Throughput of Laya's GGUF runner against llama-cpp-python's own server, in one run.

Both serve the built-in Gemma 3 270M with the same n_ctx and thread count; the same prompts go to
each at 1 and 4 concurrent clients (streamed /v1/completions, temperature 0). The servers run one
after the other, never together, so they don't fight over the cores. The baseline runs with
`--interrupt_requests False` (by default a second request cuts the first stream short).

    python bench/throughput.py [--json] [--threads N] [--requests-per-client N] [--max-tokens N]

With --json: one JSON object on stdout, the table on stderr; JSON is also written to
bench/results/throughput.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import free_port  # noqa: E402
from publish import publish  # noqa: E402

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
        await one_request(client, url, "Warm-up:", 4, model)

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


def run_laya(model_path: str, threads: int, n_ctx: int, levels, per_client, max_tokens) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="laya-bench-"))
    config = {"models": [{"name": "gemma", "backend": "llama_cpp", "path": model_path,
                          "n_ctx": n_ctx, "parallel": 4, "n_threads": threads, "idle_ttl_s": 0}],
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
        out = {c: asyncio.run(drive(url, c, per_client, max_tokens, "gemma")) for c in levels}
        log = httpx.get(url + "/admin/requests", timeout=10).json()["requests"]
        overhead = [r["engine_ms"] for r in log if r.get("engine_ms") is not None]
        out["engine_ms_p50"] = round(statistics.median(overhead), 3) if overhead else None
        return out
    finally:
        stop(proc)


def run_baseline(model_path: str, threads: int, n_ctx: int, levels, per_client, max_tokens) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", model_path,
                             "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                             "--n_threads_batch", str(threads), "--port", str(port),
                             "--interrupt_requests", "False", "--model_alias", "gemma"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(url, proc, "/v1/models")
        return {c: asyncio.run(drive(url, c, per_client, max_tokens, "gemma")) for c in levels}
    finally:
        stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads for both servers (default: Laya's own default)")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--requests-per-client", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    from laya_desktop.runners.builtin import resolve_model_path
    from laya_desktop.runners.llama_cpp_backend import default_n_threads
    model_path = str(resolve_model_path("builtin:gemma-3-270m"))
    threads = args.threads or default_n_threads()
    levels = (1, 4)
    laya = run_laya(model_path, threads, args.n_ctx, levels, args.requests_per_client, args.max_tokens)
    base = run_baseline(model_path, threads, args.n_ctx, levels, args.requests_per_client,
                        args.max_tokens)
    results = [{"concurrency": c,
                "laya_tok_s": round(laya[c]["tok_s"], 1),
                "baseline_tok_s": round(base[c]["tok_s"], 1),
                "ratio": round(laya[c]["tok_s"] / base[c]["tok_s"], 2),
                "laya_ttft_p50_ms": round(laya[c]["ttft_p50_ms"], 1),
                "baseline_ttft_p50_ms": round(base[c]["ttft_p50_ms"], 1)} for c in levels]
    report = {"model": "builtin:gemma-3-270m (Gemma 3 270M Q4_K_M)", "threads": threads,
              "n_ctx": args.n_ctx, "max_tokens": args.max_tokens,
              "requests_per_client": args.requests_per_client,
              "laya_engine_overhead_p50_ms": laya["engine_ms_p50"], "results": results}

    table = ["concurrency  laya tok/s  baseline tok/s  ratio  laya TTFT p50  baseline TTFT p50"]
    for r in results:
        table.append(f"{r['concurrency']:>11}  {r['laya_tok_s']:>10}  {r['baseline_tok_s']:>14}  "
                     f"{r['ratio']:>5}  {r['laya_ttft_p50_ms']:>10} ms  {r['baseline_ttft_p50_ms']:>14} ms")
    table.append(f"engine overhead per request (outside the runner), p50: "
                 f"{report['laya_engine_overhead_p50_ms']} ms; threads {threads}")
    publish("throughput", report, "\n".join(table), args.json)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
