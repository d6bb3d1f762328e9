"""How ggml's OpenMP threads wait, set in the runner before llama.cpp loads libgomp.

The llama.cpp build (the llama-cpp-python wheel) runs each graph in `omp parallel` and ends every
op in an `omp barrier`. By default libgomp's waiting threads spin (GOMP_SPINCOUNT, 300,000 turns)
before they sleep. When another process holds one of the cores, the thread that reaches a barrier
first spins on its core while the other waits for one, at every op of every token: two threads on
a shared 2-core machine decoded several times slower than one (bench/threads.py). A waiting
thread that sleeps gives its core to the thread it waits for. libgomp reads this once, when it is
loaded, so it must be set before the first `import llama_cpp`; a user's own setting wins.
"""
from __future__ import annotations

import os

WAIT_POLICY = {"OMP_WAIT_POLICY": "passive"}


def prefer_sleeping_openmp_threads() -> None:
    for name, value in WAIT_POLICY.items():
        os.environ.setdefault(name, value)
