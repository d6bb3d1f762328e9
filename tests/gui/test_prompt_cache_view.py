"""The prompt cache in the app, with its own engine: the Models panel shows each model's saved
prompt states (RAM and disk) and clears them; the Monitor's KV plot carries their curves."""
from __future__ import annotations

import threading

import httpx
import pytest

from conftest import free_port, gui_config, start_window, write_config
from test_prompt_cache import EOT, SHARED


@pytest.fixture
def window(qapp, gui_tiny_gguf, tmp_path, monkeypatch):
    monkeypatch.setenv("LAYA_PROMPT_CACHE_DIR", str(tmp_path / "prompt-cache"))
    port = free_port()
    win = start_window(qapp, write_config(tmp_path, gui_config(gui_tiny_gguf, port)), port)
    win.url = f"http://127.0.0.1:{port}"
    yield win
    win.close()


def cache_cell(panel, name: str) -> str:
    from laya_desktop.gui.registry_model import COLUMNS
    model = panel.model
    row = next(r for r in range(model.rowCount()) if model.name_at(r) == name)
    return model.data(model.index(row, COLUMNS.index("Prompt cache")))


def test_models_panel_shows_the_cache_and_clears_it(window, qtbot):
    panel = window.panel("models")
    assert cache_cell(panel, "tiny") == "—" or "0 B RAM" in cache_cell(panel, "tiny")

    def read_a_long_prompt():   # off the GUI thread: the test's client, not the app
        body = {"model": "tiny", "prompt": SHARED + " One.", "max_tokens": 4, "temperature": 0,
                "logit_bias": {str(EOT): -100}}
        httpx.post(window.url + "/v1/completions", json=body, timeout=120).raise_for_status()
    client = threading.Thread(target=read_a_long_prompt)
    client.start()
    qtbot.waitUntil(lambda: not client.is_alive(), timeout=120_000)
    # the runner's figures come with the telemetry, the models' rows with the next poll
    qtbot.waitUntil(lambda: "0 B RAM" not in cache_cell(panel, "tiny")
                    and "—" != cache_cell(panel, "tiny"), timeout=20_000)
    assert "RAM" in cache_cell(panel, "tiny") and "disk" in cache_cell(panel, "tiny")

    ring = window.panel("monitor").ring
    qtbot.waitUntil(lambda: "model:tiny:prompt_cache_ram_bytes" in ring.columns, timeout=20_000)
    from laya_desktop.gui.monitor.series import model_series
    labels = [s.label for s in model_series("tiny", 0, lambda t: t) if s.plot == "kv_bytes"]
    assert "tiny prompt cache, RAM" in labels and "tiny prompt cache, disk" in labels

    with qtbot.waitSignal(panel.action_done, timeout=20_000) as done:
        panel.clear_cache("tiny")
    assert done.args[0] == "clear cache" and done.args[1] is True
    assert done.args[2]["runner_cleared"] is True
    assert "done" in panel.status.text()
    qtbot.waitUntil(lambda: cache_cell(panel, "tiny") == "0 B RAM, 0 B disk", timeout=20_000)
