"""The main window against a real engine process it starts itself, with a tiny GGUF model."""
from __future__ import annotations

import time

import httpx
import pytest
import yaml
from PySide6.QtCore import QModelIndex, Qt

from conftest import (engine_processes, free_port, group_processes, gui_config, start_window,
                      write_config)

# Room for a reply of tens of seconds, so a Stop that does not reach the engine shows as a busy slot.
N_CTX = 32768


@pytest.fixture(scope="module")
def setup(qapp, gui_tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-engine")
    port = free_port()
    config = gui_config(gui_tiny_gguf, port)
    config["models"][0]["n_ctx"] = N_CTX
    path = write_config(folder, config)
    window = start_window(qapp, path, port)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    yield window, http, path
    pgid = window.engine.process.pid
    window.close()
    http.close()
    assert engine_processes(path) == []
    assert group_processes(pgid) == []


def engine_config(http) -> dict:
    return http.get("/admin/config").json()


def test_window_started_its_engine(setup, qtbot):
    window, http, _path = setup
    assert window.engine.owns_child
    assert window.tabs.count() == 6
    assert [window.tabs.tabText(i) for i in range(6)] == ["Models", "Routes", "Monitor", "Requests",
                                                          "Chat", "Load test"]
    assert window.status_address.text().endswith(str(window.engine.port))
    assert "up" in window.status_state.text()
    qtbot.waitUntil(lambda: window.panel("models").model.rowCount() == 1, timeout=5000)
    qtbot.waitUntil(lambda: "models loaded" in window.status_models.text(), timeout=5000)


def test_add_model_goes_to_engine_and_disk(setup, qtbot, gui_tiny_gguf):
    window, http, path = setup
    panel = window.panel("models")
    entry = {"name": "tiny2", "backend": "llama_cpp", "path": str(gui_tiny_gguf), "n_ctx": 512,
             "parallel": 1, "keep_in_memory": False, "idle_ttl_s": 0, "warmup": False}
    with qtbot.waitSignal(panel.action_done, timeout=15000) as blocker:
        panel.add_model(entry)
    assert blocker.args[:2] == ["add", True], blocker.args
    assert "tiny2" in [m["name"] for m in engine_config(http)["models"]]
    assert "tiny2" in [m["name"] for m in yaml.safe_load(path.read_text())["models"]]
    qtbot.waitUntil(lambda: panel.model.rowCount() == 2, timeout=5000)
    assert window.panel("chat").model.findData("tiny2") >= 0

    with qtbot.waitSignal(panel.action_done, timeout=15000) as blocker:   # pin it
        panel.toggle_pin("tiny2")
    assert blocker.args[1] is True
    assert [m for m in engine_config(http)["models"] if m["name"] == "tiny2"][0]["keep_in_memory"]

    with qtbot.waitSignal(panel.action_done, timeout=15000) as blocker:
        panel.remove_model("tiny2")
    assert blocker.args[1] is True
    assert [m["name"] for m in engine_config(http)["models"]] == ["tiny"]


def test_load_and_unload_show_live_state(setup, qtbot):
    window, http, _path = setup
    panel = window.panel("models")
    with qtbot.waitSignal(panel.action_done, timeout=60000) as blocker:
        panel.load("tiny")
    assert blocker.args[1] is True, blocker.args
    qtbot.waitUntil(lambda: panel.model.state_of("tiny") in ("ready", "busy"), timeout=10000)
    with qtbot.waitSignal(panel.action_done, timeout=30000) as blocker:
        panel.unload("tiny")
    assert blocker.args[1] is True
    qtbot.waitUntil(lambda: panel.model.state_of("tiny") == "unloaded", timeout=10000)


def test_reorder_rules_by_drag_and_drop_then_apply(setup, qtbot):
    window, http, path = setup
    panel = window.panel("routes")
    assert panel.rules.names() == ["code", "long", "default"]
    model = panel.model
    data = model.mimeData([model.index(1)])                     # drag "long" above "code"
    assert model.dropMimeData(data, Qt.DropAction.MoveAction, 0, 0, QModelIndex())
    assert model.moveRows(QModelIndex(), 2, 1, QModelIndex(), 1)    # "default" to the middle
    assert panel.rules.names() == ["long", "default", "code"]
    assert panel.dirty
    # the shadowed rule is marked inline, naming the rule that shadows it
    qtbot.waitUntil(lambda: bool(model.warnings.get("code")), timeout=2000)
    assert "default" in " ".join(model.warnings["code"])

    panel.undo_stack.undo()                                     # undo the second move
    assert panel.rules.names() == ["long", "code", "default"]
    with qtbot.waitSignal(panel.applied, timeout=15000) as blocker:
        panel.apply()
    assert blocker.args[0] is True, blocker.args
    assert [r["name"] for r in engine_config(http)["routes"]] == ["long", "code", "default"]
    assert [r["name"] for r in yaml.safe_load(path.read_text())["routes"]] == ["long", "code", "default"]
    assert not panel.dirty


def test_delete_undo_and_refused_config(setup, qtbot):
    window, http, path = setup
    panel = window.panel("routes")
    panel.revert()                    # from the applied config, whatever the tests before left
    before, routes_before = path.read_text(), engine_config(http)["routes"]
    first = panel.rules.names()[0]
    assert panel.rules.names() == [r["name"] for r in routes_before]
    panel.view.setCurrentIndex(panel.model.index(0))
    panel.delete_rule()
    assert first not in panel.rules.names()
    panel.undo_stack.undo()
    assert panel.rules.names()[0] == first

    rule = dict(panel.rules[0])
    rule["target"] = "no-such-model"
    panel.rules[0] = rule
    with qtbot.waitSignal(panel.applied, timeout=15000) as blocker:
        panel.apply()
    ok, err = blocker.args
    assert ok is False
    assert any("routes[0].target" in e["path"] for e in err.errors)
    assert "routes[0].target" in panel.status.text()
    assert engine_config(http)["routes"] == routes_before      # nothing changed
    assert path.read_text() == before
    panel.revert()
    assert not panel.dirty


def test_try_a_request(setup, qtbot):
    window, http, _path = setup
    panel = window.panel("routes")
    with qtbot.waitSignal(panel.explained, timeout=10000) as blocker:
        panel.explain("please write code", ["code"], None)
    answer = blocker.args[0]
    assert answer["rule"] == "code" and answer["target"] == "tiny"
    text = panel.try_result.toPlainText()
    assert "code" in text and "long" in text      # the earlier rule and why it did not match


def test_streamed_chat_reply(setup, qtbot):
    window, http, _path = setup
    chat = window.panel("chat")
    chat.max_tokens.setValue(16)
    tokens = []
    chat.token_received.connect(tokens.append)
    with qtbot.waitSignal(chat.reply_finished, timeout=60000) as blocker:
        assert chat.send("Hello there")
    result = blocker.args[0]
    assert result["error"] is None, result
    stats = result["stats"]
    assert len(tokens) > 1 and result["text"] == "".join(tokens)
    assert stats.route == "default" and stats.model == "tiny"
    assert stats.ttft_ms is not None and stats.ttft_ms > 0
    assert len(chat.history) == 2 and chat.history[1]["role"] == "assistant"
    assert "rule default" in chat.view.toPlainText() and "TTFT" in chat.view.toPlainText()
    with qtbot.waitSignal(chat.reply_finished, timeout=60000) as blocker:   # second turn
        chat.send("And again")
    assert len(chat.history) == 4
    chat.new_chat()
    assert chat.history == []


def test_stop_mid_stream(setup, qtbot):
    window, http, _path = setup
    chat = window.panel("chat")
    chat.max_tokens.setValue(chat.max_tokens.maximum())      # 32768: tens of seconds unstopped
    seq = http.get("/admin/requests").json()["seq"]
    with qtbot.waitSignal(chat.token_received, timeout=60000):
        chat.send("Tell me a very long story")
    started = time.monotonic()
    with qtbot.waitSignal(chat.reply_finished, timeout=5000) as blocker:
        chat.stop()
    assert time.monotonic() - started < 5
    result = blocker.args[0]
    assert result["stats"].stopped and result["error"] is None
    assert "stopped" in chat.view.toPlainText()

    def idle():
        rows = {m["name"]: m for m in http.get("/admin/models").json()["models"]}
        return rows["tiny"].get("active", 0) == 0
    qtbot.waitUntil(idle, timeout=5000)           # the engine cancelled the sequence
    logged = http.get(f"/admin/requests?since={seq}").json()["requests"]
    assert [r["status"] for r in logged] == [499]  # the client left; the reply did not finish
    assert http.get("/healthz").status_code == 200


def test_monitor_receives_telemetry(setup, qtbot):
    window, http, _path = setup
    if http.get("/admin/telemetry", params={"since": 0}).status_code == 404:
        pytest.skip("the engine has no /admin/telemetry yet")
    monitor = window.panel("monitor")
    qtbot.waitUntil(lambda: len(monitor.ring) >= 2, timeout=10000)
    monitor.redraw(force=True)                    # the tab is hidden: draw once anyway
    assert "RAM" in monitor.summary.text()
    x, y = monitor.mem_curves["ram_used"].xData, monitor.mem_curves["ram_used"].yData
    assert x is not None and len(x) >= 2 and y.max() > 0


def test_load_test_panel_runs_and_fills_table(setup, qtbot):
    window, http, _path = setup
    panel = window.panel("loadtest")
    panel.concurrency.setValue(2)
    panel.requests.setValue(4)
    panel.max_tokens.setValue(4)
    with qtbot.waitSignal(panel.finished, timeout=60000) as blocker:
        assert panel.start()
    ok, report = blocker.args
    assert ok, report
    assert report.summary()["status_counts"] == {"200": 4}
    assert panel.live.points("latency") == 4
    assert panel.results.percentiles.rowCount() == 3 and "4 ok" in panel.results.headline.text()


def test_model_dialog_inspects_gguf_and_tests_remote(setup, qtbot, gui_tiny_gguf):
    from laya_desktop.gui.panels.model_dialog import ModelDialog

    window, http, _path = setup
    dialog = ModelDialog(window.pool, "llama_cpp", taken_names=["tiny"])
    qtbot.addWidget(dialog)
    dialog.name.setText("tiny")
    dialog.path.setText(str(gui_tiny_gguf))
    with qtbot.waitSignal(dialog.inspected, timeout=10000):
        dialog.inspect()
    text = dialog.info.text()
    for word in ("Architecture: llama", "Parameters", "Quantization", "Context length: 2048",
                 "Memory estimate"):
        assert word in text, text
    dialog._accept()
    assert "already exists" in dialog.info.text()
    entry = dialog.entry()
    assert entry["backend"] == "llama_cpp" and entry["path"] == str(gui_tiny_gguf)

    remote = ModelDialog(window.pool, "openai")
    qtbot.addWidget(remote)
    remote.name.setText("loop")
    remote.base_url.setText(window.engine.address + "/v1")   # the engine is OpenAI-compatible
    with qtbot.waitSignal(remote.connection_tested, timeout=10000) as blocker:
        remote.test_connection()
    assert blocker.args[0] is True and "tiny" in blocker.args[1]
    assert remote.entry() == {"name": "loop", "backend": "openai",
                              "base_url": window.engine.address + "/v1"}


def test_restart_engine_from_menu(setup, qtbot):
    window, http, _path = setup
    old_pid = window.engine.process.pid
    states = []
    window.engine.state_changed.connect(states.append)
    window.engine.restart()
    qtbot.waitUntil(lambda: states[-1:] == ["up"], timeout=60000)
    assert states[0] == "starting"
    assert window.engine.process.pid != old_pid
    assert http.get("/healthz").status_code == 200
