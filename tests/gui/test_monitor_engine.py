"""The Monitor against a real engine: samples arrive, the guard's lines follow PUT /admin/config,
markers keep coming after 600 events, and an emergency unload forced through the admin API is
marked."""
from __future__ import annotations

import copy
import time

import httpx
import pytest

from conftest import engine_processes, free_port, gui_config, start_window, write_config
from laya_desktop.gui.ring_buffer import GIB


@pytest.fixture(scope="module")
def setup(qapp, gui_tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-monitor")
    port = free_port()
    path = write_config(folder, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    window.tabs.setCurrentWidget(window.panel("monitor"))
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    yield window, http
    window.close()
    http.close()
    assert engine_processes(path) == []


def put_memory(http, **memory) -> None:
    config = http.get("/admin/config").json()
    config = copy.deepcopy(config)
    config.setdefault("memory", {}).update(memory)
    answer = http.put("/admin/config", json=config)
    assert answer.status_code == 200, answer.text


def test_plots_receive_samples(setup, qtbot):
    window, _http = setup
    monitor = window.panel("monitor")
    qtbot.waitUntil(lambda: len(monitor.ring) >= 4 and monitor._drawn_version == monitor.ring.version,
                    timeout=15000)
    x, y = monitor.mem_curves["ram_used"].xData, monitor.mem_curves["ram_used"].yData
    assert len(x) >= 4 and y.max() > 0
    assert abs(x[-1] - time.time()) < 30                  # wall-clock time axis
    assert monitor.gpu_present is False                     # no NVIDIA GPU here: the notice shows
    assert monitor.thresholds["reserved_system_gb"] == 2   # from GET /admin/config


def test_threshold_lines_follow_a_config_change(setup, qtbot):
    window, http = setup
    monitor = window.panel("monitor")
    put_memory(http, reserved_system_gb=1.5, ram_high_pct=85, vram_high_pct=70)
    qtbot.waitUntil(lambda: monitor.thresholds["ram_high_pct"] == 85, timeout=10000)
    qtbot.waitUntil(lambda: monitor.reserved_line.value() == 1.5, timeout=5000)
    total = monitor.ring.latest["ram_total"]
    assert abs(monitor.ram_high_line.value() - total * 0.85 / GIB) < 1e-6
    assert monitor.thresholds["vram_high_pct"] == 70
    assert any(e["kind"] == "config_applied" for e in monitor.ring.events.items)


@pytest.mark.slow
def test_markers_still_appear_after_600_events(setup, qtbot):
    window, http = setup
    monitor = window.panel("monitor")
    config = http.get("/admin/config").json()
    first = http.get("/admin/events", params={"since": 0}).json()["seq"]   # earlier tests' events
    for i in range(600):                                   # each apply is one config_applied event
        config["memory"]["ram_high_pct"] = 80 + (i % 10)
        assert http.put("/admin/config", json=config).status_code == 200
    last = http.get("/admin/events", params={"since": 0}).json()["seq"]
    assert last >= first + 600
    qtbot.waitUntil(lambda: monitor.ring.events.last_seq >= last, timeout=20000)
    qtbot.waitUntil(lambda: bool(monitor.marked_events) and monitor.marked_events[-1]["seq"] >= last,
                    timeout=5000)
    assert len(monitor.marked_events) >= 600
    assert len(monitor.marker_spots.data) == len(monitor.marked_events)


def test_emergency_unload_is_marked(setup, qtbot):
    window, http = setup
    monitor = window.panel("monitor")
    put_memory(http, ram_high_pct=90, guard=True)
    assert http.post("/admin/models/tiny/load").status_code == 200
    put_memory(http, ram_high_pct=1)                       # RAM use is over 1 %: the guard acts

    def marked():
        return any(e["kind"] == "emergency_unload" and e.get("model") == "tiny"
                   for e in monitor.marked_events)
    try:
        qtbot.waitUntil(marked, timeout=20000)
    finally:
        put_memory(http, ram_high_pct=90)
    i = next(i for i, e in enumerate(monitor.marked_events) if e["kind"] == "emergency_unload")
    assert "emergency unload tiny" in monitor.marker_tooltip(i)
