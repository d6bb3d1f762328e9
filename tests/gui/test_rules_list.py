"""The plain rules list (no Qt) and its Qt model: moves, events, drag-and-drop data, undo."""
from __future__ import annotations

import subprocess
import sys

import pytest

from laya_desktop.gui.rules_list import RulesList, undo_move, unique_name


def rules(*names):
    return RulesList({"name": n, "target": "m"} for n in names)


@pytest.mark.parametrize("src,dest,expected,landed", [
    (0, 3, ["b", "c", "a"], 2), (2, 0, ["c", "a", "b"], 0), (0, 2, ["b", "a", "c"], 1),
    (1, 0, ["b", "a", "c"], 0)])
def test_move_uses_before_the_move_indices(src, dest, expected, landed):
    lst = rules("a", "b", "c")
    seen = []
    lst.events.moving.connect(lambda **kw: seen.append(("moving", kw)))
    lst.events.moved.connect(lambda **kw: seen.append(("moved", kw["landed"])))
    assert lst.move(src, dest) is True
    assert lst.names() == expected
    assert seen[0] == ("moving", {"index": src, "new_index": dest})
    assert seen[1] == ("moved", landed)
    assert lst.move(*undo_move(src, landed))
    assert lst.names() == ["a", "b", "c"]


def test_move_onto_itself_is_a_no_op():
    lst = rules("a", "b")
    assert lst.move(0, 0) is False and lst.move(0, 1) is False
    assert lst.names() == ["a", "b"]
    with pytest.raises(IndexError):
        lst.move(0, 5)


def test_insert_delete_set_emit_events():
    lst = rules("a")
    log = []
    for name in ("inserted", "removed", "changed"):
        getattr(lst.events, name).connect(lambda name=name, **kw: log.append((name, kw["index"])))
    lst.insert(1, {"name": "b"})
    lst[0] = {"name": "a2"}
    del lst[1]
    assert log == [("inserted", 1), ("changed", 0), ("removed", 1)]
    assert lst.names() == ["a2"]
    assert unique_name("a2", lst.names()) == "a2-2"


def test_rules_list_imports_no_qt():
    code = ("import sys, laya_desktop.gui.rules_list; "
            "bad = [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'shiboken'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the Qt model over it ---------------------------------------------------------------------
def test_model_move_rows_and_drop_mime_data(qtbot):
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtTest import QAbstractItemModelTester

    from laya_desktop.gui.rules_model import MIME_TYPE, RulesModel

    lst = rules("a", "b", "c", "d")
    model = RulesModel(lst)
    QAbstractItemModelTester(model, QAbstractItemModelTester.FailureReportingMode.Fatal)
    assert model.supportedDropActions() == Qt.DropAction.MoveAction
    assert model.mimeTypes() == [MIME_TYPE]

    with qtbot.waitSignal(model.rowsMoved):
        assert model.moveRows(QModelIndex(), 0, 1, QModelIndex(), 4)
    assert lst.names() == ["b", "c", "d", "a"]

    data = model.mimeData([model.index(3)])           # drag "a" ...
    assert data.hasFormat(MIME_TYPE)
    assert model.dropMimeData(data, Qt.DropAction.MoveAction, 1, 0, QModelIndex())  # ... before "c"
    assert lst.names() == ["b", "a", "c", "d"]
    assert model.data(model.index(1)).startswith("2. a")

    data = model.mimeData([model.index(0), model.index(1)])   # two rows to the end
    assert model.dropMimeData(data, Qt.DropAction.MoveAction, -1, -1, QModelIndex())
    assert lst.names() == ["c", "d", "b", "a"]
    assert not model.dropMimeData(data, Qt.DropAction.CopyAction, 0, 0, QModelIndex())


def test_model_marks_warnings(qtbot):
    from PySide6.QtCore import Qt

    from laya_desktop.gui.rules_model import RulesModel, WarningRole

    model = RulesModel(rules("a", "b"))
    model.set_warnings({"b": ["shadowed by 'a'"]})
    assert model.data(model.index(1), WarningRole) == ["shadowed by 'a'"]
    assert "shadowed by 'a'" in model.data(model.index(1))
    assert "shadowed" in model.data(model.index(1), Qt.ItemDataRole.ToolTipRole)
    assert model.data(model.index(0), WarningRole) == []
