"""A GGUF's metadata read over HTTP Range requests: the header, key/values and tensor table come
first in the file, so the memory estimate needs only its first megabytes, not the download."""
from __future__ import annotations

import dataclasses
import threading

from huggingface_hub import hf_hub_url
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from laya_desktop.hub.client import TIMEOUT_S, endpoint, hub_errors
from laya_desktop.hub.types import QuantChoice
from laya_desktop.runners import gguf_info
from laya_desktop.runners.gguf_info import GgufError, GgufInfo

FIRST_BYTES = 4 << 20
MAX_HEADER_BYTES = 64 << 20  # a 256k vocabulary with merges fits well within this

_cache: dict[tuple[str, str, str], GgufInfo] = {}
_cache_lock = threading.Lock()


def remote_gguf_info(choice: QuantChoice) -> GgufInfo:
    """The choice's GgufInfo; for a multi-part GGUF the first part's metadata with the weights of
    all parts. Raises HubError subclasses, or GgufError when the file is no readable GGUF."""
    first = choice.first_file
    key = (choice.repo_id, choice.revision, first.path)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    url = hf_hub_url(choice.repo_id, first.path, revision=choice.revision or "main",
                     endpoint=endpoint())
    label = f"{choice.repo_id}/{first.path}"
    want = min(FIRST_BYTES, first.size or FIRST_BYTES)
    while True:
        buf = _ranged(url, want, choice.repo_id)
        try:
            info = _parse_header(buf, label, first.size or len(buf))
            break
        except GgufError as exc:
            if "truncated" not in exc.reason or len(buf) < want or want >= MAX_HEADER_BYTES:
                raise
            want = min(want * 4, MAX_HEADER_BYTES)
    if len(choice.files) > 1:
        header = first.size - info.tensor_bytes
        info = dataclasses.replace(info, tensor_bytes=max(info.tensor_bytes,
                                                          choice.total_bytes - header))
    with _cache_lock:
        _cache[key] = info
    return info


def _parse_header(buf: bytes, label: str, file_size: int) -> GgufInfo:
    # the runners' own reader, given the first bytes instead of a memory map of the whole file:
    # it reads only the header and tensor table, and says "truncated" when they run past `buf`
    return gguf_info._parse(buf, label, file_size)


def _ranged(url: str, n: int, repo_id: str) -> bytes:
    headers = {**build_hf_headers(), "Range": f"bytes=0-{n - 1}"}
    with hub_errors(repo_id):
        r = get_session().get(url, headers=headers, follow_redirects=True, timeout=TIMEOUT_S)
        hf_raise_for_status(r)
        return r.content[:n]
