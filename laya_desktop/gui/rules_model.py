"""A thin QAbstractListModel over a RulesList (napari's QtListModel pattern).

The plain list owns the order; this model only translates its events into Qt's begin/end calls.
Drag and drop: `mimeData` carries the dragged row numbers, `dropMimeData` calls `rules.move()`, and
`moveRows` does the same for QListView's InternalMove path (which preserves the selection).
"""
from __future__ import annotations

import json

from PySide6.QtCore import QAbstractListModel, QByteArray, QCoreApplication, QMimeData, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from laya_desktop.gui.rules_list import RulesList

MIME_TYPE = "application/x-laya-rule-rows"
RuleRole = Qt.ItemDataRole.UserRole + 1
WarningRole = Qt.ItemDataRole.UserRole + 2


def describe_match(match: dict | None) -> str:
    match = match or {}
    parts = []
    for key in ("tags", "keywords", "model", "path"):
        if match.get(key):
            parts.append(f"{key}={','.join(map(str, match[key]))}")
    if match.get("min_prompt_chars") is not None:
        parts.append(f"chars>={match['min_prompt_chars']}")
    if match.get("max_prompt_chars") is not None:
        parts.append(f"chars<={match['max_prompt_chars']}")
    return " ".join(parts) if parts else QCoreApplication.translate("RulesModel", "anything")


class RulesModel(QAbstractListModel):
    def __init__(self, rules: RulesList, parent=None) -> None:
        super().__init__(parent)
        self.rules = rules
        self.warnings: dict[str, list[str]] = {}   # rule name -> lint messages
        ev = rules.events
        ev.inserting.connect(lambda index: self.beginInsertRows(QModelIndex(), index, index))
        ev.inserted.connect(lambda index, value: self.endInsertRows())
        ev.removing.connect(lambda index: self.beginRemoveRows(QModelIndex(), index, index))
        ev.removed.connect(lambda index, value: self.endRemoveRows())
        ev.moving.connect(lambda index, new_index: self.beginMoveRows(
            QModelIndex(), index, index, QModelIndex(), new_index))
        ev.moved.connect(lambda **kw: self.endMoveRows())
        ev.changed.connect(self._on_changed)
        ev.resetting.connect(self.beginResetModel)
        ev.reset.connect(self.endResetModel)

    def _on_changed(self, index: int, value: dict) -> None:
        idx = self.index(index)
        self.dataChanged.emit(idx, idx)

    def set_warnings(self, warnings: dict[str, list[str]]) -> None:
        self.warnings = warnings
        if len(self.rules):
            self.dataChanged.emit(self.index(0), self.index(len(self.rules) - 1))

    # --- reading -------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rules)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rules):
            return None
        rule = self.rules[index.row()]
        name = rule.get("name", "")
        warnings = self.warnings.get(name, [])
        enabled = rule.get("enabled", True)
        if role == Qt.ItemDataRole.DisplayRole:
            text = f"{index.row() + 1}. {name}  →  {_targets_shown(rule)}"
            if rule.get("fallback"):
                text += "  " + self.tr("(then {models})").format(models=", ".join(rule["fallback"]))
            text += f"   [{describe_match(rule.get('match'))}]"
            if not enabled:
                text += "   " + self.tr("(disabled)")
            if warnings:
                text = "⚠ " + text + "   — " + warnings[0]
            return text
        if role == Qt.ItemDataRole.ToolTipRole:
            return "\n".join(warnings) if warnings else describe_match(rule.get("match"))
        if role == Qt.ItemDataRole.ForegroundRole:
            if warnings:
                return QBrush(QColor("#b35c00"))
            if not enabled:
                return QBrush(QColor("#888888"))
        if role == RuleRole:
            return rule
        if role == WarningRole:
            return warnings
        return None

    def flags(self, index: QModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled  # drops between rows
        return (Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                | Qt.ItemFlag.ItemIsDragEnabled)

    # --- drag and drop -------------------------------------------------------------------------
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE]

    def mimeData(self, indexes) -> QMimeData:
        rows = sorted({i.row() for i in indexes if i.isValid()})
        data = QMimeData()
        data.setData(MIME_TYPE, QByteArray(json.dumps(rows).encode()))
        return data

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                     parent: QModelIndex) -> bool:
        if action != Qt.DropAction.MoveAction or data is None or not data.hasFormat(MIME_TYPE):
            return False
        rows = json.loads(bytes(data.data(MIME_TYPE).data()).decode() or "[]")
        if row < 0:
            row = parent.row() if parent.isValid() else len(self.rules)
        return self._move_rows(rows, row)

    def moveRows(self, source_parent: QModelIndex, source_row: int, count: int,
                 dest_parent: QModelIndex, dest_child: int) -> bool:
        if source_parent.isValid() or dest_parent.isValid():
            return False
        return self._move_rows(list(range(source_row, source_row + count)), dest_child)

    def _move_rows(self, rows: list[int], dest: int) -> bool:
        """Move rows (in order) so that they end up contiguous before `dest`."""
        rows = [r for r in rows if 0 <= r < len(self.rules)]
        if not rows or not 0 <= dest <= len(self.rules):
            return False
        moved = False
        # Move each row one at a time; track where `dest` and the remaining rows end up.
        for i, src in enumerate(rows):
            if self.rules.move(src, dest):
                moved = True
            landed = dest - 1 if dest > src else dest
            for j in range(i + 1, len(rows)):
                r = rows[j]
                if src < r <= landed:
                    rows[j] = r - 1
                elif landed <= r < src:
                    rows[j] = r + 1
            dest = landed + 1
        return moved or len(rows) > 0


def _targets_shown(rule: dict) -> str:
    """'a' for one target; 'a | b  least_loaded' for a rule whose strategy shares several."""
    target = rule.get("target", "?")
    named = [t.get("model", "?") if isinstance(t, dict) else str(t) for t in rule.get("targets") or []]
    pool = named if target in named else [target, *named]
    if len(pool) < 2:
        return target
    return " | ".join(pool) + "  " + rule.get("strategy", "first_available")
