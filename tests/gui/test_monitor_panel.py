"""The monitor panel's pull model: samples into the ring, one timer draws them, events as markers."""
from __future__ import annotations

from laya_desktop.gui.panels.monitor_panel import MonitorPanel

GIB = 1 << 30


def sample(seq: int, kv: int) -> dict:
    return {"seq": seq, "t": 1000.0 + seq * 0.25, "ram_total": 16 * GIB, "ram_used": (4 + seq % 3) * GIB,
            "ram_available": 10 * GIB, "swap_total": 2 * GIB, "swap_used": GIB // 2,
            "swap_in_bps": 0, "swap_out_bps": 4096, "cpu_pct": 12.5, "gpus": [],
            "models": {"tiny": {"state": "busy", "pid": 1, "rss": 300 << 20, "vram": 0,
                                "kv_used_tokens": kv, "kv_capacity_tokens": 4096, "kv_bytes": kv * 1024,
                                "active": 1, "queued": 0, "tokens_per_s": 42.0}}}


def test_monitor_draws_curves_figures_and_markers(qtbot):
    panel = MonitorPanel(refresh_ms=20)
    qtbot.addWidget(panel)
    panel.add_samples([sample(i, i * 10) for i in range(1, 2001)])
    panel.add_events([{"seq": 1, "t": 1100.0, "kind": "model_loaded", "model": "tiny", "reason": "",
                       "freed_bytes": 0},
                      {"seq": 2, "t": 1200.0, "kind": "emergency_unload", "model": "tiny",
                       "reason": "ram_high", "freed_bytes": 300 << 20}])
    qtbot.waitUntil(lambda: panel._drawn_version == panel.ring.version, timeout=2000)
    x, y = panel.mem_curves["ram_used"].getData()
    assert len(x) == 2000 and 4 <= y.max() <= 6
    kx, ky = panel.kv_curves["tiny"].getData()
    assert ky[-1] == 20000
    assert panel.mem_curves["ram_used"].opts["downsampleMethod"] == "peak"
    assert panel.mem_curves["ram_used"].opts["clipToView"] is True
    assert len(panel.markers) == 4                     # two events, marked on both plots
    assert "RAM" in panel.summary.text() and "Swap" in panel.summary.text()
    assert panel.table.rowCount() == 1
    assert panel.table.item(0, 4).text() == "20000 / 4096"
    assert panel.table.item(0, 8).text() == "42.0"
    version = panel.ring.version
    panel.redraw()                                     # nothing new: nothing redrawn
    assert panel._drawn_version == version
    panel.stop()
