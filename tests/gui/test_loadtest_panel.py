"""The Load test panel in the real window against its own engine (tiny GGUF): a short load test
fills the live curves beside the Monitor's memory view, the results tables and the histogram; a
two-step capacity sweep fills its table, curves and recommendation; the exports write files that
parse."""
from __future__ import annotations

import csv
import json

import httpx
import pytest

from conftest import engine_processes, free_port, gui_config, start_window, write_config


@pytest.fixture(scope="module")
def window(qapp, gui_tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-loadtest")
    port = free_port()
    path = write_config(folder, gui_config(gui_tiny_gguf, port))
    win = start_window(qapp, path, port)
    yield win
    win.close()
    assert engine_processes(path) == []


def test_targets_are_a_list_of_the_config_models(window, qtbot):
    panel = window.panel("loadtest")
    qtbot.waitUntil(lambda: panel.model.count() >= 2, timeout=10000)
    assert [panel.model.itemText(i) for i in range(panel.model.count())] == ["auto", "tiny"]


def test_short_load_test_fills_curves_tables_and_exports(window, qtbot, tmp_path):
    panel = window.panel("loadtest")
    window.tabs.setCurrentWidget(panel)
    panel.concurrency.setValue(2)
    panel.requests.setValue(10)
    panel.max_tokens.setValue(8)
    panel.mix.setCurrentIndex(panel.mix.findData("mixed"))   # chat, code (tagged) and a long prompt
    with qtbot.waitSignal(panel.finished, timeout=90000) as blocker:
        assert panel.start()
    ok, report = blocker.args
    assert ok, report
    summary = report.summary()
    # the long prompt is past the tiny model's 2048-token context: one error, grouped by cause
    assert summary["requests"] == 10 and summary["errors"] == 1
    assert panel.progress.value() == 100
    # live curves: every request a point, and a throughput line
    assert panel.live.points("latency") == 9 and panel.live.points("ttft") == 9
    assert panel.live.points("itl") >= 1 and panel.live.points("tokens") >= 1
    # beside them, the Monitor's RAM and KV plots from the same ring (no second poller)
    assert panel.mirror is not None and panel.mirror.ring is window.panel("monitor").ring
    qtbot.waitUntil(lambda: panel.mirror.redraw(force=True) or panel.mirror.points("ram_used") > 0,
                    timeout=10000)
    # results: percentiles with units, routes per rule and model, the histogram
    table = panel.results.percentiles
    assert table.rowCount() == 3 and table.item(0, 1).text().endswith(" ms")
    routes = {(panel.results.routes.item(r, 1).text(), panel.results.routes.item(r, 2).text())
              for r in range(panel.results.routes.rowCount())}
    # the mix's ten prompts: six chats, three tagged code, one past the `long` rule's 5000 characters
    assert {("default", "6"), ("code", "3"), ("long", "1"), ("tiny", "9"), ("code → tiny", "3")} <= routes, routes
    assert panel.results.bars is not None
    assert sum(panel.results.bars.opts["height"]) == 9
    errors = panel.results.errors
    assert errors.rowCount() == 1 and errors.item(0, 1).text() == "1"
    assert errors.item(0, 0).text().startswith("400: the prompt has N tokens"), errors.item(0, 0).text()

    paths = {k: tmp_path / f"report.{k}" for k in ("json", "csv", "png")}
    for kind, path in paths.items():
        assert panel.export(kind, path), kind
    data = json.loads(paths["json"].read_text())
    assert data["summary"]["requests"] == 10 and len(data["requests"]) == 10
    rows = list(csv.DictReader(paths["csv"].open()))
    assert len(rows) == 10 and sorted(r["status"] for r in rows) == ["200"] * 9 + ["400"]
    assert all(float(r["latency_ms"]) > 0 for r in rows)
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_step_sweep_fills_table_curves_and_recommends(window, qtbot, tmp_path):
    panel = window.panel("loadtest")
    panel.max_tokens.setValue(8)
    panel.mix.setCurrentIndex(panel.mix.findData("short"))
    panel.sweep_max.setValue(2)
    panel.sweep_requests.setValue(4)
    panel.sweep_ttft.setValue(60000)
    with qtbot.waitSignal(panel.sweep_finished, timeout=120000) as blocker:
        assert panel.start_sweep()
    ok, sweep = blocker.args
    assert ok, sweep
    view = panel.sweep_view
    assert [s["concurrency"] for s in sweep["steps"]] == [1, 2]
    assert view.table.rowCount() == 2
    assert all(s["peak_ram_used"] > 0 and s["tokens_per_s"] > 0 for s in sweep["steps"])
    x, y = view.tput_curve.xData, view.tput_curve.yData     # the data, not the log-x view of it
    assert list(x) == [1.0, 2.0] and min(y) > 0
    assert list(view.ttft_curve.xData) == [1.0, 2.0] and len(view.mem_curve.xData) == 2
    assert sweep["recommendation"]["concurrency"] == 2
    # the live curves hold both steps' 8 requests, one after the other on the sweep's clock
    assert panel.live.points("latency") == 8
    by_index = [r.started_s for r in panel.report.results]
    assert by_index == sorted(by_index) and by_index[-1] > by_index[3] >= by_index[0]
    assert "2" in view.recommendation.text()
    path = tmp_path / "sweep.json"
    assert panel.export("json", path)
    assert [s["concurrency"] for s in json.loads(path.read_text())["sweep"]["steps"]] == [1, 2]


def test_bad_jsonl_is_said_and_nothing_starts(window, tmp_path):
    panel = window.panel("loadtest")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\nnot json\n')
    panel.set_jsonl(str(bad))
    assert not panel.start()
    assert "bad.jsonl:2" in panel.status.text() and not panel.running
    panel.mix.setCurrentIndex(0)
