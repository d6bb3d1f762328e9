"""An MLX sequence's prompt cache as bytes for runners/prompt_cache.py, and back.

mlx-lm saves a cache with `save_prompt_cache` (a safetensors file: the arrays of each layer's
`cache.state`, the classes and scalars in its metadata) and `load_prompt_cache`. Here the same
state goes into bytes instead, so that the store's header, checksum and budgets apply to MLX as
they do to llama.cpp: `to_bytes` copies the arrays out in the runner's loop (MLX is not for two
threads) and the writer thread does the rest. `from_bytes` builds the caches again with the
classes' own `from_state`, and only classes of mlx_lm.models.cache.
"""
from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

_U32 = struct.Struct("<I")


def model_key(folder: str, n_ctx: int) -> dict:
    """The model folder's identity (config.json, and each weights file's size and first and
    last MiB) and the versions whose cache layout a state depends on."""
    import mlx.core as mx
    import mlx_lm
    h = hashlib.blake2b(digest_size=16)
    root = Path(folder)
    h.update((root / "config.json").read_bytes())
    for weights in sorted(root.glob("*.safetensors")):
        size = weights.stat().st_size
        h.update(f"{weights.name}:{size}".encode())
        with open(weights, "rb") as f:
            h.update(f.read(1 << 20))
            if size > 2 << 20:
                f.seek(size - (1 << 20))
                h.update(f.read(1 << 20))
    return {"backend": "mlx", "model_hash": h.hexdigest(), "n_ctx": n_ctx,
            "mlx": mx.__version__, "mlx_lm": mlx_lm.__version__}


def to_bytes(cache: list) -> bytearray:
    import mlx.core as mx
    import numpy as np
    from mlx.utils import tree_flatten
    items = tree_flatten([c.state for c in cache])
    mx.eval([v for _, v in items if isinstance(v, mx.array)])
    arrays, scalars, blobs, offset = [], [], [], 0
    for path, value in items:
        if isinstance(value, mx.array):
            raw = np.array(value.view(mx.uint8) if value.ndim else value.reshape(1).view(mx.uint8))
            arrays.append([path, str(value.dtype).removeprefix("mlx.core."), list(value.shape),
                           offset, raw.nbytes])
            blobs.append(raw.tobytes())
            offset += raw.nbytes
        else:
            scalars.append([path, value])
    header = json.dumps({"classes": [type(c).__name__ for c in cache], "arrays": arrays,
                         "scalars": scalars}).encode()
    return bytearray(_U32.pack(len(header)) + header + b"".join(blobs))


def from_bytes(data: bytearray) -> list:
    """The caches; raises ValueError for bytes that do not describe mlx-lm caches."""
    import mlx.core as mx
    import numpy as np
    from mlx.utils import tree_unflatten
    from mlx_lm.models import cache as mlx_cache
    (n,) = _U32.unpack_from(data, 0)
    header = json.loads(bytes(data[4:4 + n]))
    base = 4 + n
    items = []
    for path, dtype, shape, offset, nbytes in header["arrays"]:
        raw = np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=base + offset)
        value = mx.array(raw).view(getattr(mx, dtype))
        items.append((path, value.reshape(shape)))
    items += [(path, value) for path, value in header["scalars"]]
    items.sort(key=lambda item: [int(p) if p.isdigit() else p for p in item[0].split(".")])
    states = tree_unflatten(items)
    classes = []
    for name in header["classes"]:
        cls = getattr(mlx_cache, name, None)
        if not (isinstance(cls, type) and issubclass(cls, mlx_cache._BaseCache)):
            raise ValueError(f"not an mlx-lm cache class: {name!r}")
        classes.append(cls)
    if len(states) != len(classes):
        raise ValueError("the state does not match its classes")
    return [cls.from_state(state) for cls, state in zip(classes, states)]


class MlxSavedPrompts:
    """runners/prompt_cache.py's RAM and disk tiers for an MLX runner: a finished sequence's
    cache is saved (prompt and answer: what the cache holds), a new prompt restores the entry
    sharing its longest prefix, trimmed to it where its caches can be trimmed."""

    def __init__(self, store):
        self.store = store

    @classmethod
    def open(cls, spec: dict, folder: str, n_ctx: int) -> "MlxSavedPrompts | None":
        from laya_desktop.app_files import prompt_cache_folder
        from laya_desktop.runners.prompt_cache import PromptCache
        budgets = spec.get("prompt_cache") or {}
        ram_mb, disk_mb = int(budgets.get("ram_mb") or 0), int(budgets.get("disk_mb") or 0)
        if not (ram_mb or disk_mb):
            return None
        return cls(PromptCache(model_key(folder, n_ctx), prompt_cache_folder(spec.get("name")),
                               ram_mb << 20, disk_mb << 20))

    def restore(self, prompt: list[int], have: int):
        """(caches, prompt tokens they hold, "ram" | "disk") or None."""
        import logging
        import time

        from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache
        match = self.store.lookup(prompt, have)
        if match is None:
            return None
        t0 = time.perf_counter()
        got = self.store.take(match)
        if got is None:
            return None
        data, tokens = got
        try:
            cache = from_bytes(data)
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            logging.getLogger("laya.runner").warning("prompt cache: unusable MLX state: %s", exc)
            return None
        if match.n_tokens < tokens.size:
            if not can_trim_prompt_cache(cache):   # a rotated window, an SSM state
                return None
            trim_prompt_cache(cache, int(tokens.size) - match.n_tokens)
        self.store.restored(match, match.n_tokens, time.perf_counter() - t0)
        return cache, match.n_tokens, match.source

    def save(self, cache: list, tokens: list[int]) -> None:
        import time
        if not self.store.wants(tokens):
            return
        t0 = time.perf_counter()
        data = to_bytes(cache)
        self.store.put(tokens, 0, data, time.perf_counter() - t0)

    def stats(self) -> dict:
        return self.store.stats()

    def close(self) -> None:
        self.store.close()
