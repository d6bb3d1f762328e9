"""Which weights ggml's CPU backend repacks, and giving back the file pages they no longer need.

With `cpu_repack` (llama-server's default, and Laya's) llama.cpp copies each weight that a
repacked kernel can use into memory of the process's own, in the kernel's interleaved layout,
reading it from the model file's memory map. The copy's originals stay mapped and resident, so
the process counts those weights twice, and the memory guard, which counts a model's mapped
weights as memory it needs (engine/memory_policy.py), would too. After the load nothing reads
them again, so `release_file_pages` drops them from the process (madvise MADV_DONTNEED on their
pages; the page cache keeps them, clean and reclaimable, until the kernel needs the room).

`repacked_tensors` follows ggml's rule (ggml-cpu/repack.cpp, `ggml_repack_get_optimal_repack_type`
in the llama.cpp that llama-cpp-python 0.3.36 ships): a 2-D or 3-D weight of a type with a
repacked kernel for this CPU, whose rows (ne[1]) are a multiple of the kernel's interleave; the
input embeddings are read by row (get_rows) and never repacked. A page given back that a kernel
does read after all is read again from the page cache on its next use, so a wrong guess costs a
page fault, never a wrong result.
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
from functools import lru_cache

from laya_desktop.runners.gguf_info import GgufInfo, GgufTensor

MADV_DONTNEED = 4   # Linux
ORIGINALS_GIVEN_BACK = sys.platform.startswith("linux")   # release_file_pages works here
NEVER_REPACKED = {"token_embd.weight"}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@lru_cache(maxsize=1)
def repack_rows() -> dict[str, int]:
    """Tensor type -> the row multiple its repacked kernel needs, on this CPU."""
    machine = platform.machine().lower()
    flags = _cpu_flags()
    rows: dict[str, int] = {}
    if machine in ("x86_64", "amd64"):
        if "avx2" in flags:
            rows.update(Q4_0=8, Q4_K=8, IQ4_NL=8, MXFP4=8)
        if "avx512f" in flags:
            rows["Q2_K"] = 8
    elif machine in ("aarch64", "arm64"):
        # Linux names the dot-product extension asimddp; macOS has no /proc and every Apple
        # CPU has both, so an empty flag set there means both.
        dotprod = "asimddp" in flags or (not flags and sys.platform == "darwin")
        i8mm = "i8mm" in flags or (not flags and sys.platform == "darwin")
        if dotprod or i8mm:
            rows.update(Q4_0=4, Q4_K=8, Q5_K=8, Q6_K=8, IQ4_NL=4, MXFP4=4, Q8_0=4, Q1_0=4)
    return rows


def repacked_tensors(info: GgufInfo, rows: dict[str, int] | None = None) -> list[GgufTensor]:
    """The weights of `info` that llama.cpp repacks when `cpu_repack` is on."""
    rows = repack_rows() if rows is None else rows
    return [t for t in info.tensors
            if t.type in rows and t.name not in NEVER_REPACKED and len(t.shape) in (2, 3)
            and t.shape[1] % rows[t.type] == 0]


def _file_mappings(path: str) -> list[tuple[int, int, int]]:
    """(start address, end address, file offset) of each mapping of `path` in this process."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].rstrip("\n") == real:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                out.append((start, end, int(parts[2], 16)))
    return out


def _page_ranges(tensors: list[GgufTensor], page: int) -> list[tuple[int, int]]:
    """Whole pages inside runs of adjacent tensors, as file offsets [start, end)."""
    runs: list[list[int]] = []
    for t in sorted(tensors, key=lambda t: t.offset):
        if runs and t.offset <= runs[-1][1] + 64:   # only alignment padding between them
            runs[-1][1] = max(runs[-1][1], t.offset + t.nbytes)
        else:
            runs.append([t.offset, t.offset + t.nbytes])
    out = []
    for start, end in runs:
        first, last = -(-start // page) * page, end // page * page
        if last > first:
            out.append((first, last))
    return out


def release_file_pages(path: str, tensors: list[GgufTensor]) -> int:
    """Drop this process's pages of `tensors` in its memory maps of `path`. Returns the bytes of
    mapping given back (0 where the platform has no /proc/self/maps or madvise)."""
    if not tensors or not ORIGINALS_GIVEN_BACK:
        return 0
    libc = ctypes.CDLL(None)   # the process's own symbols, libc's among them
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    page = os.sysconf("SC_PAGE_SIZE")
    released = 0
    for start_addr, end_addr, file_offset in _file_mappings(path):
        file_end = file_offset + (end_addr - start_addr)
        for first, last in _page_ranges(tensors, page):
            lo, hi = max(first, file_offset), min(last, file_end)
            if hi > lo and libc.madvise(start_addr + lo - file_offset, hi - lo, MADV_DONTNEED) == 0:
                released += hi - lo
    return released
