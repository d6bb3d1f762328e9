"""The monitor panel's pull model: samples into numpy rings, one timer draws the window shown,
thresholds from the config, markers that never stop, exports that parse. Synthetic samples."""
from __future__ import annotations

import csv

import numpy as np

from laya_desktop.gui.panels.monitor_panel import MonitorPanel
from laya_desktop.gui.ring_buffer import SampleRing, model_key

GIB = 1 << 30
MIB = 1 << 20


def sample(seq: int, kv: int, gpus: list | None = None) -> dict:
    return {"seq": seq, "t": 1_700_000_000.0 + seq * 0.25, "ram_total": 16 * GIB,
            "ram_used": 4 * GIB + (seq % 3) * 100 * MIB, "ram_available": 10 * GIB,
            "swap_total": 2 * GIB, "swap_used": GIB // 2, "swap_in_bps": 0, "swap_out_bps": 4096,
            "cpu_pct": 12.5, "gpus": gpus or [],
            "models": {"tiny": {"state": "busy", "pid": 1, "rss": 300 * MIB, "private": 200 * MIB,
                                "shared": 100 * MIB, "vram": None, "kv_used_tokens": kv,
                                "kv_capacity_tokens": 40960, "kv_bytes": kv * 1024, "active": 1,
                                "queued": 0, "tokens_per_s": 42.0}}}


def shown_panel(qtbot) -> MonitorPanel:
    panel = MonitorPanel(refresh_ms=20)
    qtbot.addWidget(panel)
    panel.resize(1100, 800)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_ring_keeps_the_newest_rows_contiguous():
    ring = SampleRing(capacity=8)
    ring.extend([sample(i, i) for i in range(1, 12)])
    rows = ring.window()
    assert len(ring) == 8
    assert list(ring.column(model_key("tiny", "kv_used_tokens"), rows)) == list(range(4, 12))
    assert list(ring.window(0.5).indices(100)) and len(ring.times(ring.window(0.5))) == 3
    ring.extend([sample(5, 5)])                       # seen before: ignored
    assert ring.column("ram_total", ring.window())[-1] == 16 * GIB and ring.last_seq == 11


def test_monitor_draws_curves_figures_and_markers(qtbot):
    panel = shown_panel(qtbot)
    panel.add_samples([sample(i, i * 10) for i in range(1, 2001)])
    panel.add_events([{"seq": 1, "t": 1_700_000_100.0, "kind": "model_loaded", "model": "tiny"},
                      {"seq": 2, "t": 1_700_000_200.0, "kind": "emergency_unload", "model": "tiny",
                       "reason": "ram_high", "freed_bytes": 300 * MIB}])
    qtbot.waitUntil(lambda: panel._drawn_version == panel.ring.version, timeout=2000)
    x, y = panel.mem_curves["ram_used"].xData, panel.mem_curves["ram_used"].yData  # as set, not as drawn
    assert len(x) == 2000 and 3.9 < y.max() < 4.3
    assert x[-1] == 1_700_000_000.0 + 2000 * 0.25      # wall-clock seconds (DateAxisItem)
    ky = panel.curves[model_key("tiny", "kv_used_tokens")].yData
    assert abs(ky[-1] - 20000 * 100 / 40960) < 1e-9     # KV as % of capacity
    assert panel.curves[model_key("tiny", "private")].yData[-1] == 200     # MiB
    curve = panel.mem_curves["ram_used"]
    assert curve.opts["downsampleMethod"] == "peak" and curve.opts["clipToView"] is True
    lo, hi = panel.plot["ram_used"].viewRange()[1]
    assert 3.5 < lo < 4.0 and 4.2 < hi < 4.6            # follows the data, not 0..16 GiB
    assert [e["kind"] for e in panel.marked_events] == ["model_loaded", "emergency_unload"]
    assert "emergency unload tiny" in panel.marker_tooltip(1) and "300.0 MiB" in panel.marker_tooltip(1)
    assert panel.gpu_present is False and panel.vram_notice.scene() is not None
    assert "RAM" in panel.summary.text() and "Swap" in panel.summary.text()
    assert panel.table.rowCount() == 1 and panel.table.item(0, 6).text() == "20000 / 40960"
    assert panel.table.item(0, 10).text() == "42.0"
    assert not panel.redraw()                           # nothing new: nothing redrawn
    panel.stop()


