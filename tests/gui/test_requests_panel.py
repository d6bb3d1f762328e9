"""The Requests view against a real engine the window starts: rows for requests that went to two
rules, the filters, the "why" of the selected row, and a selection that survives refreshes."""
from __future__ import annotations

import httpx
import pytest

from conftest import free_port, gui_config, start_window, write_config
from laya_desktop.gui.request_log_model import COLUMNS


@pytest.fixture(scope="module")
def setup(qapp, gui_tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui-requests")
    port = free_port()
    path = write_config(folder, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    yield window, http
    window.close()
    http.close()


def chat(http, text: str, **extra) -> httpx.Response:
    r = http.post("/v1/chat/completions", json={
        "max_tokens": 2, "messages": [{"role": "user", "content": text}], **extra})
    assert r.status_code == 200, r.text
    return r


def cells(panel, row: int) -> dict[str, str]:
    return {COLUMNS[c]: panel.proxy.index(row, c).data() for c in range(len(COLUMNS))}


def test_rows_filters_and_why(setup, qtbot):
    window, http = setup
    panel = window.panel("requests")
    assert window.tabs.tabText(window.tabs.indexOf(panel)) == "Requests"
    chat(http, "def reverse(xs): ...", tags=["code"])
    chat(http, "hello")
    qtbot.waitUntil(lambda: panel.model.rowCount() == 2, timeout=10000)

    newest, oldest = cells(panel, 0), cells(panel, 1)
    assert (newest["Rule"], newest["Model"], newest["Status"], newest["API"]) == (
        "default", "tiny", "200", "chat")
    assert oldest["Rule"] == "code" and oldest["Fallback"] == ""
    assert oldest["Tokens"].endswith("→ 2") and oldest["TTFT"].endswith("ms")
    assert oldest["Duration"].endswith("ms") and oldest["Time"].count(":") == 2
    assert panel.count.text() == "2 of 2 requests"

    panel.set_filter("rule", "code")
    assert [e["rule"] for e in panel.visible_entries()] == ["code"]
    assert panel.count.text() == "1 of 2 requests"
    assert panel.select_latest()
    text = panel.detail.toPlainText()
    assert "Rule code sent it to tiny; the answer was 200." in text
    assert "tag of [code] in request tags [code]" in text
    assert "no earlier rule was passed over" in text
    code_seq = panel.selected_seq

    panel.set_filter("rule", None)
    panel.set_filter("status", "200")
    assert len(panel.visible_entries()) == 2
    assert panel.table.currentIndex().data(0x0100)["seq"] == code_seq  # still the picked row

    panel.select_seq(panel.visible_entries()[0]["seq"])   # the default-rule request
    text = panel.detail.toPlainText()
    assert "Rule default sent it to tiny" in text
    assert "Earlier rules passed over:" in text
    assert "code: no tag of [code] in request tags []" in text
    assert "long: prompt has 5 chars < min 5000" in text
    assert "Candidates, in the order tried: tiny" in text

    panel.set_filter("status", None)
    panel.set_filter("model", "tiny")
    assert len(panel.visible_entries()) == 2


def test_selection_survives_refresh(setup, qtbot):
    window, http = setup
    panel = window.panel("requests")
    for key in ("rule", "model", "status"):
        panel.set_filter(key, None)
    qtbot.waitUntil(lambda: panel.model.rowCount() >= 2, timeout=10000)
    picked = panel.model.entries[-1]["seq"]      # the oldest request
    assert panel.select_seq(picked)
    before = panel.detail.toPlainText()
    total = panel.model.rowCount()
    with qtbot.waitSignal(panel.refreshed, timeout=10000):
        chat(http, "one more", tags=["code"])
    assert panel.model.rowCount() == total + 1
    current = panel.table.currentIndex()
    assert current.data(0x0100)["seq"] == picked
    assert [i.row() for i in panel.table.selectionModel().selectedRows()] == [current.row()]
    assert panel.detail.toPlainText() == before
    assert panel.filters["rule"].findData("code") > 0 and panel.filters["rule"].findData("default") > 0


def test_no_rule_and_bad_request_entries_explain_themselves(setup, qtbot):
    window, http = setup
    panel = window.panel("requests")
    r = http.post("/v1/chat/completions", json={"messages": "not a list"})
    assert r.status_code == 400
    qtbot.waitUntil(lambda: any(e.get("status") == 400 for e in panel.model.entries), timeout=10000)
    panel.set_filter("status", "400")
    assert panel.select_latest()
    assert "No rule routed it; the answer was 400." in panel.detail.toPlainText()
    panel.set_filter("status", None)
