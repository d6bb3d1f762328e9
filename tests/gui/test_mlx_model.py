"""Adding an MLX model folder from the Models panel, end to end: the dialog checks and describes
the folder, the panel sends the entry with PUT /admin/config, and the Chat panel talks to it."""
from __future__ import annotations

import httpx
import pytest
import yaml
from PySide6.QtWidgets import QDialogButtonBox

from conftest import engine_processes, free_port, gui_config, start_window, write_config
from installed import requires

pytestmark = requires("mlx_lm")

GGUF_ONLY = {"n_gpu_layers", "n_threads", "kv_cache_type", "cpu_repack", "chat_format"}


@pytest.fixture(scope="module")
def setup(qapp, gui_tiny_gguf, tmp_path_factory):
    from mlx_factory import write_tiny_mlx_model

    mlx = write_tiny_mlx_model(tmp_path_factory.mktemp("mlx") / "Tiny.MLX-4k")
    port = free_port()
    path = write_config(tmp_path_factory.mktemp("gui-mlx"), gui_config(gui_tiny_gguf, port))
    with pytest.MonkeyPatch.context() as env:            # inherited by the engine and its runners
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("TRANSFORMERS_OFFLINE", "1")
        window = start_window(qapp, path, port)
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        yield window, http, path, mlx
        window.close()
        http.close()
    assert engine_processes(path) == []


def ok_button(dialog):
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)


def engine_models(http) -> dict:
    return {m["name"]: m for m in http.get("/admin/config").json()["models"]}


def test_add_mlx_folder_then_chat_with_it(setup, qtbot):
    window, http, path, mlx = setup
    panel = window.panel("models")
    dialog = panel.open_dialog("mlx")
    assert dialog.isVisible() and dialog.isModal()
    with qtbot.waitSignal(dialog.inspected, timeout=15000):
        dialog.use_path(str(mlx))                          # what Browse does with the folder
    assert dialog.name.text() == "tiny.mlx-4k"             # the folder name, dots and all
    text = dialog.info.text()
    for expected in ("Architecture: LlamaForCausalLM", "Parameters: 125.2 K",
                     "Context length: 4096", "Memory estimate:", "KV cache", "per token"):
        assert expected in text, text

    dialog.name.setText("tiny-mlx")
    dialog.n_ctx.setValue(512)
    entry = dialog.entry()
    assert entry["backend"] == "mlx" and entry["path"] == str(mlx) and entry["n_ctx"] == 512
    assert not GGUF_ONLY & set(entry)
    with qtbot.waitSignal(panel.action_done, timeout=20000) as blocker:
        ok_button(dialog).click()
    assert blocker.args[:2] == ["add", True], blocker.args
    applied = engine_models(http)["tiny-mlx"]
    assert applied["backend"] == "mlx" and applied["n_ctx"] == 512 and applied["path"] == str(mlx)
    on_disk = {m["name"]: m for m in yaml.safe_load(path.read_text())["models"]}
    assert on_disk["tiny-mlx"]["backend"] == "mlx" and not GGUF_ONLY & set(on_disk["tiny-mlx"])

    chat = window.panel("chat")
    qtbot.waitUntil(lambda: chat.model.findData("tiny-mlx") >= 0, timeout=5000)
    chat.model.setCurrentIndex(chat.model.findData("tiny-mlx"))
    chat.max_tokens.setValue(8)
    with qtbot.waitSignal(chat.reply_finished, timeout=120000) as blocker:
        assert chat.send("hello")
    result = blocker.args[0]
    assert result["error"] is None, result
    assert result["stats"].model == "tiny-mlx" and result["text"].strip()
    assert result["stats"].completion_tokens == 8
    qtbot.waitUntil(lambda: panel.model.state_of("tiny-mlx") in ("ready", "busy"), timeout=10000)


def test_dialog_refuses_a_taken_name_or_a_folder_that_is_not_mlx(setup, qtbot, tmp_path):
    window, http, path, mlx = setup
    panel = window.panel("models")
    before, names = path.read_text(), set(engine_models(http))
    sent = []
    panel.action_done.connect(lambda *args: sent.append(args))
    dialog = panel.open_dialog("mlx")
    dialog.name.setText("tiny")
    dialog.path.setText(str(mlx))
    ok_button(dialog).click()
    assert "a model named 'tiny' already exists" in dialog.info.text()

    (tmp_path / "config.json").write_text("{}")
    dialog.name.setText("other")
    dialog.path.setText(str(tmp_path))
    with qtbot.waitSignal(dialog.inspect_failed, timeout=10000):
        ok_button(dialog).click()
    assert "no *.safetensors weights" in dialog.info.text()
    qtbot.wait(200)
    assert dialog.isVisible() and sent == []               # still open, nothing sent
    dialog.reject()

    with qtbot.waitSignal(panel.action_done, timeout=2000) as blocker:   # past the dialog: refused too
        panel.add_model({"name": "tiny", "backend": "mlx", "path": str(mlx)})
    assert blocker.args[:2] == ["add", False] and "already exists" in panel.status.text()
    assert set(engine_models(http)) == names and path.read_text() == before
