"""The Monitor names, colours and marks every EventKind, a hung runner's kill included; its
legends list only curves with something to show: no crossed-eye entry for an unloaded model,
no MLX series for a GGUF model."""
from __future__ import annotations

import pytest

from laya_desktop.gui.monitor.legend import listed_labels
from laya_desktop.gui.panels.monitor_panel import (EVENT_COLORS, EVENT_NAMES, UNMARKED, MonitorPanel,
                                                   event_text)
from laya_desktop.gui.ring_buffer import model_key
from laya_desktop.telemetry.events import EventKind

MIB = 1 << 20
T0 = 1_700_000_000.0


def sample(seq: int, models: dict) -> dict:
    return {"seq": seq, "t": T0 + seq * 0.25, "ram_total": 16 << 30, "ram_used": 4 << 30,
            "ram_available": 10 << 30, "swap_total": 0, "swap_used": 0, "swap_in_bps": 0,
            "swap_out_bps": 0, "cpu_pct": 5.0, "gpus": [], "models": models}


def gguf(loaded: bool) -> dict:
    """One llama.cpp model's entry as the engine writes it (ModelSample.to_json): every field,
    None while unloaded, and no MLX figures."""
    return {"state": "ready" if loaded else "unloaded", "pid": 7 if loaded else None,
            "rss": 300 * MIB if loaded else None, "private": 200 * MIB if loaded else None,
            "shared": 100 * MIB if loaded else None, "vram": None,
            "kv_used_tokens": 10 if loaded else None, "kv_capacity_tokens": 4096 if loaded else None,
            "kv_bytes": 10 * 1024 if loaded else None, "kv_capacity_bytes": None, "active": 0,
            "queued": 0, "tokens_per_s": None}


@pytest.fixture
def panel(qtbot):
    p = MonitorPanel(refresh_ms=20)
    qtbot.addWidget(p)
    p.resize(1100, 800)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.stop()


def test_every_event_kind_has_a_name_and_a_colour():
    assert set(EVENT_NAMES) == set(EventKind)
    assert set(EVENT_COLORS) == set(EventKind)
    assert UNMARKED <= set(EventKind)


def test_a_hung_runner_kill_and_a_failed_save_are_marked(panel):
    panel.add_samples([sample(i, {"tiny": gguf(True)}) for i in range(1, 40)])
    events = [{"seq": 1, "t": T0 + 2, "kind": "model_loading", "model": "tiny"},
              {"seq": 2, "t": T0 + 3, "kind": "runner_unresponsive", "model": "tiny",
               "reason": "no answer in 30 s"},
              {"seq": 3, "t": T0 + 4, "kind": "config_save_failed", "reason": "disk full"},
              {"seq": 4, "t": T0 + 5, "kind": "kind_of_a_newer_engine"}]
    panel.add_events(events)
    assert panel.redraw(force=True)
    assert [e["kind"] for e in panel.marked_events] == ["runner_unresponsive", "config_save_failed",
                                                        "kind_of_a_newer_engine"]
    assert panel.marker_tooltip(0).endswith("runner killed, not answering tiny — no answer in 30 s")
    assert "config not saved — disk full" in panel.marker_tooltip(1)
    assert event_text(events[3]) == "kind_of_a_newer_engine"
    brushes = [b.color().name() for b in panel.marker_spots.data["brush"]]
    assert brushes == [EVENT_COLORS[EventKind.RUNNER_UNRESPONSIVE],
                       EVENT_COLORS[EventKind.CONFIG_SAVE_FAILED], "#777777"]


def test_legends_list_only_curves_with_data(panel):
    rows = [sample(i, {"tiny": gguf(True), "idle": gguf(False)}) for i in range(1, 30)]
    panel.add_samples(rows)
    assert panel.redraw(force=True)
    runners = listed_labels(panel.plot["runners"])
    assert runners == ["tiny private", "tiny mapped"]          # nothing of the unloaded model
    assert not any("MLX" in label for plot in panel.plot.values() for label in listed_labels(plot))
    assert model_key("tiny", "mlx_active_memory") not in panel.curves     # a GGUF model: no series
    assert listed_labels(panel.plot["kv_pct"]) == ["tiny"]
    assert not panel.curves[model_key("idle", "private")].isVisible()
    for plot in panel.plot.values():     # every entry listed is drawn: none paints a crossed eye
        for item_sample, _label in plot.legend.items:
            assert item_sample.item.isVisible()

    # The idle model loads: its curves join the legend. An MLX model arrives with its memory.
    mlx = dict(gguf(True), mlx_active_memory=150 * MIB)
    panel.add_samples([sample(i, {"tiny": gguf(True), "idle": gguf(True), "m": mlx})
                       for i in range(30, 40)])
    assert panel.redraw(force=True)
    assert listed_labels(panel.plot["runners"]) == ["tiny private", "tiny mapped", "idle private",
                                                    "idle mapped", "m private", "m mapped",
                                                    "m MLX active"]
    assert model_key("idle", "mlx_active_memory") not in panel.curves

    # An hour on, only "m" reports: the others' curves leave the legend with their data.
    panel.set_window(60)
    panel.add_samples([{**sample(i, {"m": mlx}), "t": T0 + 3600 + i} for i in range(40, 120)])
    assert panel.redraw(force=True)
    assert listed_labels(panel.plot["runners"]) == ["m private", "m mapped", "m MLX active"]


def test_the_mirror_lists_only_curves_with_data(qtbot, panel):
    mirror = panel.second_view(("ram_used", "kv_pct"))
    qtbot.addWidget(mirror)
    panel.add_samples([sample(i, {"tiny": gguf(True), "idle": gguf(False)}) for i in range(1, 30)])
    assert mirror.redraw(force=True)
    assert listed_labels(mirror.plot["kv_pct"]) == ["tiny"]
    assert listed_labels(mirror.plot["ram_used"]) == ["RAM used"]
    mirror.timer.stop()
