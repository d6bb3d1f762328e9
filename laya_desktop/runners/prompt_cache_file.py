"""One prompt cache entry on disk: a header that says what the state is, then llama.cpp's bytes.

    magic "LAYAPKV1" | u32 header length | header (JSON) | u32 crc32 of the header JSON
    | tokens (int32 LE, n_tokens of them) | payload (llama_state_seq_get_data's bytes)

The header holds the format version, the whole cache key (cache_key.py: model file, n_ctx, KV
type, offload, flash attention, SWA, llama.cpp version...), the entry's token count, the earliest
position its sliding-window cells hold, the payload's length and crc32 and the tokens' crc32. A
reader checks the cheap parts (magic, header crc, key, the file's length) when it lists the folder
and the payload's crc32 before the bytes reach llama.cpp: a truncated, stale or foreign file fails
here, with its reason, and never reaches `llama_state_seq_set_data`.
"""
from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from laya_desktop.app_files import PROMPT_CACHE_SUFFIX

MAGIC = b"LAYAPKV1"
FORMAT = 1
SUFFIX = PROMPT_CACHE_SUFFIX
_U32 = struct.Struct("<I")
MAX_HEADER = 1 << 20


class CacheFileError(Exception):
    """A cache file that must not be loaded; the message says why."""


@dataclass
class FileEntry:
    path: Path
    key: dict
    tokens: np.ndarray          # int32
    pos_min: int
    payload_offset: int
    payload_bytes: int
    payload_crc: int
    file_bytes: int


def write_entry(path: Path, key: dict, tokens: np.ndarray, pos_min: int, payload) -> int:
    """Write atomically (a temporary file renamed into place); returns the file's size. An
    OSError (a full or read-only disk) leaves no partial file behind."""
    tokens = np.ascontiguousarray(tokens, dtype="<i4")
    header = json.dumps({"format": FORMAT, "key": key, "n_tokens": int(tokens.size),
                         "pos_min": int(pos_min), "payload_bytes": len(payload),
                         "payload_crc32": zlib.crc32(payload),
                         "tokens_crc32": zlib.crc32(tokens.tobytes())},
                        sort_keys=True, separators=(",", ":")).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + _U32.pack(len(header)) + header + _U32.pack(zlib.crc32(header)))
            f.write(tokens.tobytes())
            f.write(payload)
            size = f.tell()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size


def read_header(path: Path, key: dict) -> FileEntry:
    """The entry's header and tokens, checked against `key`; raises CacheFileError."""
    try:
        with open(path, "rb") as f:
            file_bytes = os.fstat(f.fileno()).st_size
            head = f.read(len(MAGIC) + _U32.size)
            if len(head) < len(MAGIC) + _U32.size or head[:len(MAGIC)] != MAGIC:
                raise CacheFileError("not a prompt cache file of this format (bad magic)")
            (n,) = _U32.unpack(head[len(MAGIC):])
            if n > MAX_HEADER:
                raise CacheFileError(f"header of {n} bytes is implausible")
            raw = f.read(n + _U32.size)
            if len(raw) < n + _U32.size:
                raise CacheFileError("truncated header")
            if zlib.crc32(raw[:n]) != _U32.unpack(raw[n:])[0]:
                raise CacheFileError("header checksum mismatch")
            header = json.loads(raw[:n])
            if header.get("format") != FORMAT:
                raise CacheFileError(f"format {header.get('format')!r}, expected {FORMAT}")
            if header.get("key") != key:
                raise CacheFileError(f"written for another model or settings: {_differs(header.get('key'), key)}")
            count = int(header["n_tokens"])
            data = f.read(4 * count)
            if len(data) < 4 * count:
                raise CacheFileError("truncated tokens")
            if zlib.crc32(data) != header["tokens_crc32"]:
                raise CacheFileError("tokens checksum mismatch")
            offset = f.tell()
    except OSError as exc:
        raise CacheFileError(f"cannot read: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CacheFileError(f"malformed header: {exc}") from None
    payload_bytes = int(header["payload_bytes"])
    if file_bytes != offset + payload_bytes:
        raise CacheFileError(f"{file_bytes} bytes, expected {offset + payload_bytes} (truncated?)")
    return FileEntry(path, key, np.frombuffer(data, dtype="<i4").astype(np.int32), int(header["pos_min"]),
                     offset, payload_bytes, int(header["payload_crc32"]), file_bytes)


def read_payload(entry: FileEntry) -> bytearray:
    """The state bytes, checked against their crc32; raises CacheFileError."""
    buf = bytearray(entry.payload_bytes)
    try:
        with open(entry.path, "rb") as f:
            f.seek(entry.payload_offset)
            got = f.readinto(buf)
    except OSError as exc:
        raise CacheFileError(f"cannot read: {exc}") from None
    if got != entry.payload_bytes:
        raise CacheFileError(f"payload truncated ({got} of {entry.payload_bytes} bytes)")
    if zlib.crc32(buf) != entry.payload_crc:
        raise CacheFileError("payload checksum mismatch")
    return buf


def _differs(found, expected: dict) -> str:
    if not isinstance(found, dict):
        return "no key"
    names = sorted(k for k in set(found) | set(expected) if found.get(k) != expected.get(k))
    return ", ".join(f"{k} {found.get(k)!r} (here {expected.get(k)!r})" for k in names[:4])
