"""Time to first token of an agent-sized prompt: cold, and restored from the prompt cache.

One engine serves the built-in SmolLM2 135M (n_ctx 4096, parallel 1, one thread) with
`prompt_cache: {ram_mb: 1024, disk_mb: 4096}` in a fresh cache folder. The prompt is a system
message of standard-library docstrings (about 2,000 tokens) and a short user question; each turn
asks a new question after the same system message, as a new agent session does:
- `cold`: nothing cached;
- `slot`: the next question at once (the slot still holds the prompt; for reference);
- `ram`: after another chat took the only slot;
- `unload+reload`: after the model was unloaded and loaded again (the runner's RAM is gone: disk,
  which the OS's page cache likely still holds);
- `engine restart`: a second engine on the same cache folder (disk).
TTFT is the client's, from sending the request to the first streamed token; the request log's
`cached_from` and `cached_tokens` say where the prefix came from. The runner's save and restore
seconds (`prompt_cache_save_s`, `prompt_cache_restore_s`) are the copies out of and into
llama.cpp's KV cache.

    .venv/bin/python bench/prompt_cache.py [--chars 9000]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from engine_harness import EngineProcess  # noqa: E402
from long_prompt import agent_prompt  # noqa: E402
from publish import begin, publish  # noqa: E402

MODEL = "smol"


def config() -> dict:
    return {"models": [{"name": MODEL, "backend": "llama_cpp",
                        "path": "builtin:smollm2-135m-instruct", "n_ctx": 4096, "parallel": 1,
                        "n_threads": 1, "idle_ttl_s": 0,
                        "prompt_cache": {"ram_mb": 1024, "disk_mb": 4096}}],
            "routes": [{"name": "default", "target": MODEL}], "memory": {"guard": False}}


def ttft(c: httpx.Client, system: str, question: str) -> float:
    body = {"model": MODEL, "max_tokens": 4, "temperature": 0, "stream": True,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": question}]}
    started, first = time.monotonic(), None
    with c.stream("POST", "/v1/chat/completions", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():   # read to the end: the request log entry follows it
            if first is None and line.startswith("data: ") and line != "data: [DONE]":
                delta = (json.loads(line[6:]).get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    first = time.monotonic() - started
    return first if first is not None else time.monotonic() - started


def last_entry(c: httpx.Client) -> dict:
    for _ in range(200):
        entries = c.get("/admin/requests").json()["requests"]
        if entries and entries[-1].get("cached_tokens") is not None:
            return entries[-1]
        time.sleep(0.02)
    return {}


def runner_cache_stats(c: httpx.Client) -> dict:
    time.sleep(1.5)   # a telemetry sample after the runner's last stats
    samples = c.get("/admin/telemetry").json().get("samples") or [{}]
    return (samples[-1].get("models", {}).get(MODEL) or {}).get("prompt_cache") or {}


def turn(c: httpx.Client, label: str, system: str, question: str) -> dict:
    seconds = ttft(c, system, question)
    entry = last_entry(c)
    row = {"turn": label, "ttft_s": round(seconds, 3), "prompt_tokens": entry.get("prompt_tokens"),
           "cached_tokens": entry.get("cached_tokens"), "cached_from": entry.get("cached_from")}
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chars", type=int, default=9000)
    args = ap.parse_args()
    begun = begin()
    system = agent_prompt(args.chars)
    folder = Path(tempfile.mkdtemp(prefix="laya-prompt-cache-bench-"))
    env = {"LAYA_PROMPT_CACHE_DIR": str(folder / "cache")}
    rows, stats = [], {}
    for name in ("one", "two"):
        (folder / name).mkdir()
    engine = EngineProcess(config(), folder / "one", env).start()
    try:
        with engine.client(timeout=1800) as c:
            c.post(f"/admin/models/{MODEL}/load").raise_for_status()
            rows.append(turn(c, "cold", system, "Which module parses arguments?"))
            rows.append(turn(c, "slot", system, "Which module runs processes?"))
            ttft(c, "You are brief.", "Say hi.")   # another chat takes the only slot
            rows.append(turn(c, "ram", system, "Which module copies files?"))
            stats["first runner"] = runner_cache_stats(c)
            c.post(f"/admin/models/{MODEL}/unload").raise_for_status()
            c.post(f"/admin/models/{MODEL}/load").raise_for_status()
            rows.append(turn(c, "unload+reload", system, "Which module handles JSON?"))
    finally:
        engine.stop()
    engine = EngineProcess(config(), folder / "two", env).start()
    try:
        with engine.client(timeout=1800) as c:
            c.post(f"/admin/models/{MODEL}/load").raise_for_status()
            rows.append(turn(c, "engine restart", system, "Which module logs messages?"))
            stats["after restart"] = runner_cache_stats(c)
    finally:
        engine.stop()
    cold = rows[0]["ttft_s"]
    lines = [f"SmolLM2 135M, n_ctx 4096, 1 thread, parallel 1; system prompt {args.chars} "
             f"characters; load average {os.getloadavg()[0]:.1f}",
             "| turn | TTFT s | vs cold | prompt tokens | cached tokens | from |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['turn']} | {r['ttft_s']:.3f} | {r['ttft_s'] / cold:.3f} | "
                     f"{r['prompt_tokens']} | {r['cached_tokens']} | {r['cached_from'] or '-'} |")
    for label, s in stats.items():
        lines.append(f"{label}: saves {s.get('prompt_cache_saves')} in "
                     f"{s.get('prompt_cache_save_s')} s, restores (ram {s.get('prompt_cache_hits_ram')}, "
                     f"disk {s.get('prompt_cache_hits_disk')}) in {s.get('prompt_cache_restore_s')} s, "
                     f"{s.get('prompt_cache_disk_bytes')} bytes on disk")
    report = {"chars": args.chars, "rows": rows, "runner_stats": stats}
    publish("prompt_cache", report, "\n".join(lines), False, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