def test_window_pause_and_hidden_tab(qtbot):
    panel = shown_panel(qtbot)
    panel.add_samples([sample(i, i) for i in range(1, 4 * 60 * 20)])
    panel.set_window(60)
    assert len(panel.mem_curves["ram_used"].xData) == 241
    panel.set_paused(True)
    assert panel.pause_button.isChecked()
    panel.add_samples([sample(5000, 1)])
    assert not panel.redraw()
    panel.set_paused(False)
    assert panel.mem_curves["ram_used"].xData[-1] == 1_700_000_000.0 + 5000 * 0.25
    panel.hide()
    panel.add_samples([sample(5001, 1)])
    assert not panel.redraw()                           # hidden: nothing plotted
    panel.stop()


def test_thresholds_follow_the_config(qtbot):
    panel = shown_panel(qtbot)
    gpu = [{"index": 0, "name": "H", "used": 2 * GIB, "total": 10 * GIB, "processes": {}}]
    panel.add_samples([sample(i, 1, gpu) for i in range(1, 50)])
    panel.set_config({"memory": {"reserved_system_gb": 9.5, "ram_high_pct": 30, "vram_high_pct": 50}})
    assert panel.redraw()
    assert panel.reserved_line.isVisible() and panel.reserved_line.value() == 9.5
    assert abs(panel.ram_high_line.value() - 16 * 0.30) < 1e-9
    assert abs(panel.vram_high_line.value() - 5.0) < 1e-9 and panel.gpu_present is True
    lo, hi = panel.plot["ram_available"].viewRange()[1]
    assert lo <= 9.5 and hi >= 10.0                     # the floor is near: in view
    panel.set_config({"memory": {"reserved_system_gb": 3, "ram_high_pct": 80, "vram_high_pct": 90}})
    panel.redraw()
    assert panel.reserved_line.value() == 3 and abs(panel.ram_high_line.value() - 12.8) < 1e-9


def test_markers_never_stop_and_old_ones_scroll_out(qtbot):
    panel = shown_panel(qtbot)
    panel.set_window(3600)
    panel.add_samples([sample(i, 1) for i in range(1, 100)])
    t0 = 1_700_000_000.0
    panel.add_events([{"seq": i, "t": t0 + i * 0.01, "kind": "config_applied"} for i in range(1, 701)])
    panel.redraw()
    assert len(panel.marked_events) == 700 and panel.marked_events[-1]["seq"] == 700
    assert len(panel.marker_spots.data) == 700
    # Two hours later, only what scrolled out of the largest window (60 min) is dropped.
    panel.add_events([{"seq": 701, "t": t0 + 7200, "kind": "model_loaded", "model": "tiny"}])
    assert len(panel.ring.events) == 1 and panel.ring.events.total == 701


def test_exports_parse(qtbot, tmp_path):
    panel = shown_panel(qtbot)
    panel.add_samples([sample(i, i) for i in range(1, 41)])
    png = tmp_path / "m.png"
    assert panel.export_png(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert panel.export_csv(tmp_path / "m.csv") == 40
    rows = list(csv.DictReader(open(tmp_path / "m.csv", encoding="utf-8")))
    assert len(rows) == 40 and int(rows[-1]["ram_total"]) == 16 * GIB
    assert rows[-1]["time_utc"].startswith("2023-11-14T22:")
    assert float(rows[-1][model_key("tiny", "kv_used_tokens")]) == 40
    assert np.isnan(float("nan"))


def test_mlx_memory_is_drawn_when_reported(qtbot):
    panel = shown_panel(qtbot)
    rows = [sample(i, 1) for i in range(1, 20)]
    for s in rows:
        s["models"]["tiny"]["mlx_active_memory"] = 150 * MIB
    panel.add_samples(rows)
    assert panel.redraw()
    curve = panel.curves[model_key("tiny", "mlx_active_memory")]
    assert curve.isVisible() and curve.yData[-1] == 150
    assert not panel.curves[model_key("tiny", "vram")].isVisible()     # None: not drawn
