"""One llama_decode step of the built-in Gemma 3 270M with ggml's repacked CPU kernels and without.

What `cpu_repack` (llama-server's default, off in Laya) is worth in the kernels alone, with no
server around them: B sequences decode one token each per step, T threads, the same model,
context and batch as Laya's runner (8 slots of 2,048 tokens, one unified KV stream). Each
configuration runs in a process of its own, the two kinds alternating, and reports the median
step; ratios are repacked / plain from the same round.

    python bench/repack_kernels.py [--threads 1,2] [--batches 1,4,8] [--steps 40] [--rounds 2] [--json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import begin, publish  # noqa: E402

PROMPT = [2, 818, 5279, 529, 7001, 563, 496, 3925]


def step_ms(threads: int, batch: int, repack: bool, steps: int) -> float:
    """The median decode step, in a process of its own (run with --one)."""
    import time

    import llama_cpp as L

    from laya_desktop.runners.builtin import resolve_model_path

    quiet = L.llama_log_callback(lambda *args: None)
    L.llama_log_set(quiet, None)
    L.llama_backend_init()
    mparams = L.llama_model_default_params()
    mparams.use_extra_bufts = repack
    model = L.llama_model_load_from_file(str(resolve_model_path("builtin:gemma-3-270m")).encode(),
                                         mparams)
    cparams = L.llama_context_default_params()
    cparams.n_ctx, cparams.n_seq_max = 2048 * 8, 8
    cparams.n_batch = cparams.n_ubatch = 512
    cparams.n_threads = cparams.n_threads_batch = threads
    cparams.kv_unified, cparams.swa_full, cparams.no_perf = True, False, True
    ctx = L.llama_init_from_model(model, cparams)
    b = L.llama_batch_init(512, 0, 1)

    def decode(items):
        b.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, logits
            b.seq_id[i][0] = seq
        if L.llama_decode(ctx, b) != 0:
            raise RuntimeError("llama_decode failed")

    for seq in range(batch):
        decode([(t, i, seq, i == len(PROMPT) - 1) for i, t in enumerate(PROMPT)])
    times = []
    for step in range(steps):
        started = time.perf_counter()
        decode([(1000 + (step * 7 + seq) % 50, len(PROMPT) + step, seq, True) for seq in range(batch)])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(threads: int, batch: int, repack: bool, steps: int) -> float:
    out = subprocess.run([sys.executable, __file__, "--one", str(threads), str(batch),
                          "repack" if repack else "plain", str(steps)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="1,4,8")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    begun = begin()
    if args.one:
        threads, batch, kind, steps = args.one
        print(f"{step_ms(int(threads), int(batch), kind == 'repack', int(steps)):.3f}")
        return 0
    load_before = os.getloadavg()[0]
    cells = []
    for threads in map(int, args.threads.split(",")):
        for batch in map(int, args.batches.split(",")):
            rounds = []
            for i in range(args.rounds):
                order = [False, True] if i % 2 == 0 else [True, False]
                ms = {repack: measure(threads, batch, repack, args.steps) for repack in order}
                rounds.append({"plain_ms": round(ms[False], 2), "repack_ms": round(ms[True], 2),
                               "ratio": round(ms[True] / ms[False], 3)})
            cells.append({"threads": threads, "batch": batch, "rounds": rounds,
                          "ratio_median": round(statistics.median(r["ratio"] for r in rounds), 3)})
    report = {"model": "builtin:gemma-3-270m", "steps": args.steps, "cells": cells,
              "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    lines = [f"decode step, ms (median of {args.steps} steps a round); load average "
             f"{report['load_average'][0]} -> {report['load_average'][1]}",
             f"{'threads':>7} {'batch':>5} {'plain':>16} {'repacked':>16} {'repacked / plain':>17}"]
    for c in cells:
        plain = ", ".join(f"{r['plain_ms']:.1f}" for r in c["rounds"])
        repack = ", ".join(f"{r['repack_ms']:.1f}" for r in c["rounds"])
        lines.append(f"{c['threads']:>7} {c['batch']:>5} {plain:>16} {repack:>16} {c['ratio_median']:>17}")
    publish("repack_kernels", report, "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
