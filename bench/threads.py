"""Why two llama.cpp threads collapse when another process holds a core, and what fixes it.

The llama-cpp-python wheel's ggml is built with OpenMP: each graph runs in `omp parallel` and
every op ends in an `omp barrier`. libgomp's waiting threads spin (GOMP_SPINCOUNT, 300,000 turns
by default) before they sleep. With 2 threads on 2 cores and a third process busy, the thread that
reaches a barrier first spins on its core while the other waits for a core, at every op of every
token. A shorter spin or sleeping at once stops that, but costs the quiet speed-up; the runner's
default keeps libgomp's spin and lets its thread governor (runners/thread_governor.py) drop to
fewer threads while they are faster. Each setting runs in its own process (libgomp reads its
environment once, when loaded): the runner decodes `--sequences` sequences of `--tokens` tokens of
the built-in Gemma 3 270M after a warm-up of 8 tokens, rounds interleaved so the machine's drift
hits every setting alike. Quiet, then with one core kept busy from the start.

    .venv/bin/python bench/threads.py [--rounds 3] [--sequences 4] [--tokens 48] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import begin, publish  # noqa: E402

SETTINGS = {   # label: (threads, extra environment, the runner's thread governor on)
    "1 thread": (1, {}, False),
    "2 threads, libgomp default spin": (2, {}, False),
    "2 threads, GOMP_SPINCOUNT=1000": (2, {"GOMP_SPINCOUNT": "1000"}, False),
    "2 threads, OMP_WAIT_POLICY=passive": (2, {"OMP_WAIT_POLICY": "passive"}, False),
    "2 threads, governed (the runner's default)": (2, {}, True),
}

CHILD = r"""
import json, sys, time
from laya_desktop.runners.builtin import resolve_model_path
from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
threads, sequences, tokens, governed = (int(x) for x in sys.argv[1:5])
backend = LlamaCppBackend({"name": "g", "path": str(resolve_model_path("builtin:gemma-3-270m")),
                           "n_ctx": 512, "parallel": sequences, "n_threads": threads,
                           "adaptive_threads": bool(governed)})
def run(n, tokens=tokens):
    for i in range(sequences):
        backend.submit({"id": f"{n}-{i}", "kind": "completion", "prompt": f"Story number {i}:",
                        "params": {"max_tokens": tokens, "temperature": 0}})
    done, made = 0, 0
    while done < sequences:
        for e in backend.step():
            if e["event"] == "done":
                done += 1
                made += e["usage"]["completion_tokens"]
    return made
run("warm", 8)
started = time.perf_counter()
made = run("timed")
print(json.dumps({"tok_s": made / (time.perf_counter() - started)}))
"""


def measure(threads: int, env: dict, governed: bool, sequences: int, tokens: int) -> float:
    clean = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(sequences), str(tokens),
                          str(int(governed))],
                         env={**clean, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["tok_s"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    report = {"sequences": args.sequences, "tokens": args.tokens, "rounds": args.rounds, "cases": {}}
    for case in ("quiet", "one core busy"):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if case != "quiet" else None
        try:
            runs = {label: [] for label in SETTINGS}
            for _ in range(args.rounds):
                for label, (threads, env, governed) in SETTINGS.items():
                    runs[label].append(measure(threads, env, governed, args.sequences, args.tokens))
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        base = statistics.median(runs["1 thread"])
        report["cases"][case] = {label: {"tok_s_median": round(statistics.median(v), 1),
                                         "ratio_vs_1_thread": round(statistics.median(v) / base, 2),
                                         "runs": [round(x, 1) for x in v]}
                                 for label, v in runs.items()}
    lines = [f"{'setting':<44}" + "".join(f"{c + ' tok/s':>22}{'vs 1 thread':>13}" for c in report["cases"])]
    for label in SETTINGS:
        cells = "".join(f"{report['cases'][c][label]['tok_s_median']:>22}"
                        f"{report['cases'][c][label]['ratio_vs_1_thread']:>13}" for c in report["cases"])
        lines.append(f"{label:<44}{cells}")
    lines.append(f"{args.sequences} sequences x {args.tokens} tokens, median of {args.rounds} interleaved "
                 f"rounds; {os.cpu_count()} CPUs; load average at the end {os.getloadavg()[0]:.1f}")
    publish("threads", report, "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
