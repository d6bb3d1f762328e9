"""The GUI's admin calls to the engine: QtNetwork (gui/engine_http.py, the request queued from a
worker onto the GUI thread's event loop) against the baseline, a plain httpx.Client in the same
worker (what the GUI used before, less its socket-recording hooks).

A real engine process (one `openai` model, never called) answers GET /admin/models. A worker
thread makes the calls in blocks of BLOCK, alternating the two clients block by block, so a busy
moment of the machine hits both. Per client: the call's latency seen by the worker (p50, p99),
and how late a 10 ms timer on the GUI thread fires while its blocks run (the GUI's stall; QTimer
resolution is 1 ms, and a 2-core machine shared with other work makes single late ticks noisy).

    QT_QPA_PLATFORM=offscreen python bench/gui_engine_http.py [--calls 600] [--json]

With --json: one JSON object on stdout, the table on stderr; bench/results/gui_engine_http.json
either way.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from engine_harness import EngineProcess  # noqa: E402
from laya_desktop.gui.engine_client import EngineClient  # noqa: E402
from publish import publish  # noqa: E402

BLOCK = 50
TICK_MS = 10
CONFIG = {"server": {"host": "127.0.0.1"},
          "models": [{"name": "cloud", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
          "routes": [{"name": "default", "target": "cloud"}]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(calls: int) -> dict:
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        engine = EngineProcess(CONFIG, Path(folder)).start()
        try:
            return measure(app, engine.url, calls)
        finally:
            engine.stop()


def measure(app, url: str, calls: int) -> dict:
    qt = EngineClient(url)
    plain = httpx.Client(base_url=url, timeout=10.0, trust_env=False)
    kinds = {"qtnetwork": lambda: qt.models(),
             "httpx": lambda: plain.get("/admin/models").raise_for_status().json()["models"]}
    latency: dict[str, list[float]] = {k: [] for k in kinds}
    late: dict[str, list[float]] = {k: [] for k in kinds}
    current = {"kind": None}
    done = threading.Event()

    def worker():
        for kind in kinds.values():   # warm both connections
            kind()
        order = list(kinds)
        for block in range(calls // BLOCK):
            kind = order[block % 2]
            current["kind"] = kind
            for _ in range(BLOCK):
                started = time.perf_counter()
                rows = kinds[kind]()
                latency[kind].append((time.perf_counter() - started) * 1000)
                assert rows and rows[0]["name"] == "cloud"
        current["kind"] = None
        done.set()

    clock = QElapsedTimer()
    clock.start()
    last = {"at": clock.elapsed()}

    def tick():
        now = clock.elapsed()
        kind = current["kind"]
        if kind is not None:
            late[kind].append(max(0.0, now - last["at"] - TICK_MS))
        last["at"] = now
        if done.is_set():
            app.quit()
    timer = QTimer()
    timer.setInterval(TICK_MS)
    timer.timeout.connect(tick)
    timer.start()
    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    app.exec()
    thread.join(10)
    timer.stop()
    plain.close()
    qt.close()
    return {k: {"calls": len(latency[k]), "latency_ms_p50": statistics.median(latency[k]),
                "latency_ms_p99": pct(latency[k], 0.99), "gui_ticks": len(late[k]), "gui_late_ms_p99": pct(late[k], 0.99),
                "gui_late_ms_max": max(late[k])} for k in kinds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=600, help="calls per client (a multiple of 100)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    figures = run(args.calls * 2)
    base, new = figures["httpx"], figures["qtnetwork"]
    rows = [f"{'':28} {'httpx (baseline)':>17} {'QtNetwork':>10} {'ratio':>6}"]
    for key, label in (("latency_ms_p50", "call latency p50 (ms)"),
                       ("latency_ms_p99", "call latency p99 (ms)"),
                       ("gui_late_ms_p99", "GUI timer late p99 (ms)"),
                       ("gui_late_ms_max", "GUI timer late max (ms)")):
        ratio = new[key] / base[key] if base[key] else float("nan")
        rows.append(f"{label:28} {base[key]:17.2f} {new[key]:10.2f} {ratio:6.2f}")
    report = {"calls_per_client": new["calls"], "block": BLOCK, "tick_ms": TICK_MS,
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
              "baseline": base, "qtnetwork": new,
              "ratio_latency_p50": new["latency_ms_p50"] / base["latency_ms_p50"]}
    publish("gui_engine_http", report, "\n".join(rows), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
