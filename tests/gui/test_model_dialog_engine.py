"""Open → OK in the Models dialog against a real engine leaves models.yaml byte for byte as it was,
comments included, for every shipped model and every example of every backend; an anthropic
remote is added and edited; a rename reaches every rule on disk."""
from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
import yaml
from PySide6.QtWidgets import QDialogButtonBox

from conftest import engine_processes, free_port, start_window
from test_model_dialog_roundtrip import uncomment_examples

REPO = Path(__file__).resolve().parents[2]


def admin_headers(port: int) -> dict:
    """What the laya commands send to an engine on this machine: its app token, when it has one."""
    try:
        from laya_desktop.config import app_token
    except ImportError:
        return {}
    token = app_token.read_token(port)
    return {app_token.HEADER: token} if token else {}


def with_port(text: str, port: int) -> str:
    assert "  port: 8555\n" in text
    return text.replace("  port: 8555\n", f"  port: {port}\n", 1)


@pytest.fixture(scope="module")
def setup(qapp, tmp_path_factory):
    port = free_port()
    path = tmp_path_factory.mktemp("dialog-engine") / "models.yaml"
    path.write_text(with_port((REPO / "models.yaml").read_text(), port))
    window = start_window(qapp, path, port)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers=admin_headers(port))
    yield window, http, path, port
    window.close()
    http.close()
    assert engine_processes(path) == []


def press_ok(qtbot, panel, dialog, action: str = "edit") -> None:
    with qtbot.waitSignal(panel.action_done, timeout=15000) as blocker:
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert blocker.args[:2] == [action, True], (blocker.args, dialog.info.text())


def edit(panel, name: str):
    names = [panel.model.name_at(row) for row in range(panel.model.rowCount())]
    panel.table.selectRow(names.index(name))
    return panel.edit_selected()


def open_ok_each_model(qtbot, window, path: Path) -> list[str]:
    panel = window.panel("models")
    before = path.read_bytes()
    names = [m["name"] for m in window.doc.applied["models"]]
    for name in names:
        dialog = edit(panel, name)
        press_ok(qtbot, panel, dialog)
        assert path.read_bytes() == before, name
    return names


def test_open_ok_on_each_shipped_model_keeps_the_file(setup, qtbot):
    window, _http, path, _port = setup
    assert open_ok_each_model(qtbot, window, path) == ["smollm2-135m", "gemma-270m"]


def examples_text(port: int) -> str:
    """The shipped models.yaml with its commented examples of every backend switched on, as a
    user writes them (a rule by its `targets` alone, a semantic condition's defaults left out)."""
    return uncomment_examples(with_port((REPO / "models.yaml").read_text(), port))


def hand_edit(qtbot, window, http, path: Path, text: str) -> None:
    """Write the file as an editor would, wait for the engine to apply it and the window to hold
    it (read here once more, should the window not follow hand edits by itself)."""
    path.write_text(text)
    wanted = [m["name"] for m in yaml.safe_load(text)["models"]]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if [m["name"] for m in http.get("/admin/config").json()["models"]] == wanted:
            break
        time.sleep(0.2)
    window.doc.refresh()
    qtbot.waitUntil(lambda: [m["name"] for m in window.doc.applied["models"]] == wanted,
                    timeout=10000)
    panel = window.panel("models")
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(wanted), timeout=5000)


def test_open_ok_on_each_example_of_every_backend_keeps_the_file(setup, qtbot):
    window, http, path, port = setup
    text = examples_text(port)
    hand_edit(qtbot, window, http, path, text)
    names = open_ok_each_model(qtbot, window, path)
    assert {m["backend"] for m in window.doc.applied["models"]} == {"llama_cpp", "mlx", "openai",
                                                                     "anthropic"}
    assert len(names) == 7 and path.read_text() == text


def test_an_edit_changes_that_field_alone_and_keeps_the_comments(setup, qtbot):
    window, _http, path, _port = setup
    panel = window.panel("models")
    before = path.read_text()
    dialog = edit(panel, "smollm2-135m")
    dialog.n_ctx.setValue(8192)
    press_ok(qtbot, panel, dialog)
    after = path.read_text()
    assert after == before.replace("    n_ctx: 16384           # tokens per sequence",
                                   "    n_ctx: 8192            # tokens per sequence", 1)


def test_add_then_edit_an_anthropic_remote(setup, qtbot):
    window, http, path, _port = setup
    panel = window.panel("models")
    dialog = panel.open_dialog("openai")
    dialog.backend_box.setCurrentIndex(dialog.backend_box.findData("anthropic"))
    dialog.name.setText("claude-2")
    dialog.remote_model.setText("claude-haiku-4-5")
    dialog.key_env.setText("ANTHROPIC_API_KEY")
    press_ok(qtbot, panel, dialog, "add")
    expected = {"name": "claude-2", "backend": "anthropic", "base_url": "https://api.anthropic.com",
                "api_key_env": "ANTHROPIC_API_KEY", "remote_model": "claude-haiku-4-5"}
    on_disk = {m["name"]: m for m in yaml.safe_load(path.read_text())["models"]}
    assert on_disk["claude-2"] == expected
    # the engine's view spells out the defaults the file leaves out (a remote's health checks)
    from dataclasses import asdict
    from laya_desktop.config.schema import HealthConfig
    served = {m["name"]: m for m in http.get("/admin/config").json()["models"]}["claude-2"]
    assert served == {**expected, "health": asdict(HealthConfig())}

    qtbot.waitUntil(lambda: panel.model.rowCount() == 8, timeout=5000)
    before = path.read_bytes()
    dialog = edit(panel, "claude-2")
    assert dialog.remote and dialog.backend_box.currentData() == "anthropic"
    press_ok(qtbot, panel, dialog)
    assert path.read_bytes() == before


def test_a_rename_reaches_every_rule_on_disk(setup, qtbot):
    window, http, path, _port = setup
    panel = window.panel("models")
    dialog = edit(panel, "llama-mlx")
    dialog.name.setText("llama-3b")
    press_ok(qtbot, panel, dialog)
    routes = {r["name"]: r for r in yaml.safe_load(path.read_text())["routes"]}
    assert routes["long-to-cloud"]["fallback"] == ["llama-3b"]
    assert routes["short-chat"]["target"] == "llama-3b"
    assert routes["shared-chat"]["targets"] == ["llama-3b", "qwen-coder"]
    engine_routes = {r["name"]: r for r in http.get("/admin/config").json()["routes"]}
    assert engine_routes["shared-chat"]["targets"] == ["llama-3b", "qwen-coder"]


def test_pin_of_a_remote_is_refused_without_a_request(setup, qtbot):
    window, _http, path, _port = setup
    panel = window.panel("models")
    before = path.read_bytes()
    for name in ("cloud", "claude"):
        with qtbot.waitSignal(panel.action_done, timeout=2000) as blocker:
            panel.toggle_pin(name)
        assert blocker.args[:2] == ["pin", False]
    assert path.read_bytes() == before
