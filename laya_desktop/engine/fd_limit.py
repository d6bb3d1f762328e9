"""File descriptors: raise the soft limit at start, and cap client connections below it.

Desktops start processes with a soft RLIMIT_NOFILE of 1,024 (Linux) or 256 (macOS) and a much
higher hard limit; the soft one may be raised to the hard one without privileges, as Go's runtime
does for every Go server (Ollama among them). Each client connection is one descriptor; the rest of the engine needs some too, so
the cap leaves `reserve(nofile)` for them.
"""
from __future__ import annotations

from laya_desktop.engine.http_server import MAX_CONNECTIONS, MAX_REFUSING
from laya_desktop.engine.remote import MAX_CONNECTIONS as UPSTREAM_FDS   # one per relayed request

ENGINE_FDS = 64       # an engine with a runner holds 17 (libraries, the listener, its loop, log
                      # files, 2 pipes per runner); room for 16 runners, config saves, GGUF reads
MACOS_OPEN_MAX = 10240   # OPEN_MAX: macOS refuses a soft limit above kern.maxfilesperproc


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one (as far as the OS takes it); the soft limit
    now in force, or 0 where there are no rlimits (Windows)."""
    try:
        import resource
    except ImportError:
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = hard == resource.RLIM_INFINITY
    tries = [] if unlimited else [hard]
    if unlimited or hard > MACOS_OPEN_MAX:
        tries.append(MACOS_OPEN_MAX)
    for limit in tries:
        if limit <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            return limit
        except (ValueError, OSError):   # macOS: over kern.maxfilesperproc; try OPEN_MAX
            continue
    return soft


def reserve(nofile: int) -> int:
    return min(nofile // 2, ENGINE_FDS + MAX_REFUSING + UPSTREAM_FDS)


def connection_cap(nofile: int) -> int:
    """How many client connections may be open at once, for a soft limit of `nofile`."""
    if nofile <= 0:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, nofile - reserve(nofile)))
