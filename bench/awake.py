"""Keep every CPU from going idle while a benchmark runs: one busy loop per CPU at nice 19.

A diagnostic, not a setting. On a VM whose idle vCPU halts at once (this development machine:
`haltpoll.guest_halt_poll_ns=0`), each hop of a request wakes a halted CPU, and code that ran
warm a moment ago runs on cold caches. The spinners take a CPU only when nothing else wants it
(nice 19 gets about 1.5 % of a CPU against a normal process), so a benchmark run with them shows
what the same code costs when no hop waits for a CPU to wake.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os


def _spin() -> None:
    os.nice(19)
    while True:
        pass


@contextlib.contextmanager
def cpus_awake(enabled: bool = True):
    spinners = [multiprocessing.Process(target=_spin, daemon=True)
                for _ in range(os.cpu_count() or 1)] if enabled else []
    for p in spinners:
        p.start()
    try:
        yield
    finally:
        for p in spinners:
            p.terminate()
            p.join()
