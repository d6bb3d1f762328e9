"""The Load test panel with a rule spread over two replicas (two runners of the tiny GGUF, in the
real window's own engine): the Live tab shows each replica's share and latency beside the
Monitor's memory curves, the figures agree with the engine's request log, and a run with a
single answering model hides the table."""
from __future__ import annotations

from collections import Counter

import httpx
import pytest

from conftest import engine_processes, free_port, start_window, write_config


@pytest.fixture(scope="module")
def window(qapp, gui_tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-replicas")
    port = free_port()
    models = [{"name": name, "backend": "llama_cpp", "path": str(gui_tiny_gguf), "n_ctx": 512,
               "parallel": 1, "idle_ttl_s": 0} for name in ("tiny-a", "tiny-b")]
    config = {"server": {"host": "127.0.0.1", "port": port}, "models": models,
              "memory": {"sample_hz": 4},
              "routes": [{"name": "one", "match": {"tags": ["one"]}, "target": "tiny-a"},
                         {"name": "spread", "targets": ["tiny-a", "tiny-b"],
                          "strategy": "least_loaded"}]}
    path = write_config(folder, config)
    win = start_window(qapp, path, port)
    win.test_url = f"http://127.0.0.1:{port}"
    yield win
    win.close()
    assert engine_processes(path) == []


def _rows(table) -> dict[str, list[str]]:
    return {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, table.columnCount())]
            for r in range(table.rowCount())}


def test_live_tab_shows_each_replica_beside_the_memory_curves(window, qtbot):
    panel = window.panel("loadtest")
    window.tabs.setCurrentWidget(panel)
    panel.concurrency.setValue(2)
    panel.requests.setValue(10)
    panel.max_tokens.setValue(4)
    panel.mix.setCurrentIndex(panel.mix.findData("short"))
    seq = httpx.get(window.test_url + "/admin/requests", timeout=10).json()["seq"]
    with qtbot.waitSignal(panel.finished, timeout=90000) as blocker:
        assert panel.start()
    ok, report = blocker.args
    assert ok, report
    logged = httpx.get(window.test_url + "/admin/requests", params={"since": seq},
                       timeout=10).json()["requests"]
    served = Counter(e["model"] for e in logged)
    table = panel.replicas
    assert table.isVisible() and set(_rows(table)) == {"tiny-a", "tiny-b"}
    rows = _rows(table)
    for model, (requests, share, p50, p95, ttft, errors) in rows.items():
        assert int(requests) == served[model], (rows, served)
        assert share == f"{100 * served[model] / 10:.0f} %"
        assert p50.endswith(" ms") and p95.endswith(" ms") and ttft.endswith(" ms")
        assert errors == "0"
    # the table and the Monitor's memory view share the Live tab's right-hand column
    assert panel.mirror is not None and panel.replicas.parent() is panel.mirror.parent()
    assert panel.split.isAncestorOf(panel.replicas) and panel.split.isAncestorOf(panel.live)


def test_one_answering_model_hides_the_table(window, qtbot):
    panel = window.panel("loadtest")
    panel.requests.setValue(3)
    panel.tags.setText("one")
    try:
        with qtbot.waitSignal(panel.finished, timeout=90000) as blocker:
            assert panel.start()
    finally:
        panel.tags.setText("")
    assert blocker.args[0], blocker.args[1]
    assert not panel.replicas.isVisible() and list(panel.replicas.figures) == ["tiny-a"]
