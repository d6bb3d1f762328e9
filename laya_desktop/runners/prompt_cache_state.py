"""One sequence's KV state copied out of and into a llama.cpp context (`llama_state_seq_*`).

The bytes are llama.cpp's own serialization of the sequence's cells (positions, then each
layer's K and V rows; with sliding-window layers both caches). They go into a bytearray without
a second copy, and `copy_in` reads them in place. Both touch the context: call them from the
thread that decodes, between steps.
"""
from __future__ import annotations

import ctypes

import llama_cpp as L


def copy_out(ctx, seq_id: int) -> bytearray | None:
    size = L.llama_state_seq_get_size(ctx, seq_id)
    data = bytearray(size)
    view = (ctypes.c_uint8 * size).from_buffer(data)
    written = L.llama_state_seq_get_data(ctx, view, size, seq_id)
    del view   # a bytearray with an exported buffer cannot be resized
    if not written:
        return None
    if written < size:
        del data[written:]
    return data


def copy_in(ctx, mem, seq_id: int, data: bytearray) -> bool:
    """Replace the sequence's cells by the state's; False (the sequence empty) when llama.cpp
    refuses it, e.g. when no run of free cells is long enough beside the other sequences."""
    L.llama_memory_seq_rm(mem, seq_id, -1, -1)
    view = (ctypes.c_uint8 * len(data)).from_buffer(data)
    read = L.llama_state_seq_set_data(ctx, view, len(data), seq_id)
    del view
    if read != len(data):
        L.llama_memory_seq_rm(mem, seq_id, -1, -1)
        return False
    return True
