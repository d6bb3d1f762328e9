"""Prompt KV states kept beyond the slots: in the runner's RAM and in a folder on disk, each LRU.

An entry is one sequence's whole state, keyed by the tokens it holds: on llama.cpp once its prompt
was read (prompt_cache_state.py), on MLX once it finished (mlx_prompt_state.py). A runner keeps
one cache per model, its folder named after the model, its files checked against the model's
key (prompt_cache_key.py: the model file and every setting the state depends on). A new prompt
restores the entry sharing its longest prefix and drops the rest of it (`llama_memory_seq_rm`,
mlx-lm's `trim_prompt_cache`), so one saved agent prompt serves its next turns and any other
session that starts with the same tools and instructions.

Why whole prompts and not blocks: llama.cpp saves a sequence as a whole; a save every 256 tokens
would copy the sequence again each time (quadratic in the prompt). A prompt's end is where an
agent's next turn forks from, and a shorter shared prefix is served by truncating.

RAM entries are written through to disk on a thread (the checksum and the write are off the
decode loop; only the copy out of the KV cache is on it). An entry that a longer one extends is
dropped, since the longer one serves the same prefixes (not with sliding-window layers, whose
cells near the old end are gone from the longer state). A disk that fails a write (full,
read-only) pauses writing for a while; serving goes on.
"""
from __future__ import annotations

import collections
import hashlib
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from laya_desktop.runners.prompt_cache_file import (SUFFIX, CacheFileError, FileEntry, read_header,
                                                    read_payload, write_entry)

log = logging.getLogger("laya.runner")

MIN_PROMPT_TOKENS = 256     # shorter prompts are read again: the slot already serves a chat
MIN_GAIN_TOKENS = 128       # restore only when it saves reading at least this many tokens
DISK_PAUSE_S = 60.0         # after a failed write (disk full, read-only), before trying again
WRITE_QUEUE = 4             # pending writes; a save beyond them is kept in RAM only
STALE_TMP_S = 600.0


@dataclass
class Match:
    entry_id: str
    n_tokens: int           # tokens of the prompt the restored state serves
    source: str             # "ram" | "disk"


@dataclass
class _Ram:
    tokens: np.ndarray
    pos_min: int
    data: bytearray


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


def _extends(longer: np.ndarray, shorter: np.ndarray) -> bool:
    return shorter.size < longer.size and common_prefix(shorter, longer) == shorter.size


def entry_id(tokens: np.ndarray) -> str:
    return hashlib.blake2b(tokens.astype("<i4").tobytes(), digest_size=16).hexdigest()


