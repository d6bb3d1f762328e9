"""Models panel: the registry with live state; add, edit, remove, load, unload, warm up, pin.

Registry changes are full configs sent with PUT /admin/config (via EngineState); load, unload
and warm up are admin calls, sent on QtNetwork; the table refreshes from EngineState's poll.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableView,
    QVBoxLayout, QWidget,
)

from laya_desktop.admin_api import calls
from laya_desktop.config.schema import REMOTE_BACKENDS
from laya_desktop.gui.downloads import Downloads
from laya_desktop.gui.downloads_view import DownloadsView
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.panels.model_dialog import ModelDialog
from laya_desktop.gui.registry_edits import replace_model
from laya_desktop.gui.registry_model import RegistryModel
from laya_desktop.gui.workers import WorkerPool


class ModelsPanel(QWidget):
    action_done = Signal(str, bool, object)   # action, ok, result or exception

    def __init__(self, pool: WorkerPool, doc: EngineState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool, self.doc = pool, doc
        self.model = RegistryModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.table.doubleClicked.connect(lambda _i: self.edit_selected())

        row1, row2 = QHBoxLayout(), QHBoxLayout()
        for label, slot in ((self.tr("Get models…"), self.open_get_models),
                            (self.tr("Add GGUF…"), lambda: self.open_dialog("llama_cpp")),
                            (self.tr("Add MLX…"), lambda: self.open_dialog("mlx")),
                            (self.tr("Add remote…"), lambda: self.open_dialog("openai")),
                            (self.tr("Edit…"), self.edit_selected),
                            (self.tr("Remove"), self.remove_selected)):
            row1.addWidget(_button(label, slot))
        row1.addStretch(1)
        for label, slot in ((self.tr("Load"), lambda: self._on_selected(self.load)),
                            (self.tr("Unload"), lambda: self._on_selected(self.unload)),
                            (self.tr("Warm up"), lambda: self._on_selected(self.warm_up)),
                            (self.tr("Pin / unpin"), lambda: self._on_selected(self.toggle_pin)),
                            (self.tr("Clear cache"), lambda: self._on_selected(self.clear_cache))):
            row2.addWidget(_button(label, slot))
        row2.addStretch(1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.downloads = Downloads(doc, parent=self)   # outlives the Get models dialog
        self.downloads_view = DownloadsView(self.downloads)
        layout = QVBoxLayout(self)
        layout.addLayout(row1)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.downloads_view)
        layout.addLayout(row2)
        layout.addWidget(self.status)
        doc.applied_changed.connect(lambda cfg: self.model.set_configs(cfg.get("models", [])))

    def set_live(self, rows: list[dict]) -> None:
        self.model.set_live(rows)

    def selected_name(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.name_at(rows[0].row()) if rows else None

    def _on_selected(self, action: Callable[[str], None]) -> None:
        name = self.selected_name()
        if name:
            action(name)
        else:
            self.status.setText(self.tr("select a model first"))

    # --- registry changes (PUT /admin/config) ---------------------------------------------------
    def open_dialog(self, backend: str, existing: dict | None = None) -> ModelDialog:
        """Show the dialog, window-modal without a nested event loop; its OK sends the change."""
        dialog = ModelDialog(self.pool, backend, existing, self.doc.model_names(), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.accepted.connect(lambda: self._dialog_accepted(dialog.entry(), existing))
        dialog.open()
        return dialog

    def open_get_models(self):
        """The model hub browser; its downloads live on in `downloads` when it closes."""
        from laya_desktop.gui.panels.get_models_dialog import GetModelsDialog
        dialog = GetModelsDialog(self.downloads, lambda: self.open_dialog("llama_cpp"), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _dialog_accepted(self, entry: dict, existing: dict | None) -> None:
        if existing:
            self.replace_model(existing["name"], entry)   # the whole entry: the dialog kept the rest
        else:
            self.add_model(entry)

    def edit_selected(self) -> ModelDialog | None:
        name = self.selected_name()
        cfg = next((m for m in self.doc.applied.get("models", []) if m.get("name") == name), None)
        return self.open_dialog(cfg.get("backend", "llama_cpp"), cfg) if cfg else None

    def add_model(self, entry: dict) -> None:
        if entry.get("name") in self.doc.model_names():   # the dialog refuses it first; the config may have changed since
            error = ValueError(self.tr("a model named '{name}' already exists").format(name=entry["name"]))
            self.status.setText(self.tr("add refused, nothing sent: {error}").format(error=error))
            self.action_done.emit("add", False, error)
            return
        config = self.doc.copy()
        config.setdefault("models", []).append(entry)
        self._apply("add", config)

    def replace_model(self, name: str, entry: dict) -> None:
        """Send the config with model `name` replaced by `entry`; a rename takes every rule's
        reference to it along (target, targets, fallback)."""
        self._apply("edit", replace_model(self.doc.copy(), name, entry))

    def remove_selected(self) -> None:
        self._on_selected(self.remove_model)

    def remove_model(self, name: str) -> None:
        config = self.doc.copy()
        config["models"] = [m for m in config.get("models", []) if m.get("name") != name]
        self._apply("remove", config)

    def toggle_pin(self, name: str) -> None:
        config = self.doc.copy()
        for m in config.get("models", []):
            if m.get("name") == name:
                if m.get("backend") in REMOTE_BACKENDS:   # keep_in_memory is refused there
                    text = self.tr("remote models hold no local memory to pin")
                    self.status.setText(text)
                    self.action_done.emit("pin", False, ValueError(text))
                    return
                m["keep_in_memory"] = not m.get("keep_in_memory", False)
        self._apply("pin", config)

    def _action_text(self, action: str) -> str:
        names = {"add": self.tr("add"), "edit": self.tr("edit"), "remove": self.tr("remove"),
                 "pin": self.tr("pin"), "load": self.tr("load"), "unload": self.tr("unload"),
                 "warm up": self.tr("warm up"), "clear cache": self.tr("clear the prompt cache of")}
        return names.get(action, action)

    def _apply(self, action: str, config: dict) -> None:
        what = self._action_text(action)
        self.status.setText(self.tr("{action}: sending the config to the engine…").format(action=what))

        def done(ok: bool, result: object) -> None:
            if ok:
                self.status.setText(self.tr("{action}: applied").format(action=what))
            else:
                describe = getattr(result, "describe", None)
                self.status.setText(self.tr("{action} refused, nothing changed:").format(action=what)
                                    + "\n" + (describe() if describe else str(result)))
            self.action_done.emit(action, ok, result)
        self.doc.apply(config, on_done=done)

    # --- runtime actions -----------------------------------------------------------------------
    def load(self, name: str) -> None:
        self._call("load", lambda ok, bad: self.doc.client.send(calls.load(name), ok, bad), name)

    def unload(self, name: str) -> None:
        self._call("unload", lambda ok, bad: self.doc.client.send(calls.unload(name), ok, bad),
                   name)

    def clear_cache(self, name: str) -> None:
        """Drop the model's saved prompt states (RAM and disk); the next prompt reads in full."""
        self._call("clear cache",
                   lambda ok, bad: self.doc.client.send(calls.clear_prompt_cache(name), ok, bad), name)

    def warm_up(self, name: str) -> None:
        self._call("warm up", lambda ok, bad: self.doc.client.warm_up(name, ok, bad), name)

    def _call(self, action: str, send: Callable, name: str) -> None:
        """`send(ok, bad)` starts the engine's call (QtNetwork, on this thread)."""
        what = self._action_text(action)
        self.status.setText(self.tr("{action} {name}…").format(action=what, name=name))

        def ok(result: object) -> None:
            self.status.setText(self.tr("{action} {name}: done").format(action=what, name=name))
            self.action_done.emit(action, True, result)

        def bad(exc: Exception) -> None:
            self.status.setText(self.tr("{action} {name} failed: {error}").format(
                action=what, name=name, error=exc))
            self.action_done.emit(action, False, exc)
        send(ok, bad)


def _button(label: str, slot) -> QPushButton:
    b = QPushButton(label)
    b.clicked.connect(slot)
    return b
