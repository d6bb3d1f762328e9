"""The panels follow changes made outside them (a hand edit of models.yaml), in both orders, and
never overwrite one silently: a GUI edit then a hand edit, and a hand edit while GUI edits wait."""
from __future__ import annotations

import time

import yaml

from conftest import free_port, gui_config, start_window, write_config


def _hand_edit(path, change) -> None:
    config = yaml.safe_load(path.read_text())
    change(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def _names(panel) -> list[str]:
    return panel.rules.names()


def test_gui_apply_then_hand_edit_shows_within_about_a_second(qapp, qtbot, gui_tiny_gguf, tmp_path):
    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    try:
        panel = window.panel("routes")
        panel.view.setCurrentIndex(panel.model.index(0))
        panel.add_rule()
        with qtbot.waitSignal(panel.applied, timeout=15000) as blocker:
            panel.apply()
        assert blocker.args[0] is True
        assert "new-rule" in [r["name"] for r in yaml.safe_load(path.read_text())["routes"]]

        saved = time.monotonic()
        _hand_edit(path, lambda c: c["routes"].insert(0, {"name": "by-hand", "target": "tiny"}))
        qtbot.waitUntil(lambda: _names(panel)[:1] == ["by-hand"], timeout=5000)
        took = time.monotonic() - saved
        assert took < 2.0, took        # settle 0.5 s + the engine's and the window's polls
        assert not panel.dirty and panel.outside_bar.isHidden()
        models = window.panel("models")
        _hand_edit(path, lambda c: c["models"].append(dict(c["models"][0], name="tiny-copy")))
        qtbot.waitUntil(lambda: models.model.rowCount() == 2, timeout=5000)
    finally:
        window.close()


def test_hand_edit_while_gui_edits_wait_asks_and_never_overwrites(qapp, qtbot, gui_tiny_gguf,
                                                                 tmp_path):
    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    try:
        panel = window.panel("routes")
        before = _names(panel)
        panel.view.setCurrentIndex(panel.model.index(0))
        panel.add_rule()                                     # unapplied
        assert panel.dirty
        _hand_edit(path, lambda c: c["routes"].insert(0, {"name": "by-hand", "target": "tiny"}))
        qtbot.waitUntil(lambda: not panel.outside_bar.isHidden(), timeout=5000)
        assert _names(panel) == [before[0], "new-rule", *before[1:]]   # the user's edits stay
        assert window.doc.applied["routes"][0]["name"] == "by-hand"

        # Apply without choosing: the engine refuses the stale base, the hand edit stays
        panel.outside_bar.hide()
        with qtbot.waitSignal(panel.applied, timeout=15000) as blocker:
            panel.apply()
        assert blocker.args[0] is False and blocker.args[1].status == 409
        assert "by-hand" in [r["name"] for r in yaml.safe_load(path.read_text())["routes"]]
        qtbot.waitUntil(lambda: not panel.outside_bar.isHidden(), timeout=5000)

        # Keep my edits: now Apply replaces the hand edit, as the user chose
        panel.outside_bar.keep_btn.click()
        with qtbot.waitSignal(panel.applied, timeout=15000) as blocker:
            panel.apply()
        assert blocker.args[0] is True
        on_disk = [r["name"] for r in yaml.safe_load(path.read_text())["routes"]]
        assert "new-rule" in on_disk and "by-hand" not in on_disk

        # Reload: the user's edits go, the outside change shows
        panel.add_rule()
        _hand_edit(path, lambda c: c["routes"].insert(0, {"name": "again", "target": "tiny"}))
        qtbot.waitUntil(lambda: not panel.outside_bar.isHidden(), timeout=5000)
        panel.outside_bar.reload_btn.click()
        assert _names(panel)[0] == "again" and not panel.dirty
    finally:
        window.close()
