"""Languages: the choice (flag, env, View > Language, system locale), and the window in zh_CN."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QLocale

from laya_desktop.gui import translations
from laya_desktop.gui.main_window import MainWindow

TS = Path(translations.I18N_DIR) / "laya_zh_CN.ts"


@pytest.mark.parametrize("cli, env, saved, system, expected", [
    (None, None, "system", "zh_CN", "zh_CN"),     # the system locale
    (None, None, "system", "de_DE", "en"),        # no translation: English
    (None, None, "system", "zh_TW", "zh_CN"),     # the one Chinese translation
    (None, None, "en", "zh_CN", "en"),            # View > Language beats the system
    (None, "zh_CN.UTF-8", "en", "en_US", "zh_CN"),  # $LAYA_LANG beats the setting
    ("en", "zh_CN", "zh_CN", "zh_CN", "en"),      # --lang beats everything
    ("system", None, "system", "zh-Hans-CN", "zh_CN"),
    ("klingon", None, None, "C", "en"),
])
def test_choose_language(cli, env, saved, system, expected):
    assert translations.choose_language(cli, env, saved, system) == expected


@pytest.fixture
def chinese(qapp, tmp_path):
    """Laya's zh_CN catalogue compiled the way `make translations` does, installed on the app,
    and removed again so that the other tests see English."""
    lrelease = Path(sys.executable).with_name("pyside6-lrelease")
    subprocess.run([str(lrelease), "-silent", str(TS), "-qm", str(tmp_path / "laya_zh_CN.qm")],
                   check=True)
    before = QLocale()
    assert translations.install_translators(qapp, "zh_CN", folder=tmp_path)
    yield
    for translator in qapp._laya_translators:
        qapp.removeTranslator(translator)
    qapp._laya_translators = []
    QLocale.setDefault(before)


def test_window_in_simplified_chinese(chinese, qtbot, tmp_path):
    window = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", 9)
    qtbot.addWidget(window)
    tabs = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert tabs == ["模型", "路由", "监控", "请求", "聊天", "压力测试"]
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus == ["引擎(&E)", "视图(&V)", "帮助(&H)"]
    assert window.status_state.text() == "引擎：未运行"
    buttons = {b.text() for b in window.panel("models").findChildren(type(window.panel("chat").send_btn))}
    assert {"添加 GGUF…", "加载", "卸载"} <= buttons
    assert window.panel("chat").send_btn.text() == "发送"
    about = window.show_about()
    assert "MIT 许可证" in about.text.text()
    window.shutdown(grace_s=1)


def test_language_menu_is_saved_for_the_next_start(qtbot, tmp_path, monkeypatch):
    monkeypatch.delenv(translations.ENV_VAR, raising=False)
    window = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", 9)
    qtbot.addWidget(window)
    assert window.tabs.tabText(0) == "Models"          # no translator installed: English
    chosen = next(a for a in window.language_actions.actions() if a.data() == "zh_CN")
    chosen.trigger()
    assert translations.saved_language() == "zh_CN"
    assert translations.resolve_language() == "zh_CN"
    assert translations.resolve_language("en") == "en"
    next(a for a in window.language_actions.actions() if a.data() == "system").trigger()
    assert translations.saved_language() == "system"
    window.shutdown(grace_s=1)


def test_mlx_folder_reasons_and_warnings_in_simplified_chinese(chinese, tmp_path, gui_tiny_gguf):
    """runners/mlx_folder.py speaks English; the dialog's inspect_mlx shows it in the user's language."""
    from laya_desktop.gui.model_inspect import inspect_mlx
    from laya_desktop.runners.mlx_folder import NotAnMlxModel

    with pytest.raises(NotAnMlxModel) as caught:
        inspect_mlx("  ", 512, 1)
    assert str(caught.value) == "请先选择模型文件夹"
    with pytest.raises(NotAnMlxModel) as caught:
        inspect_mlx(str(gui_tiny_gguf), 512, 1)
    assert str(caught.value) == (f"{gui_tiny_gguf} 是一个文件；MLX 模型是包含 config.json 和 "
                                 "*.safetensors 的文件夹 （.gguf 文件请作为 GGUF 模型添加）")
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    header = b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    info, _ = inspect_mlx(str(folder), 512, 1)
    assert info["warnings"] == ["没有分词器文件（tokenizer.json 或 tokenizer.model）：mlx-lm 可能无法加载"]
