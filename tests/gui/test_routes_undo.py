"""Undo and redo of every change in the routes panel: add, duplicate, edit, enable/disable, delete.

No engine: the panel edits its own list; the config document only supplies the model names.
"""
from __future__ import annotations

import pytest

from conftest import gui_config
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.panels.routes_panel import RoutesPanel
from laya_desktop.gui.workers import WorkerPool


@pytest.fixture
def panel(qtbot, tmp_path):
    pool = WorkerPool()
    client = EngineClient("http://127.0.0.1:9")   # never called here
    doc = EngineState(client)
    panel = RoutesPanel(pool, doc)
    qtbot.addWidget(panel)
    doc._set_applied(gui_config(tmp_path / "tiny.gguf", 9))
    assert panel.rules.names() == ["code", "long", "default"]
    yield panel
    client.close()
    pool.shutdown(1000)


def select(panel, row):
    panel.view.setCurrentIndex(panel.model.index(row))


def test_add_and_duplicate_are_undone_and_redone(panel):
    select(panel, 0)
    panel.add_rule()
    assert panel.rules.names() == ["code", "new-rule", "long", "default"]
    assert panel.editor.name.text() == "new-rule"
    select(panel, 2)
    panel.duplicate_rule()
    assert panel.rules.names() == ["code", "new-rule", "long", "long-copy", "default"]
    assert panel.rules[3]["match"] == panel.rules[2]["match"]
    assert panel.undo_stack.undoText() == "duplicate rule 'long-copy'"

    panel.undo_stack.undo()
    assert panel.rules.names() == ["code", "new-rule", "long", "default"]
    panel.undo_stack.undo()
    assert panel.rules.names() == ["code", "long", "default"]
    assert not panel.dirty and not panel.undo_stack.canUndo()
    panel.undo_stack.redo()
    panel.undo_stack.redo()
    assert panel.rules.names() == ["code", "new-rule", "long", "long-copy", "default"]
    assert panel.editor.name.text() == "long-copy"        # the redone rule is the one shown


def test_field_edits_and_toggle_are_undone_one_by_one(panel):
    select(panel, 0)
    editor = panel.editor
    editor.name.setText("coding")
    editor.name.editingFinished.emit()
    editor.lists["keywords"].setText("python, rust")
    editor.lists["keywords"].editingFinished.emit()
    panel.toggle_rule()
    assert panel.rules[0]["name"] == "coding"
    assert panel.rules[0]["match"] == {"tags": ["code"], "keywords": ["python", "rust"]}
    assert panel.rules[0]["enabled"] is False
    assert panel.undo_stack.count() == 3
    assert panel.undo_stack.undoText() == "disable rule 'coding'"

    editor.name.editingFinished.emit()                     # nothing changed: nothing recorded
    assert panel.undo_stack.count() == 3

    panel.undo_stack.undo()
    assert panel.rules[0].get("enabled", True) is not False and editor.enabled.isChecked()
    panel.undo_stack.undo()
    assert "keywords" not in panel.rules[0]["match"] and editor.lists["keywords"].text() == ""
    select(panel, 2)                                       # undo shows the rule it changes
    panel.undo_stack.undo()
    assert panel.rules.names() == ["code", "long", "default"]
    assert panel.view.currentIndex().row() == 0 and editor.name.text() == "code"
    assert not panel.dirty

    panel.undo_stack.redo()
    assert panel.rules[0]["name"] == "coding" and editor.name.text() == "coding"


def test_mixed_history_with_delete_and_move(panel):
    from PySide6.QtCore import QModelIndex

    select(panel, 2)
    panel.add_rule()                                       # after "default"
    panel.model.moveRows(QModelIndex(), 3, 1, QModelIndex(), 0)
    select(panel, 1)
    panel.delete_rule()
    assert panel.rules.names() == ["new-rule", "long", "default"]
    for expected in (["new-rule", "code", "long", "default"],
                     ["code", "long", "default", "new-rule"],
                     ["code", "long", "default"]):
        panel.undo_stack.undo()
        assert panel.rules.names() == expected
    while panel.undo_stack.canRedo():
        panel.undo_stack.redo()
    assert panel.rules.names() == ["new-rule", "long", "default"]


def test_apply_or_revert_starts_a_new_history(panel):
    select(panel, 0)
    panel.add_rule()
    assert panel.btn["undo"].isEnabled() and "add rule" in panel.btn["undo"].toolTip()
    panel.revert()
    assert panel.rules.names() == ["code", "long", "default"]
    assert not panel.undo_stack.canUndo() and not panel.btn["undo"].isEnabled()
