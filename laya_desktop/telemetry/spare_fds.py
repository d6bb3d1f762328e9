"""Descriptors kept for telemetry, so the memory guard still sees when the process has none left.

A flood of connections can take every descriptor the process may open (accept() takes them as
fast as clients come); psutil then fails on /proc/meminfo with EMFILE and the guard is blind just
when it may matter most. A few descriptors are held open on /dev/null; when a sample fails with
EMFILE they are closed, the sample is taken again (psutil opens and closes its /proc files one
after another, and the lowest free number is reused at once), and they are taken back.
"""
from __future__ import annotations

import contextlib
import errno
import os

SPARE = 4


def out_of_descriptors(exc: OSError) -> bool:
    return exc.errno in (errno.EMFILE, errno.ENFILE)


class SpareFds:
    def __init__(self, count: int = SPARE):
        self.count = count
        self._fds: list[int] = []

    def __len__(self) -> int:
        return len(self._fds)

    def fill(self) -> None:
        """Take back what is missing, as far as descriptors are free."""
        while len(self._fds) < self.count:
            try:
                self._fds.append(os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
            except OSError:
                return

    @contextlib.contextmanager
    def released(self):
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)
        try:
            yield
        finally:
            self.fill()

    def close(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)