class PromptCache:
    """Entries in RAM and on disk for one model; driven from the runner's loop (the writer
    thread only adds files and evicts on disk, under the lock)."""

    def __init__(self, key: dict, folder: Path | None, ram_bytes: int, disk_bytes: int,
                 n_swa: int = 0):
        self.key, self.n_swa = key, n_swa
        self.ram_budget, self.disk_budget = ram_bytes, disk_bytes
        self._ram: collections.OrderedDict[str, _Ram] = collections.OrderedDict()
        self._disk: collections.OrderedDict[str, FileEntry] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.counts = collections.Counter()
        self._paused_until = 0.0
        # created by the first write: a model whose prompts are all short leaves no folder
        self.folder = folder if disk_bytes > 0 else None
        self._writes: queue.Queue | None = None
        if self.folder is not None:
            if self.folder.is_dir():
                self._scan()
            self._writes = queue.Queue(WRITE_QUEUE)
            self._writer = threading.Thread(target=self._write_loop, name="prompt-cache-writer",
                                            daemon=True)
            self._writer.start()

    # --- lookup and restore ----------------------------------------------------------------------

    def lookup(self, prompt: list[int], have: int) -> Match | None:
        """The entry serving the longest prefix of `prompt` (one token is always left to read),
        when it beats the `have` tokens the slot keeps by MIN_GAIN_TOKENS."""
        if len(prompt) - have <= MIN_GAIN_TOKENS or not (self._ram or self._disk):
            return None
        best = self._longest(np.asarray(prompt, dtype=np.int32))
        return best if best is not None and best.n_tokens - have >= MIN_GAIN_TOKENS else None

    def _longest(self, p: np.ndarray) -> Match | None:
        limit = p.size - 1
        best = None
        with self._lock:
            candidates = [(i, e.tokens, e.pos_min, "ram") for i, e in self._ram.items()]
            candidates += [(i, e.tokens, e.pos_min, "disk") for i, e in self._disk.items()
                           if i not in self._ram]
        for eid, tokens, pos_min, source in candidates:
            n = min(common_prefix(p, tokens), limit)
            if self.n_swa and not 0 <= pos_min <= max(0, n - self.n_swa):
                continue   # the window before the fork is gone from this state
            if n > 0 and (best is None or n > best.n_tokens):
                best = Match(eid, n, source)
        return best

    def take(self, match: Match) -> tuple[bytearray, np.ndarray] | None:
        """(state bytes, the tokens the state holds) of a matched entry; a disk entry that
        fails its checks is logged, removed and gives None."""
        ram = self._ram.get(match.entry_id)
        if ram is not None:
            self._ram.move_to_end(match.entry_id)
            self._touch(match.entry_id)
            return ram.data, ram.tokens
        with self._lock:
            entry = self._disk.get(match.entry_id)
        if entry is None:
            return None
        try:
            data = read_payload(entry)
        except CacheFileError as exc:
            self._reject(entry.path, str(exc))
            with self._lock:
                self._disk.pop(match.entry_id, None)
            return None
        self._touch(match.entry_id)
        self._keep_in_ram(match.entry_id, _Ram(entry.tokens, entry.pos_min, data))
        return data, entry.tokens

    def restored(self, match: Match, n_tokens: int, seconds: float) -> None:
        self.counts[f"hits_{match.source}"] += 1
        self.counts["tokens_restored"] += n_tokens
        self.counts["restore_s"] += seconds

    # --- save ------------------------------------------------------------------------------------

    def wants(self, prompt: list[int]) -> bool:
        """Whether a state of this prompt is worth saving: long enough, and serving at least
        MIN_GAIN_TOKENS more of it than an entry already does. A new session that shares an
        agent's tools and instructions and differs in its last message adds no copy of them."""
        if len(prompt) < MIN_PROMPT_TOKENS:
            return False
        best = self._longest(np.asarray(prompt, dtype=np.int32))
        return best is None or len(prompt) - best.n_tokens > MIN_GAIN_TOKENS

    def put(self, prompt: list[int], pos_min: int, data: bytearray, seconds: float) -> None:
        """Keep the state of `prompt` (copied out of the KV cache in `seconds`)."""
        self.counts["save_s"] += seconds
        tokens = np.asarray(prompt, dtype=np.int32)
        eid = entry_id(tokens)
        if not self.n_swa:
            for old in [i for i, e in self._ram.items() if _extends(tokens, e.tokens)]:
                del self._ram[old]
        self.counts["saves"] += 1
        self._keep_in_ram(eid, _Ram(tokens, pos_min, data))
        if self._writes is not None and time.monotonic() >= self._paused_until \
                and len(data) + 4 * tokens.size + 4096 <= self.disk_budget:
            try:
                self._writes.put_nowait((eid, tokens, pos_min, data))
            except queue.Full:
                self.counts["writes_skipped"] += 1

    def _keep_in_ram(self, eid: str, entry: _Ram) -> None:
        self._ram.pop(eid, None)
        if len(entry.data) > self.ram_budget:
            return
        self._ram[eid] = entry
        while self.ram_bytes() > self.ram_budget:
            self._ram.popitem(last=False)
            self.counts["evictions_ram"] += 1

    # --- disk ------------------------------------------------------------------------------------

    def _scan(self) -> None:
        """Index the folder's entries, least recently used first; remove what fails its checks."""
        found = []
        try:
            paths = list(self.folder.iterdir())
        except OSError as exc:
            log.warning("prompt cache: cannot list %s: %s", self.folder, exc)
            return
        for path in paths:
            if path.name.endswith(".tmp"):
                try:
                    if time.time() - path.stat().st_mtime > STALE_TMP_S:
                        path.unlink()
                except OSError:
                    pass
                continue
            if path.suffix != SUFFIX:
                continue
            try:
                entry = read_header(path, self.key)
                found.append((path.stat().st_mtime, path.stem, entry))
            except (CacheFileError, OSError) as exc:
                self._reject(path, str(exc))
        for _, eid, entry in sorted(found, key=lambda f: f[0]):
            self._disk[eid] = entry
        with self._lock:
            self._evict_disk(0)

    def _write_loop(self) -> None:
        while True:
            item = self._writes.get()
            try:
                if item is None:
                    return
                self._write(*item)
            finally:
                self._writes.task_done()

    def _write(self, eid: str, tokens: np.ndarray, pos_min: int, data: bytearray) -> None:
        path = self.folder / f"{eid}{SUFFIX}"
        try:
            with self._lock:
                self._evict_disk(len(data) + 4 * tokens.size + 4096)
            self.folder.mkdir(parents=True, exist_ok=True)
            write_entry(path, self.key, tokens, pos_min, data)
            entry = read_header(path, self.key)
        except (OSError, CacheFileError) as exc:
            self.counts["write_errors"] += 1
            self._paused_until = time.monotonic() + DISK_PAUSE_S
            log.warning("prompt cache: writing %s failed (%s); not writing for %.0f s, "
                        "serving goes on", path.name, exc, DISK_PAUSE_S)
            return
        with self._lock:
            self._disk.pop(eid, None)
            self._disk[eid] = entry
            # files the new one extends go once it is written (it serves what they served)
            old = [i for i, e in self._disk.items() if not self.n_swa and _extends(tokens, e.tokens)]
            for i in old:
                self._disk.pop(i).path.unlink(missing_ok=True)
            self._evict_disk(0, keep=eid)

    def _evict_disk(self, room: int, keep: str | None = None) -> None:
        """Remove the least recently used files until `room` more bytes fit the budget
        (called under the lock)."""
        while self._disk and self.disk_bytes() + room > self.disk_budget:
            eid = next(iter(self._disk))
            if eid == keep and len(self._disk) > 1:
                self._disk.move_to_end(eid)
                continue
            entry = self._disk.pop(eid)
            entry.path.unlink(missing_ok=True)
            self.counts["evictions_disk"] += 1

    def _touch(self, eid: str) -> None:
        with self._lock:
            entry = self._disk.get(eid)
            if entry is not None:
                self._disk.move_to_end(eid)
        if entry is not None:
            try:
                os.utime(entry.path)   # the LRU order the next runner reads from the folder
            except OSError:
                pass

    def _reject(self, path: Path, why: str) -> None:
        self.counts["files_rejected"] += 1
        log.warning("prompt cache: ignoring and removing %s: %s", path.name, why)
        try:
            path.unlink()
        except OSError:
            pass

    def clear(self) -> int:
        """Drop every entry, in RAM and on disk (the user's "clear cache"); returns the bytes
        freed. Writes already queued land first and go with the rest."""
        self.flush(timeout=10.0)
        with self._lock:
            freed = self.ram_bytes() + self.disk_bytes()
            self._ram.clear()
            for entry in self._disk.values():
                entry.path.unlink(missing_ok=True)
            self._disk.clear()
        self.counts["cleared_bytes"] += freed
        return freed

    # --- stats -----------------------------------------------------------------------------------

    def ram_bytes(self) -> int:
        return sum(len(e.data) for e in self._ram.values())

    def disk_bytes(self) -> int:
        return sum(e.file_bytes for e in self._disk.values())

    def flush(self, timeout: float = 30.0) -> None:
        """Wait for pending writes (tests, and close)."""
        if self._writes is None:
            return
        deadline = time.monotonic() + timeout
        while self._writes.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def stats(self) -> dict:
        with self._lock:
            disk_bytes, disk_entries = self.disk_bytes(), len(self._disk)
        c = self.counts
        return {"prompt_cache_hits_ram": c["hits_ram"], "prompt_cache_hits_disk": c["hits_disk"],
                "prompt_cache_tokens_restored": c["tokens_restored"],
                "prompt_cache_saves": c["saves"],
                "prompt_cache_save_s": round(c["save_s"], 4),
                "prompt_cache_restore_s": round(c["restore_s"], 4),
                "prompt_cache_ram_bytes": self.ram_bytes(), "prompt_cache_ram_entries": len(self._ram),
                "prompt_cache_disk_bytes": disk_bytes, "prompt_cache_disk_entries": disk_entries,
                "prompt_cache_evictions_ram": c["evictions_ram"],
                "prompt_cache_evictions_disk": c["evictions_disk"],
                "prompt_cache_write_errors": c["write_errors"],
                "prompt_cache_files_rejected": c["files_rejected"]}

    def close(self) -> None:
        if self._writes is not None:
            self.flush(timeout=2.5)   # the engine kills a runner 3 s after its shutdown
            self._writes.put(None)
            self._writer.join(timeout=5.0)
            self._writes = None
