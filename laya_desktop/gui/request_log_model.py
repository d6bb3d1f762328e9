"""Table model of the engine's request log (newest first) and the proxy that filters it.

Rows only ever arrive at the top and leave at the bottom, announced with beginInsertRows and
beginRemoveRows, so the view keeps the user's selection (Qt moves persistent indexes) while the
log refreshes.
"""
from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import (QT_TRANSLATE_NOOP, QAbstractTableModel, QCoreApplication, QModelIndex,
                            QSortFilterProxyModel, Qt)
from PySide6.QtGui import QBrush, QColor

COLUMNS = (QT_TRANSLATE_NOOP("RequestLogModel", "Time"),
           QT_TRANSLATE_NOOP("RequestLogModel", "API"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Rule"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Model"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Fallback"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Status"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Tokens"),
           "TTFT",
           QT_TRANSLATE_NOOP("RequestLogModel", "Duration"),
           QT_TRANSLATE_NOOP("RequestLogModel", "Session"))
MAX_ROWS = 5000   # the engine keeps more; a person reads the latest
ENTRY_ROLE = Qt.ItemDataRole.UserRole
FAILED_COLOR = QColor("#b00020")


def _tr(text: str) -> str:
    return QCoreApplication.translate("RequestLogModel", text)


def fmt_ms(ms) -> str:
    if not isinstance(ms, (int, float)):
        return "—"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def fmt_tokens(entry: dict) -> str:
    prompt, completion = entry.get("prompt_tokens"), entry.get("completion_tokens")
    if prompt is None and completion is None:
        return "—"
    cached = entry.get("cached_tokens")
    prompt_text = "—" if prompt is None else str(prompt)
    completion_text = "—" if completion is None else str(completion)
    if cached:
        text = QCoreApplication.translate("RequestLogModel",
                                          "{prompt} ({cached} cached) → {completion}")
        return text.format(prompt=prompt_text, cached=cached, completion=completion_text)
    return f"{prompt_text} → {completion_text}"


def cell(entry: dict, column: int) -> str:
    if column == 0:
        t = entry.get("t")
        return datetime.fromtimestamp(t).strftime("%H:%M:%S") if isinstance(t, (int, float)) else ""
    if column == 1:
        return str(entry.get("api") or "")
    if column == 2:
        return str(entry.get("rule") or "")
    if column == 3:
        return str(entry.get("model") or "")
    if column == 4:
        source = entry.get("fallback_from")
        if not source:
            return ""
        return QCoreApplication.translate("RequestLogModel", "from {model}").format(model=source)
    if column == 5:
        return str(entry.get("status") or "")
    if column == 6:
        return fmt_tokens(entry)
    if column == 7:
        return fmt_ms(entry.get("ttft_ms"))
    if column == 8:
        return fmt_ms(entry.get("duration_ms"))
    if column == 9:
        return fmt_session(entry)
    return ""


def fmt_session(entry: dict) -> str:
    """The session key's short hash, and whether affinity chose the model (the conversation's
    target) or the rule's strategy did (its first request, or its target down or full)."""
    session = entry.get("session")
    if not session:
        return ""
    if entry.get("affinity"):
        return QCoreApplication.translate("RequestLogModel", "{session} (same target)").format(
            session=session)
    return QCoreApplication.translate("RequestLogModel", "{session} (by strategy)").format(
        session=session)


class RequestLogModel(QAbstractTableModel):
    def __init__(self, parent=None, max_rows: int = MAX_ROWS) -> None:
        super().__init__(parent)
        self.entries: list[dict] = []   # newest first
        self.max_rows = max_rows

    # --- changes -------------------------------------------------------------------------------
    def add(self, items: list[dict]) -> None:
        """Entries from `?since=`, oldest first; ones already held (same seq) are skipped."""
        top = self.entries[0].get("seq", 0) if self.entries else 0
        new = [e for e in items if isinstance(e, dict) and e.get("seq", 0) > top]
        if not new:
            return
        new = new[::-1][:self.max_rows]
        self.beginInsertRows(QModelIndex(), 0, len(new) - 1)
        self.entries[:0] = new
        self.endInsertRows()
        if len(self.entries) > self.max_rows:
            self.beginRemoveRows(QModelIndex(), self.max_rows, len(self.entries) - 1)
            del self.entries[self.max_rows:]
            self.endRemoveRows()

    def clear(self) -> None:
        self.beginResetModel()
        self.entries = []
        self.endResetModel()

    def row_of(self, seq: int) -> int:
        for row, entry in enumerate(self.entries):
            if entry.get("seq") == seq:
                return row
        return -1

    def values(self, key: str) -> list[str]:
        """Distinct values of a field, as shown, sorted: what a filter can choose from."""
        return sorted({str(e.get(key)) for e in self.entries if e.get(key) not in (None, "")})

    # --- Qt ------------------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt name
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt name
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return _tr(COLUMNS[section])
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        entry = self.entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return cell(entry, index.column())
        if role == ENTRY_ROLE:
            return entry
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 9 and entry.get("session"):
            return QCoreApplication.translate("RequestLogModel", "session key from: {source}").format(
                source=entry.get("session_from") or "?")
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == 5:
            status = entry.get("status")
            if isinstance(status, int) and status >= 400:
                return QBrush(FAILED_COLOR)
        if role == Qt.ItemDataRole.TextAlignmentRole and 5 <= index.column() <= 8:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class RequestFilter(QSortFilterProxyModel):
    """Shows the rows whose rule, model and status equal the chosen ones (None: any)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.wanted: dict[str, str] = {}

    def set_filter(self, key: str, value: str | None) -> None:
        # Qt 6.10 replaced invalidateFilter() with a begin/end pair; older Qt has only the former
        staged = hasattr(self, "endFilterChange")
        if staged:
            self.beginFilterChange()
        if value is None:
            self.wanted.pop(key, None)
        else:
            self.wanted[key] = value
        if staged:
            self.endFilterChange()
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, row: int, parent) -> bool:  # noqa: N802 - Qt name
        entry = self.sourceModel().entries[row]
        return all(str(entry.get(key)) == value for key, value in self.wanted.items())
