"""When a hand edit of models.yaml is whole: the file unchanged for a moment, then read.

An editor that saves in place, or a script that writes a file in several writes, leaves the file
half-written for a while; a half-written YAML can parse as a smaller valid config (the first two
models of three) and applying it would unload a model and cut its streams. So an edit is read
only once its stamp (modification time, size and inode) has held for `settle_s`, and used only
when the stamp is still the same after the read.
"""
from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[int, int, int]

SETTLE_S = 0.5    # longer than the pause between writes of a script or an editor's save


def file_stamp(path: Path | None) -> Stamp | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class EditSettler:
    """Pure policy: given the stamps seen at each poll, says when an edit is ready to read."""

    def __init__(self, settle_s: float = SETTLE_S):
        self.settle_s = settle_s
        self._pending: Stamp | None = None
        self._since = 0.0

    def ready(self, stamp: Stamp | None, applied: Stamp | None, now: float) -> bool:
        if stamp is None or stamp == applied:   # gone (a rename under way) or nothing new
            self._pending = None
            return False
        if stamp != self._pending:              # still changing: the moment starts again
            self._pending, self._since = stamp, now
            return False
        return now - self._since >= self.settle_s
