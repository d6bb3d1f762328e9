"""The start-up library check (`system_libs.problem_report`), remembered while nothing it reads
changes: its ldd runs cost a third of a second of every launch on 2 busy CPUs.

A check that found nothing missing leaves a stamp in the cache folder: the platform plugin and
display variables, LD_LIBRARY_PATH, the interpreter, the linker's cache (/etc/ld.so.cache, which
apt and ldconfig rewrite whenever libraries come or go) and the size and time of every library
the check reads. A launch with the same stamp skips the check; any difference runs it again. A
check that found something missing is never remembered. Qt-free, like the check.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from laya_desktop.app_files import cache_dir
from laya_desktop.gui import system_libs

STAMP_NAME = "system-libs-ok"
ENV_READ = ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "LD_LIBRARY_PATH")
LINKER_CACHE = Path("/etc/ld.so.cache")


def fingerprint(env) -> str:
    qt = system_libs.qt_dir()
    files = [LINKER_CACHE, *system_libs.llama_libs()]
    if qt is not None:
        files += [qt / "lib" / name for name in system_libs.CORE_LIBS]
        files += [qt / "plugins" / "platforms" / name for name in system_libs.PLUGINS.values()]
    parts = [sys.executable, system_libs.platform_plugin(env)]
    parts += [f"{name}={env.get(name, '')}" for name in ENV_READ]
    for path in files:
        try:
            st = path.stat()
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:absent")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def problem_report(env=None) -> str | None:
    """`system_libs.problem_report(env)`, or None at once when an earlier launch with the same
    fingerprint found nothing missing."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return system_libs.problem_report(env)
    stamp = cache_dir() / STAMP_NAME
    key = fingerprint(env)
    try:
        if stamp.read_text() == key:
            return None
    except OSError:
        pass
    problem = system_libs.problem_report(env)
    if problem is None:
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(key)
        except OSError:
            pass   # no cache folder: the check simply runs every time
    return problem
