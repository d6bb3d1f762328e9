"""How the GUI writes sizes and counts. Qt-free."""
from __future__ import annotations


def fmt_bytes(n) -> str:
    if n is None or n == "":
        return "—"
    if not n:
        return "0 B"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit in ("B", "KiB") else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def fmt_count(n) -> str:
    """A parameter count: 270 M, 1.50 B."""
    if not isinstance(n, (int, float)):
        return "?" if n in (None, "") else str(n)
    if n >= 1e9:
        return f"{n / 1e9:.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:.0f} M" if n >= 1e8 else f"{n / 1e6:.1f} M"
    return f"{n / 1e3:.1f} K" if n >= 1e3 else str(int(n))
