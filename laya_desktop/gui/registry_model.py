"""Table model of the model registry: the applied config's models merged with their live state."""
from __future__ import annotations

from types import MappingProxyType

import time

from PySide6.QtCore import QT_TRANSLATE_NOOP, QAbstractTableModel, QCoreApplication, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from laya_desktop.config.schema import REMOTE_BACKENDS
from laya_desktop.gui.units import fmt_bytes
from laya_desktop.telemetry.model_sample import ModelState

# Column keys, and the header texts once translated (the marks let lupdate find them).
COLUMNS = (QT_TRANSLATE_NOOP("RegistryModel", "Name"), QT_TRANSLATE_NOOP("RegistryModel", "Backend"),
           QT_TRANSLATE_NOOP("RegistryModel", "State"), "RSS", QT_TRANSLATE_NOOP("RegistryModel", "KV used"),
           QT_TRANSLATE_NOOP("RegistryModel", "Prompt cache"),
           QT_TRANSLATE_NOOP("RegistryModel", "Pinned"), QT_TRANSLATE_NOOP("RegistryModel", "Last used"),
           QT_TRANSLATE_NOOP("RegistryModel", "Source"))
STATE_COLORS = MappingProxyType({"ready": "#1f7a1f", "busy": "#1f4f9a", "loading": "#9a6b00",
                                 "error": "#b00020", "stopping": "#9a6b00", "unloaded": "#666666"})
# a remote model's health (GET /admin/models: up, ejected, unknown)
HEALTH_COLORS = MappingProxyType({"up": "#1f7a1f", "ejected": "#b00020", "unknown": "#666666"})


def _tr(text: str) -> str:
    return QCoreApplication.translate("RegistryModel", text)


def state_text(state: str) -> str:
    """An engine state (ready, busy, ...) in the window's language."""
    names = {"ready": QCoreApplication.translate("RegistryModel", "ready"),
             "busy": QCoreApplication.translate("RegistryModel", "busy"),
             "loading": QCoreApplication.translate("RegistryModel", "loading"),
             "error": QCoreApplication.translate("RegistryModel", "error"),
             "stopping": QCoreApplication.translate("RegistryModel", "stopping"),
             "unloaded": QCoreApplication.translate("RegistryModel", "unloaded"),
             "remote": QCoreApplication.translate("RegistryModel", "remote")}
    return names.get(state, state)


def health_text(health: str, last_error: str | None) -> str:
    """A remote model's State cell: up, ejected (with its last error), or unknown."""
    if health == "ejected":
        if last_error:
            return QCoreApplication.translate("RegistryModel", "ejected: {error}").format(
                error=last_error)
        return QCoreApplication.translate("RegistryModel", "ejected")
    names = {"up": QCoreApplication.translate("RegistryModel", "up"),
             "unknown": QCoreApplication.translate("RegistryModel", "unknown")}
    return names.get(health, health)


def fmt_ago(t) -> str:
    if not t:
        return QCoreApplication.translate("RegistryModel", "never")
    try:
        ago = max(0.0, time.time() - float(t))
    except (TypeError, ValueError):
        return str(t)
    if ago < 60:
        return QCoreApplication.translate("RegistryModel", "{n} s ago").format(n=f"{ago:.0f}")
    if ago < 3600:
        return QCoreApplication.translate("RegistryModel", "{n} min ago").format(n=f"{ago / 60:.0f}")
    return QCoreApplication.translate("RegistryModel", "{n} h ago").format(n=f"{ago / 3600:.1f}")


class RegistryModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.configs: list[dict] = []
        self.live: dict[str, dict] = {}

    def set_configs(self, models: list[dict]) -> None:
        self.beginResetModel()
        self.configs = list(models)
        self.endResetModel()

    def set_live(self, rows: list[dict]) -> None:
        self.live = {r.get("name", ""): r for r in rows}
        if self.configs:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.configs) - 1, len(COLUMNS) - 1))

    def name_at(self, row: int) -> str | None:
        return self.configs[row].get("name") if 0 <= row < len(self.configs) else None

    def state_of(self, name: str) -> str:
        return (self.live.get(name) or {}).get("state", "unloaded")

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.configs)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return _tr(COLUMNS[section])
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        cfg = self.configs[index.row()]
        live = self.live.get(cfg.get("name", ""), {})
        col = COLUMNS[index.column()]
        state = live.get("state", "remote" if cfg.get("backend") in REMOTE_BACKENDS else "unloaded")
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(col, cfg, live, state)
        health = live.get("health") if cfg.get("backend") in REMOTE_BACKENDS else None
        if role == Qt.ItemDataRole.ToolTipRole and col == "State" and health and live.get("last_error"):
            return str(live["last_error"])
        if role == Qt.ItemDataRole.ToolTipRole and col == "State" and live.get("error"):
            return str(live["error"])
        if role == Qt.ItemDataRole.ForegroundRole and col == "State":
            if health:
                return QBrush(QColor(HEALTH_COLORS.get(health, "#333333")))
            return QBrush(QColor(STATE_COLORS.get(state, "#333333")))
        return None

    @staticmethod
    def _text(col: str, cfg: dict, live: dict, state: str) -> str:
        if col == "Name":
            return cfg.get("name", "")
        if col == "Backend":
            return cfg.get("backend", "")
        if col == "State":
            if cfg.get("backend") in REMOTE_BACKENDS and live.get("health"):
                return health_text(live["health"], live.get("last_error"))
            if state == ModelState.ERROR and live.get("error"):
                return QCoreApplication.translate("RegistryModel", "error: {error}").format(
                    error=live.get("error"))
            return state_text(state)
        if col == "RSS":
            return fmt_bytes(live.get("rss"))
        if col == "KV used":
            used, cap = live.get("kv_used_tokens"), live.get("kv_capacity_tokens")
            return QCoreApplication.translate("RegistryModel", "{used} / {capacity} tok").format(
                used=used or 0, capacity=cap) if cap else "—"
        if col == "Prompt cache":
            cache = live.get("prompt_cache")
            if not isinstance(cache, dict):
                return "—"
            return QCoreApplication.translate("RegistryModel", "{ram} RAM, {disk} disk").format(
                ram=fmt_bytes(cache.get("ram_bytes") or 0), disk=fmt_bytes(cache.get("disk_bytes") or 0))
        if col == "Pinned":
            pinned = live.get("pinned", cfg.get("keep_in_memory"))
            return "📌 " + QCoreApplication.translate("RegistryModel", "yes") if pinned else ""
        if col == "Last used":
            return fmt_ago(live.get("last_used"))
        if col == "Source":
            if cfg.get("backend") in REMOTE_BACKENDS:
                return f"{cfg.get('base_url', '')} ({cfg.get('remote_model') or cfg.get('name')})"
            return str(cfg.get("path", ""))
        return ""
