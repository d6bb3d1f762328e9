"""CPU cost of the GUI process with the Monitor shown, and with another tab shown.

The real MonitorPanel sits in a tab widget beside another tab, in a 1200×800 window. It starts
with a full window of synthetic samples (15 minutes at 4 Hz, three models, a few events) and then
gets what the poller would deliver: two samples every 500 ms (4 Hz). For each case the script
measures the process's CPU time over the run (% of one core, psutil) and how late a 20 ms timer
fires (the event loop's stall, p50/p99/max).

    QT_QPA_PLATFORM=offscreen python bench/gui_cost.py [--seconds 30] [--window-min 15] [--json]
    QT_QPA_PLATFORM=offscreen python bench/gui_cost.py --loadtest [--requests 200] [--json]

--loadtest measures the whole app instead (MainWindow, its own engine on a tiny random GGUF): the
event loop's stall and the GUI process's CPU while the Load test panel runs 4 clients, once with
the Load test tab shown (its live curves and the Monitor's second view drawing) and once with the
Monitor shown. Beside each figure: the baseline run's (--baseline, by default the results file
this run replaces) and the ratio.

QT_QPA_PLATFORM defaults to offscreen; under Xvfb use `xvfb-run -a env QT_QPA_PLATFORM=xcb ...`.
With --json: one JSON object on stdout, the table on stderr; bench/results/gui_cost/ either way
(gui_cost_loadtest/ with --loadtest).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QLabel, QTabWidget  # noqa: E402

from laya_desktop.gui.panels.monitor_panel import MonitorPanel  # noqa: E402
from publish import RESULTS, begin, publish  # noqa: E402

GIB, MIB = 1 << 30, 1 << 20
HZ = 4.0
POLL_MS = 500     # the app's EngineState poll interval
MODELS = ("gemma-270m", "smollm2-135m", "tiny")


class Synth:
    """Plausible telemetry: RAM drifting by a few hundred MiB, KV filling and emptying."""

    def __init__(self, start_t: float) -> None:
        self.seq = 0
        self.t = start_t
        self.rng = random.Random(7)

    def next(self) -> dict:
        self.seq += 1
        self.t += 1.0 / HZ
        phase = self.seq / 200.0
        models = {}
        for i, name in enumerate(MODELS):
            kv = int(4096 * (0.5 + 0.5 * math.sin(phase + i)))
            models[name] = {"state": "busy", "pid": 1000 + i, "rss": (400 + 50 * i) * MIB,
                            "private": (150 + 20 * i) * MIB + self.rng.randrange(8 * MIB),
                            "shared": (250 + 30 * i) * MIB, "vram": None, "kv_used_tokens": kv,
                            "kv_capacity_tokens": 8192, "kv_bytes": kv * 18432,
                            "kv_capacity_bytes": 8192 * 18432, "active": kv % 4,
                            "queued": kv % 3, "tokens_per_s": 20 + 10 * math.sin(phase * 3 + i)}
        used = 6 * GIB + int(300 * MIB * math.sin(phase)) + self.rng.randrange(20 * MIB)
        return {"seq": self.seq, "t": self.t, "ram_total": 16 * GIB, "ram_used": used,
                "ram_available": 16 * GIB - used - GIB, "swap_total": 4 * GIB,
                "swap_used": GIB // 4, "swap_in_bps": self.rng.randrange(4096),
                "swap_out_bps": self.rng.randrange(4096), "cpu_pct": 10.0, "gpus": [],
                "models": models}


def run_case(app: QApplication, tabs: QTabWidget, panel: MonitorPanel, synth: Synth, shown: str,
             seconds: float) -> dict:
    tabs.setCurrentIndex(0 if shown == "monitor" else 1)
    for _ in range(20):
        app.processEvents()
    feed = QTimer()
    feed.setInterval(POLL_MS)
    feed.timeout.connect(lambda: panel.add_samples([synth.next() for _ in range(int(HZ * POLL_MS / 1000))]))
    lateness: list[float] = []
    clock = QElapsedTimer()
    probe = QTimer()
    probe.setInterval(20)
    last = [0]

    def tick() -> None:
        now = clock.elapsed()
        lateness.append(max(0, now - last[0] - 20))
        last[0] = now
    probe.timeout.connect(tick)
    drawn_before = panel.ring.version
    proc = psutil.Process()
    cpu0 = sum(proc.cpu_times()[:2])
    wall0 = time.monotonic()
    clock.start()
    feed.start()
    probe.start()
    redraws = [0]
    real_redraw = panel.redraw

    def counting_redraw(force: bool = False) -> bool:
        done = real_redraw(force)
        redraws[0] += bool(done)
        return done
    panel.timer.timeout.disconnect()
    panel.timer.timeout.connect(counting_redraw)
    QTimer.singleShot(int(seconds * 1000), app.quit)
    app.exec()                 # the real event loop: idle time blocks in the OS, as in the app
    feed.stop()
    probe.stop()
    cpu = sum(proc.cpu_times()[:2]) - cpu0
    wall = time.monotonic() - wall0
    panel.timer.timeout.disconnect()
    panel.timer.timeout.connect(panel.redraw)
    late = np.array(lateness[1:] or [0.0])
    rows = panel.ring.window(panel.window_s)
    return {"shown": shown, "seconds": round(wall, 1), "cpu_pct_of_core": round(100 * cpu / wall, 2),
            "redraws": redraws[0], "points_per_curve": rows.stop - rows.start,
            "curves": len(panel.curves), "samples_added": panel.ring.version - drawn_before,
            "stall_ms_p50": float(np.percentile(late, 50)), "stall_ms_p99": float(np.percentile(late, 99)),
            "stall_ms_max": float(late.max())}


def probe_loop(app: QApplication, until) -> dict:
    """Run the event loop until `until` (a signal) fires; how late a 20 ms timer was, and CPU."""
    from PySide6.QtCore import QEventLoop
    lateness: list[float] = []
    clock = QElapsedTimer()
    last = [0]

    def tick() -> None:
        now = clock.elapsed()
        lateness.append(max(0, now - last[0] - 20))
        last[0] = now
    probe = QTimer()
    probe.setInterval(20)
    probe.timeout.connect(tick)
    loop = QEventLoop()
    until.connect(loop.quit)
    proc = psutil.Process()
    cpu0, wall0 = sum(proc.cpu_times()[:2]), time.monotonic()
    clock.start()
    probe.start()
    loop.exec()
    probe.stop()
    wall = time.monotonic() - wall0
    late = np.array(lateness[1:] or [0.0])
    return {"seconds": round(wall, 1), "cpu_pct_of_core": round(100 * (sum(proc.cpu_times()[:2]) - cpu0) / wall, 2),
            "stall_ms_p50": float(np.percentile(late, 50)), "stall_ms_p99": float(np.percentile(late, 99)),
            "stall_ms_max": float(late.max())}


def loadtest_main(args, begun) -> None:
    import tempfile
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gui"))
    from conftest import free_port, gui_config, start_window, write_config  # noqa: E402 - sets XDG dirs
    from gguf_factory import write_tiny_gguf  # noqa: E402

    app = QApplication.instance() or QApplication(sys.argv[:1])
    folder = Path(tempfile.mkdtemp(prefix="laya-gui-cost-"))
    port = free_port()
    path = write_config(folder, gui_config(write_tiny_gguf(folder / "tiny.gguf"), port))
    window = start_window(app, path, port)
    baseline = _baseline_cases(args.baseline)
    cases = []
    try:
        panel = window.panel("loadtest")
        panel.concurrency.setValue(4)
        panel.requests.setValue(args.requests)
        panel.max_tokens.setValue(32)
        for shown in ("loadtest", "monitor"):
            window.tabs.setCurrentWidget(window.panel(shown))
            results = []
            panel.finished.connect(lambda ok, report: results.append((ok, report)))
            QTimer.singleShot(0, panel.start)
            case = probe_loop(app, panel.finished)
            panel.finished.disconnect()
            ok, report = results[-1] if results else (False, None)
            case.update({"shown": shown, "ok": bool(ok), "requests": args.requests, "concurrency": 4})
            cases.append(case)
    finally:
        window.close()
    for c in cases:
        base = baseline.get(c["shown"])
        if base:
            c["baseline"] = {k: base.get(k) for k in ("cpu_pct_of_core", "stall_ms_p99", "stall_ms_max")}
            c["ratio_stall_p99"] = _ratio(c["stall_ms_p99"], base.get("stall_ms_p99"))
    report = {"bench": "gui_cost_loadtest", "platform": os.environ.get("QT_QPA_PLATFORM"),
              "goal_stall_ms_p99": 50.0, "cases": cases, "baseline_file": str(args.baseline),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    lines = [f"GUI event-loop stall during a 4-client load test ({args.requests} requests, tiny GGUF), "
             f"QT_QPA_PLATFORM={report['platform']}; goal p99 <= 50 ms",
             f"{'tab shown':<10} {'ok':>3} {'seconds':>8} {'CPU % core':>10} {'stall p50':>9} {'p99 ms':>7} "
             f"{'max ms':>7} {'base p99':>8} {'ratio':>6}"]
    for c in cases:
        b = c.get("baseline") or {}
        base_p99 = "-" if b.get("stall_ms_p99") is None else f"{b['stall_ms_p99']:.1f}"
        ratio = "-" if c.get("ratio_stall_p99") is None else f"{c['ratio_stall_p99']:.2f}"
        lines.append(f"{c['shown']:<10} {'yes' if c['ok'] else 'no':>3} {c['seconds']:>8.1f} "
                     f"{c['cpu_pct_of_core']:>10.2f} {c['stall_ms_p50']:>9.1f} {c['stall_ms_p99']:>7.1f} "
                     f"{c['stall_ms_max']:>7.1f} {base_p99:>8} {ratio:>6}")
    publish("gui_cost_loadtest", report, "\n".join(lines), args.json, started=begun)


def _baseline_cases(path) -> dict:
    """The baseline run's cases by the tab shown; empty when there is none to compare with."""
    import json
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return {c.get("shown"): c for c in data.get("cases") or [] if isinstance(c, dict)}


