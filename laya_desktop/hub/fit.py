"""Will a download run here? Laya's own memory estimate (runners/memory_estimate.py, the one the
memory guard admits loads with) at the user's n_ctx and parallel, against this machine now.

Verdicts, over the headroom (available RAM less memory.reserved_system_gb; free VRAM):
`fits` within FIT_SHARE of it, `tight` within all of it, `does_not_fit` beyond. With a GPU the
layers go to VRAM and the verdict is the worse of the GPU's and the RAM's.
"""
from __future__ import annotations

from dataclasses import dataclass

import psutil

from laya_desktop.config.schema import MemoryConfig
from laya_desktop.hub.errors import HubError
from laya_desktop.hub.types import Fit, QuantChoice
from laya_desktop.runners.gguf_info import GgufError, GgufInfo
from laya_desktop.runners.memory_estimate import MIB, estimate_memory

GIB = 1 << 30
FIT_SHARE = 0.8  # room left for the OS's own growth, other apps and a busy KV cache's buffers
SIZE_ONLY_FACTOR = 1.1
SIZE_ONLY_OVERHEAD = 200 * MIB


@dataclass(frozen=True)
class Machine:
    ram_available: int
    vram_free: int = 0
    vram_total: int = 0
    gpu_name: str | None = None

    @property
    def has_gpu(self) -> bool:
        return self.vram_total > 0


def this_machine() -> Machine:
    """Available RAM now, and the first NVIDIA GPU's free VRAM (none without NVML)."""
    from laya_desktop.telemetry.gpu import GpuSampler
    ram = psutil.virtual_memory().available
    sampler = GpuSampler()
    try:
        gpus = sampler.sample()
    finally:
        sampler.close()
    if not gpus:
        return Machine(ram_available=ram)
    g = gpus[0]
    return Machine(ram, max(0, g["total"] - g["used"]), g["total"], g["name"])


def judge_fit(choice: QuantChoice, *, n_ctx: int, parallel: int, kv_cache_type: str = "f16",
              n_gpu_layers: int | None = None, machine: Machine | None = None,
              reserved_system_gb: float | None = None) -> Fit:
    """The verdict for `choice` at `n_ctx` x `parallel`. For a GGUF it reads the file's header
    from the hub (a Range request: network I/O, call it off a GUI thread); when that fails it
    falls back to the file size and says so in `reason`. `n_gpu_layers` None: all layers on a
    GPU when there is one, else none."""
    if n_ctx < 1 or parallel < 1:
        raise ValueError("n_ctx and parallel must be at least 1")
    machine = machine or this_machine()
    reserved = int((MemoryConfig.reserved_system_gb if reserved_system_gb is None
                    else reserved_system_gb) * GIB)
    gpu_layers = (-1 if machine.has_gpu else 0) if n_gpu_layers is None else n_gpu_layers
    if choice.kind == "gguf":
        try:
            from laya_desktop.hub.gguf_remote import remote_gguf_info
            info = remote_gguf_info(choice)
        except (HubError, GgufError) as exc:
            return _size_only(choice, machine, reserved, f"header not readable ({exc})")
        return judge_info(info, n_ctx=n_ctx, parallel=parallel, kv_cache_type=kv_cache_type,
                          n_gpu_layers=gpu_layers, machine=machine, reserved=reserved)
    return _size_only(choice, machine, reserved, "an MLX build is judged by its weights' size")


def judge_info(info: GgufInfo, *, n_ctx: int, parallel: int, kv_cache_type: str = "f16",
               n_gpu_layers: int = 0, machine: Machine, reserved: int) -> Fit:
    est = estimate_memory(info, n_ctx, parallel, kv_cache_type, n_gpu_layers)
    ram_headroom = max(0, machine.ram_available - reserved)
    ram = _verdict(est.total_bytes, ram_headroom)
    what = f"{n_ctx} tokens x {parallel} (KV {est.kv_bytes / MIB:.0f} MiB)"
    if machine.has_gpu and n_gpu_layers != 0 and est.vram_bytes:
        vram = _verdict(est.vram_bytes, machine.vram_free)
        if _worse(vram, ram):
            return Fit(vram, est.vram_bytes, machine.vram_free, "vram",
                       f"{_gib(est.vram_bytes)} of VRAM for {what} against "
                       f"{_gib(machine.vram_free)} free on {machine.gpu_name}")
    return Fit(ram, est.total_bytes, ram_headroom, "ram",
               f"{_gib(est.total_bytes)} of RAM for {what} against {_gib(ram_headroom)} "
               f"available (less {_gib(reserved)} kept for the system)")


def _size_only(choice: QuantChoice, machine: Machine, reserved: int, why: str) -> Fit:
    needed = int(choice.total_bytes * SIZE_ONLY_FACTOR) + SIZE_ONLY_OVERHEAD
    if machine.has_gpu:
        return Fit(_verdict(needed, machine.vram_free), needed, machine.vram_free, "vram",
                   f"{why}: about {_gib(needed)} from the file size, KV cache not counted")
    headroom = max(0, machine.ram_available - reserved)
    return Fit(_verdict(needed, headroom), needed, headroom, "ram",
               f"{why}: about {_gib(needed)} from the file size, KV cache not counted")


def _verdict(needed: int, available: int) -> str:
    if needed <= available * FIT_SHARE:
        return "fits"
    return "tight" if needed <= available else "does_not_fit"


_ORDER = {"fits": 0, "tight": 1, "does_not_fit": 2}


def _worse(a: str, b: str) -> bool:
    return _ORDER[a] >= _ORDER[b]


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB // 4 else f"{n / MIB:.0f} MiB"
