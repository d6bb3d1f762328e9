"""GGUF metadata without loading the model: architecture, size, shape and the KV cache's cost.

`gguf.GGUFReader` builds Python objects for every array element, so a file with a 262k-token
vocabulary (Gemma 3) takes many seconds to open. This reader parses the header,
the key/value pairs and the tensor descriptions straight from a memory map, keeps scalars and
short arrays, and only counts the long ones (the vocabulary): Gemma 3 270M opens at once. The gguf
package still supplies the names and block sizes of the tensor types.
"""
from __future__ import annotations

import math
import mmap
import os
import struct
from collections import Counter
from dataclasses import dataclass, field

import gguf

from laya_desktop.runners.swa_layout import sliding_window_layers

GGUF_MAGIC = b"GGUF"
_KEEP_ARRAY_MAX = 1024  # arrays longer than this are counted, not kept (vocabularies, merges)
# llama.cpp's own reader takes no arrays of arrays at all; a few levels are kept for other
# writers. Deeper is a damaged or hostile file, refused before Python's stack runs out.
MAX_ARRAY_DEPTH = 8

# Value types of the GGUF format (gguf.GGUFValueType), as struct formats where fixed-size.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9



class GgufError(ValueError):
    """The file is not a GGUF model file or is damaged. `reason` says what, without the path
    (for an answer to a client, who has no business knowing where the engine keeps its files)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class GgufTensor:
    name: str
    type: str                       # tensor type name (Q4_K, F32, ...)
    shape: tuple[int, ...]          # ne[0], ne[1], ...: ne[0] is the row length
    offset: int                     # of its data, from the start of the file
    nbytes: int


@dataclass
class GgufInfo:
    path: str
    file_size: int
    version: int
    architecture: str
    name: str | None
    parameters: int                 # sum of the tensors' element counts
    quantization: str               # from general.file_type, else the dominant tensor type
    tensor_bytes: int               # bytes of tensor data (the weights)
    tensor_types: dict[str, int]    # tensor type name -> bytes
    token_embd_bytes: int           # the input embeddings, which llama.cpp keeps in RAM
    token_embd_type: str | None
    n_layer: int
    n_head: int
    n_head_kv: int                  # the largest over layers when per layer
    n_head_kv_per_layer: list[int]
    n_embd: int
    head_dim_k: int
    head_dim_v: int
    n_vocab: int
    context_length: int
    sliding_window: int | None
    swa_layers: list[int]           # sliding-window layers, per llama.cpp's pattern for the arch
    n_ff: int | None
    has_chat_template: bool
    metadata: dict = field(default_factory=dict, repr=False)  # scalars and short arrays
    tensors: list[GgufTensor] = field(default_factory=list, repr=False)

    @property
    def kv_elements_per_token(self) -> int:
        """K and V elements per token over all layers: sum of n_head_kv x (head_dim_k + head_dim_v)."""
        return sum(h * (self.head_dim_k + self.head_dim_v) for h in self.n_head_kv_per_layer)

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k not in ("metadata", "tensors")}
        d["kv_elements_per_token"] = self.kv_elements_per_token
        return d


class _Cursor:
    def __init__(self, buf, path: str):
        self.buf, self.pos, self.path, self.end = buf, 0, path, len(buf)

    def need(self, n: int) -> None:
        if self.pos + n > self.end:
            raise GgufError(self.path, f"truncated GGUF file (needs {n} bytes at offset {self.pos}, "
                            f"file has {self.end})")

    def unpack(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        self.need(size)
        value = struct.unpack_from("<" + fmt, self.buf, self.pos)[0]
        self.pos += size
        return value

    def string(self) -> str:
        n = self.unpack("Q")
        if n > self.end:
            raise GgufError(self.path, f"damaged GGUF file (string length {n} at offset {self.pos - 8})")
        self.need(n)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw.decode("utf-8", "replace")

    def skip_strings(self, count: int) -> None:
        buf, pos, end = self.buf, self.pos, self.end
        unpack = struct.unpack_from
        for _ in range(count):
            if pos + 8 > end:
                self.pos = pos
                self.need(8)
            pos += 8 + unpack("<Q", buf, pos)[0]
        if pos > end:
            raise GgufError(self.path, f"truncated GGUF file (string array runs past the end)")
        self.pos = pos

    def value(self, vtype: int, depth: int = 0):
        if vtype in _SCALAR:
            return self.unpack(_SCALAR[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth >= MAX_ARRAY_DEPTH:
                raise GgufError(self.path, f"damaged GGUF file (arrays nested more than "
                                           f"{MAX_ARRAY_DEPTH} deep at offset {self.pos})")
            itype = self.unpack("I")
            count = self.unpack("Q")
            if count > self.end:
                raise GgufError(self.path, f"truncated or damaged GGUF file (an array of {count} "
                                f"items at offset {self.pos} cannot fit in {self.end} bytes)")
            if count <= _KEEP_ARRAY_MAX:
                return [self.value(itype, depth + 1) for _ in range(count)]
            if itype in _SCALAR:
                size = struct.calcsize("<" + _SCALAR[itype]) * count
                self.need(size)
                self.pos += size
            elif itype == _STRING:
                self.skip_strings(count)
            else:
                for _ in range(count):
                    self.value(itype, depth + 1)
            return _LongArray(count)
        raise GgufError(self.path, f"damaged GGUF file "
                        f"(unknown value type {vtype} at offset {self.pos - 4})")


class _LongArray:
    """Stands in for an array too long to keep; only its length is known."""

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"<array of {self.count}>"


def _type_name(t: int) -> str:
    try:
        return gguf.GGMLQuantizationType(t).name
    except ValueError:
        return f"type{t}"


def _tensor_bytes(t: int, n_elements: int) -> int:
    try:
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(t)]
    except (ValueError, KeyError):
        return 0
    return n_elements // block * size


def _file_type_name(value) -> str | None:
    if not isinstance(value, int):
        return None
    try:
        name = gguf.LlamaFileType(value).name
    except ValueError:
        return None
    for prefix in ("MOSTLY_", "ALL_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


def read_gguf_info(path) -> GgufInfo:
    """Read a GGUF file's metadata and tensor table. Raises GgufError for anything not a readable
    GGUF model (and OSError when the file cannot be opened)."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    if size < 24:
        raise GgufError(path, f"not a GGUF file (only {size} bytes)")
    with open(path, "rb") as f:
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(buf, path, size)


