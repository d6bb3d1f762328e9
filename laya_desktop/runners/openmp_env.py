"""How long ggml's OpenMP threads spin before they sleep, set in the runner before llama.cpp loads
libgomp.

The llama.cpp build (the llama-cpp-python wheel) runs each graph in `omp parallel` and ends every
op in an `omp barrier`. By default libgomp's waiting threads spin 300,000 turns before they sleep.
When another process holds one of the cores, the thread that reaches a barrier first spins on its
core while the other waits for one, at every op of every token: on 2 cores with one busy, two
threads decoded at 0.5-0.6x of one thread, and under heavier sharing at 0.1x (bench/threads.py).
Sleeping at once (OMP_WAIT_POLICY=passive) ends that but costs a wake-up per op: on a quiet
machine two threads were then no faster than one. 1,000 turns keeps most of the quiet speed-up
(1.4-1.7x) and most of the busy speed (0.84x instead of 0.5x). libgomp reads this once, when it
is loaded, so it is set before the first `import llama_cpp`; a user's own setting of either
variable wins.
"""
from __future__ import annotations

import os

SPIN_TURNS = "1000"


def prefer_sleeping_openmp_threads() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = SPIN_TURNS
