"""One telemetry sample of the machine: RAM, swap (with in/out rates), CPU and NVIDIA GPUs.

The cost matters because the engine samples at `sample_hz` (4 Hz by default) for as long as it
runs. One `SystemSampler.sample()` (virtual_memory, swap_memory, cpu_percent(interval=None))
reads a few small /proc files, and `process_memory(pid)` reads only /proc/PID/statm. psutil's
memory_full_info walks /proc/PID/smaps instead, which grows with a runner's mapped model, so it
stays off the sampling path.

psutil is imported by `start()` (or the first sample), not with this module: the engine's
telemetry service starts the sampler in a worker thread once it runs, off the path to /healthz.
"""
from __future__ import annotations

import os
import sys
import time

from laya_desktop.telemetry.gpu import GpuSampler
from laya_desktop.telemetry.spare_fds import SpareFds

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class SystemSampler:
    """Keeps the state that rates need (the previous swap counters) and the GPU handles."""

    def __init__(self, gpu: GpuSampler | None = None, clock=time.monotonic):
        self.gpu = gpu if gpu is not None else GpuSampler()
        self._clock = clock
        self._prev_swap: tuple[float, int, int] | None = None
        self._psutil = None
        self.spare = SpareFds()   # for samples when the process has no descriptor left

    def start(self) -> None:
        """Import psutil and look for the GPUs (NVML) now instead of on the first sample:
        blocking, so a worker thread's job."""
        if self._psutil is None:
            self.spare.fill()
            import psutil
            psutil.cpu_percent(interval=None)  # the first call only sets the reference point
            self._psutil = psutil
        self.gpu.start()

    def sample(self) -> dict:
        self.start()
        psutil = self._psutil
        now = self._clock()
        vm = psutil.virtual_memory()
        sw = psutil.swap_memory()
        swap_in_bps = swap_out_bps = 0.0
        if self._prev_swap is not None:
            t0, sin0, sout0 = self._prev_swap
            dt = now - t0
            if dt > 0:
                # counters can go backwards after a suspend or a wrap: report 0, not a negative rate
                swap_in_bps = max(0, sw.sin - sin0) / dt
                swap_out_bps = max(0, sw.sout - sout0) / dt
        self._prev_swap = (now, sw.sin, sw.sout)
        return {
            "t": time.time(),
            "ram_total": int(vm.total),
            "ram_used": int(vm.used),
            "ram_available": int(vm.available),
            "swap_total": int(sw.total),
            "swap_used": int(sw.used),
            "swap_in_bps": swap_in_bps,
            "swap_out_bps": swap_out_bps,
            "cpu_pct": psutil.cpu_percent(interval=None),
            "gpus": self.gpu.sample(),
        }

    def close(self) -> None:
        self.gpu.close()
        self.spare.close()


def sample_system(sampler: SystemSampler | None = None) -> dict:
    """One sample; pass a long-lived SystemSampler for swap rates (a fresh one reports 0)."""
    return (sampler or SystemSampler()).sample()


def process_memory(pid: int) -> dict | None:
    """{"rss", "private", "shared"} in bytes for process `pid`, or None when it is gone.

    `private` is the anonymous memory (heap, KV cache, compute buffers) that comes back when the
    process ends; `shared` is mostly file-backed pages such as mmap'ed model weights, which the
    kernel counts as available (page cache) but which the model needs to run without thrashing.
    Linux reads /proc/PID/statm; elsewhere psutil's memory_info() gives rss only (private = rss).
    """
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{int(pid)}/statm", "rb") as f:
                fields = f.read().split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return None
        resident, shared = int(fields[1]) * _PAGE, int(fields[2]) * _PAGE
        return {"rss": resident, "private": resident - shared, "shared": shared}
    import psutil
    try:
        rss = int(psutil.Process(pid).memory_info().rss)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return {"rss": rss, "private": rss, "shared": 0}