def _parse(buf, path: str, size: int) -> GgufInfo:
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise GgufError(path, f"not a GGUF file (starts with {bytes(buf[:4])!r}, expected b'GGUF')")
    cur = _Cursor(buf, path)
    cur.pos = 4
    version = cur.unpack("I")
    if version not in (2, 3):
        hint = " (a big-endian file?)" if version > 0xFFFF else ""
        raise GgufError(path, f"unsupported GGUF version {version}{hint}; versions 2 and 3 are read")
    n_tensors = cur.unpack("Q")
    n_kv = cur.unpack("Q")
    if n_tensors > size or n_kv > size:
        raise GgufError(path, f"damaged GGUF header ({n_tensors} tensors, {n_kv} keys)")

    meta: dict = {}
    for _ in range(n_kv):
        key = cur.string()
        vtype = cur.unpack("I")
        meta[key] = cur.value(vtype)

    parameters = 0
    by_type: Counter = Counter()
    token_embd_bytes, token_embd_type = 0, None
    table = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.unpack("I")
        if n_dims > 8:
            raise GgufError(path, f"damaged tensor table ({name!r} has {n_dims} dimensions)")
        shape = tuple(cur.unpack("Q") for _ in range(n_dims))
        n_elements = math.prod(shape)
        ttype = cur.unpack("I")
        offset = cur.unpack("Q")
        parameters += n_elements
        nbytes = _tensor_bytes(ttype, n_elements)
        type_name = _type_name(ttype)
        by_type[type_name] += nbytes
        table.append((name, type_name, shape, offset, nbytes))
        if name == "token_embd.weight":
            token_embd_bytes, token_embd_type = nbytes, type_name
    alignment = meta.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment < 1:
        alignment = 32
    data_start = (cur.pos + alignment - 1) // alignment * alignment
    tensors = [GgufTensor(name, type_name, shape, data_start + offset, nbytes)
               for name, type_name, shape, offset, nbytes in table]

    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GgufError(path, f"GGUF file without general.architecture (not a model file?)")

    def get(key: str, default=None):
        return meta.get(f"{arch}.{key}", default)

    n_layer = int(get("block_count", 0) or 0)
    n_head = _first_int(get("attention.head_count", 0))
    n_embd = int(get("embedding_length", 0) or 0)
    head_kv_raw = get("attention.head_count_kv", n_head)
    if isinstance(head_kv_raw, list):
        per_layer = [int(x) for x in head_kv_raw][:n_layer] or [0] * n_layer
    else:
        per_layer = [int(head_kv_raw or 0)] * n_layer
    default_head_dim = n_embd // n_head if n_head else 0
    head_dim_k = int(get("attention.key_length", default_head_dim) or 0)
    head_dim_v = int(get("attention.value_length", default_head_dim) or 0)

    tokens = meta.get("tokenizer.ggml.tokens")
    n_vocab = len(tokens) if tokens is not None else int(get("vocab_size", 0) or 0)

    sliding_window = get("attention.sliding_window")
    swa_layers = sliding_window_layers(arch, n_layer, sliding_window, get("attention.sliding_window_pattern"))

    quant = _file_type_name(meta.get("general.file_type"))
    if quant is None:
        quant = by_type.most_common(1)[0][0] if by_type else "unknown"

    n_ff = get("feed_forward_length")
    return GgufInfo(
        path=path, file_size=size, version=version, architecture=arch,
        name=meta.get("general.name") if isinstance(meta.get("general.name"), str) else None,
        parameters=parameters, quantization=quant, tensor_bytes=sum(by_type.values()),
        tensor_types=dict(by_type.most_common()), token_embd_bytes=token_embd_bytes,
        token_embd_type=token_embd_type, n_layer=n_layer, n_head=n_head,
        n_head_kv=max(per_layer) if per_layer else 0, n_head_kv_per_layer=per_layer, n_embd=n_embd,
        head_dim_k=head_dim_k, head_dim_v=head_dim_v, n_vocab=n_vocab,
        context_length=int(get("context_length", 0) or 0),
        sliding_window=int(sliding_window) if isinstance(sliding_window, int) else None,
        swa_layers=swa_layers, n_ff=_first_int(n_ff) if n_ff is not None else None,
        has_chat_template=isinstance(meta.get("tokenizer.chat_template"), str),
        metadata={k: v for k, v in meta.items() if not isinstance(v, _LongArray)},
        tensors=tensors,
    )


def _first_int(value) -> int:
    if isinstance(value, list):
        return int(max(value)) if value else 0
    return int(value or 0)
