"""One file from the hub to the disk: resumed from its partial file, checked against the sha256
the hub publishes (the LFS oid), then moved into place.

huggingface_hub's hf_hub_download throws a partial file away when a transfer fails (it writes to
a per-process temporary file), so it cannot resume after a restart. This module keeps the partial
file beside the target (`NAME.part`) and hands it to huggingface_hub's own `http_get`, which sends
the Range request and retries a broken connection from where it stopped.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
from huggingface_hub.file_download import http_get
from huggingface_hub.utils import build_hf_headers

from laya_desktop.hub.client import endpoint, hub_errors
from laya_desktop.hub.errors import ChecksumMismatch, HubError, NotEnoughDisk
from laya_desktop.hub.types import HubFile

PART_SUFFIX = ".part"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_GIT_OID = re.compile(r"[0-9a-f]{40}")  # a small file kept in git: its ETag is the blob's id
HASH_CHUNK = 4 << 20
# http_get hands over (and reports) data a chunk at a time, 10 MiB by default: on a slow line that
# is a progress bar frozen for many seconds, and a broken transfer resumes only from the last
# whole chunk. A smaller chunk costs nothing measurable in Python's read loop.
TRANSFER_CHUNK = 1 << 20
constants.DOWNLOAD_CHUNK_SIZE = min(constants.DOWNLOAD_CHUNK_SIZE, TRANSFER_CHUNK)


class Cancelled(Exception):
    """The user cancelled the download (raised from inside the transfer to stop it)."""


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + PART_SUFFIX)


def on_disk(dest: Path) -> int:
    """Bytes of this file already here: the finished file, else its partial one."""
    for p in (dest, part_path(dest)):
        try:
            return p.stat().st_size
        except OSError:
            continue
    return 0


def _progress_class(on_bytes: Callable[[int], None], cancelled: threading.Event):
    class Progress:
        """What http_get takes as its tqdm_class: it only creates it, updates it and closes it."""

        def __init__(self, *args, **kwargs):
            pass

        def update(self, n: int = 1) -> None:
            on_bytes(n)
            if cancelled.is_set():
                raise Cancelled()

        def close(self) -> None:
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> bool:
            return False

    return Progress


def fetch_file(repo_id: str, revision: str, file: HubFile, dest: Path, *,
               on_bytes: Callable[[int], None], cancelled: threading.Event,
               on_start: Callable[[int], None] = lambda have: None,
               on_verify: Callable[[], None] = lambda: None) -> Path:
    """Download `file` to `dest`. A finished `dest` of the right size is kept; a partial one is
    resumed. Raises HubError subclasses (GatedRepo, HubUnreachable, ChecksumMismatch,
    NotEnoughDisk when the disk fills up) or Cancelled; the partial file stays for a resume except
    after a checksum mismatch or a full disk, which remove it."""
    if dest.is_file() and dest.stat().st_size == file.size:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    url = hf_hub_url(repo_id, file.path, revision=revision, endpoint=endpoint())
    with hub_errors(repo_id):
        meta = get_hf_file_metadata(url, endpoint=endpoint())
    size = meta.size if meta.size is not None else file.size
    expected = file.sha256 or (meta.etag if meta.etag and _SHA256.fullmatch(meta.etag) else None)
    have = part.stat().st_size if part.exists() else 0
    if have > size:
        part.unlink()
        have = 0
    on_start(have)
    try:
        with open(part, "ab") as f, hub_errors(repo_id):
            http_get(meta.location, f, resume_size=have, headers=build_hf_headers(),
                     expected_size=size, displayed_filename=file.path,
                     tqdm_class=_progress_class(on_bytes, cancelled))
    except OSError as exc:
        if exc.errno is None:  # http_get's size check: fewer bytes came than announced
            raise HubError(f"{file.path}: the transfer broke off ({exc}); start it again to "
                           "resume") from None
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        part.unlink(missing_ok=True)
        raise NotEnoughDisk(str(dest.parent), size, shutil.disk_usage(dest.parent).free) from None
    on_verify()
    git_oid = meta.etag if not expected and meta.etag and _GIT_OID.fullmatch(meta.etag) else None
    if expected or git_oid:
        actual = sha256_of(part, cancelled) if expected else git_blob_oid(part)
        if actual != (expected or git_oid):
            part.unlink(missing_ok=True)
            raise ChecksumMismatch(file.path, expected or git_oid, actual)
    os.replace(part, dest)
    return dest


def sha256_of(path: Path, cancelled: threading.Event | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
            if cancelled is not None and cancelled.is_set():
                raise Cancelled()
    return h.hexdigest()


def git_blob_oid(path: Path) -> str:
    """git's id of the file as a blob (sha1 of a "blob SIZE\\0" header and the bytes)."""
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()