def _ratio(now, base):
    return round(now / base, 3) if isinstance(base, (int, float)) and base > 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="per case")
    parser.add_argument("--window-min", type=int, default=15, choices=(1, 5, 15, 60))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--loadtest", action="store_true", help="the whole app during a load test")
    parser.add_argument("--requests", type=int, default=200, help="with --loadtest")
    parser.add_argument("--baseline", default=str(RESULTS / "gui_cost_loadtest" / "latest.json"),
                        help="with --loadtest: a earlier results file to compare with")
    args = parser.parse_args()
    begun = begin()
    if args.loadtest:
        return loadtest_main(args, begun)

    app = QApplication.instance() or QApplication(sys.argv[:1])
    panel = MonitorPanel()
    tabs = QTabWidget()
    tabs.addTab(panel, "Monitor")
    tabs.addTab(QLabel("another tab"), "Other")
    tabs.resize(1200, 800)
    tabs.show()
    n = int(args.window_min * 60 * HZ)
    synth = Synth(time.time() - n / HZ)
    panel.add_samples([synth.next() for _ in range(n)])
    panel.add_events([{"seq": i + 1, "t": synth.t - n / HZ + (i + 1) * n / HZ / 21,
                       "kind": ("model_loaded", "config_applied", "emergency_unload")[i % 3],
                       "model": MODELS[i % 3]} for i in range(20)])
    panel.set_config({"memory": {"reserved_system_gb": 2, "ram_high_pct": 90, "vram_high_pct": 92}})
    panel.set_window(args.window_min * 60)

    cases = [run_case(app, tabs, panel, synth, shown, args.seconds) for shown in ("monitor", "other")]
    panel.stop()
    report = {"bench": "gui_cost", "platform": os.environ.get("QT_QPA_PLATFORM"),
              "window_min": args.window_min, "sample_hz": HZ, "poll_ms": POLL_MS,
              "models": len(MODELS), "goal_cpu_pct": 5.0, "cases": cases,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "processor": platform.processor() or platform.machine()}}
    head = f"{'tab shown':<10} {'CPU % core':>10} {'redraws':>8} {'pts/curve':>9} {'curves':>6} " \
           f"{'stall p50':>9} {'p99 ms':>7} {'max ms':>7}"
    lines = [f"GUI cost, {args.window_min}-min window at {HZ:g} Hz, QT_QPA_PLATFORM={report['platform']}",
             head]
    for c in cases:
        lines.append(f"{c['shown']:<10} {c['cpu_pct_of_core']:>10.2f} {c['redraws']:>8} "
                     f"{c['points_per_curve']:>9} {c['curves']:>6} {c['stall_ms_p50']:>9.1f} "
                     f"{c['stall_ms_p99']:>7.1f} {c['stall_ms_max']:>7.1f}")
    publish("gui_cost", report, "\n".join(lines), args.json, started=begun)


if __name__ == "__main__":
    main()
