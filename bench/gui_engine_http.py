"""The GUI's admin calls to the engine: QtNetwork (gui/engine_client.py, sent on the GUI thread's
event loop, each call from the last one's answer) against the baseline, a plain httpx.Client in a
worker (what the GUI used before, less its socket-recording hooks).

A real engine process (one `openai` model, never called) answers GET /admin/models. The calls go
in blocks of BLOCK, alternating the two clients block by block, so a busy moment of the machine
hits both. Per client: the call's latency seen by its caller (p50, p99),
and how late a 10 ms timer on the GUI thread fires while its blocks run (the GUI's stall; QTimer
resolution is 1 ms, and a 2-core machine shared with other work makes single late ticks noisy).

    QT_QPA_PLATFORM=offscreen python bench/gui_engine_http.py [--calls 600] [--json]

With --json: one JSON object on stdout, the table on stderr; bench/results/gui_engine_http/
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
from PySide6.QtCore import QElapsedTimer, QObject, QTimer, Signal  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from engine_harness import EngineProcess  # noqa: E402
from laya_desktop.admin_api import calls as admin_calls  # noqa: E402
from laya_desktop.gui.engine_client import EngineClient  # noqa: E402
from publish import begin, publish  # noqa: E402

BLOCK = 50
TICK_MS = 10
CONFIG = {"server": {"host": "127.0.0.1"},
          "models": [{"name": "cloud", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
          "routes": [{"name": "default", "target": "cloud"}]}


class Crossing(QObject):
    to_gui = Signal(object)   # a function to run on the GUI thread, from the httpx worker


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
    latency: dict[str, list[float]] = {"qtnetwork": [], "httpx": []}
    late: dict[str, list[float]] = {k: [] for k in latency}
    blocks = [("qtnetwork", "httpx")[b % 2] for b in range(calls // BLOCK)]
    current = {"kind": None}
    done = threading.Event()
    crossing = Crossing()

    def next_block() -> None:
        if not blocks:
            current["kind"] = None
            done.set()
            return
        current["kind"] = kind = blocks.pop(0)
        if kind == "httpx":
            threading.Thread(target=httpx_block, daemon=True).start()
        else:
            qt_call(BLOCK)

    def qt_call(left: int) -> None:
        """On the GUI thread: the next call is sent from the last one's answer."""
        started = time.perf_counter()

        def answered(rows: list[dict]) -> None:
            latency["qtnetwork"].append((time.perf_counter() - started) * 1000)
            assert rows and rows[0]["name"] == "cloud"
            if left > 1:
                qt_call(left - 1)
            else:
                next_block()
        qt.send(admin_calls.models(), returned=answered, errored=lambda exc: app.exit(1))

    def httpx_block() -> None:
        for _ in range(BLOCK):
            started = time.perf_counter()
            rows = plain.get("/admin/models").raise_for_status().json()["models"]
            latency["httpx"].append((time.perf_counter() - started) * 1000)
            assert rows and rows[0]["name"] == "cloud"
        crossing.to_gui.emit(next_block)

    crossing.to_gui.connect(lambda fn: fn())
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
    plain.get("/admin/models").raise_for_status()     # warm both connections
    qt.send(admin_calls.models(), returned=lambda _rows: next_block())
    app.exec()
    timer.stop()
    plain.close()
    qt.close()
    kinds = latency
    return {k: {"calls": len(latency[k]), "latency_ms_p50": statistics.median(latency[k]),
                "latency_ms_p99": pct(latency[k], 0.99), "gui_ticks": len(late[k]), "gui_late_ms_p99": pct(late[k], 0.99),
                "gui_late_ms_max": max(late[k])} for k in kinds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=600, help="calls per client (a multiple of 100)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    begun = begin()
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
    publish("gui_engine_http", report, "\n".join(rows), args.json, started=begun)
    return 0


if __name__ == "__main__":
    sys.exit(main())
