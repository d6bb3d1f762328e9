"""The downloads list under the Models panel's table: every job of the app's Downloads with its
progress, speed and time left, Cancel, and "Use for rule…" for a finished one. It outlives the Get
models dialog; hidden while there is nothing to show."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import (
    QAbstractItemView, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QMenu, QProgressBar,
    QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from laya_desktop.gui.downloads import Downloads
from laya_desktop.gui.units import fmt_bytes

TABLE_MAX_HEIGHT = 150   # a few rows; the registry above keeps the room on a 768-pixel screen
JOB_ROLE = Qt.ItemDataRole.UserRole
PROGRESS_WIDTH = 160


def state_text(state: str) -> str:
    names = {"queued": QCoreApplication.translate("DownloadsView", "queued"),
             "downloading": QCoreApplication.translate("DownloadsView", "downloading"),
             "verifying": QCoreApplication.translate("DownloadsView", "verifying"),
             "done": QCoreApplication.translate("DownloadsView", "done"),
             "failed": QCoreApplication.translate("DownloadsView", "failed"),
             "cancelled": QCoreApplication.translate("DownloadsView", "cancelled")}
    return names.get(state, state)


def fmt_duration(seconds) -> str:
    if seconds is None:
        return "—"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_text(job) -> str:
    """'120.0 MiB of 400.0 MiB · 5.2 MiB/s · 0:54 left · downloading', or the state (its error)."""
    if job.state in ("downloading", "verifying", "queued"):
        text = QCoreApplication.translate("DownloadsView", "{done} of {total}").format(
            done=fmt_bytes(job.done_bytes), total=fmt_bytes(job.total_bytes))
        if job.state == "downloading":
            text += " · " + QCoreApplication.translate("DownloadsView", "{speed}/s").format(
                speed=fmt_bytes(job.speed_bps))
            text += " · " + QCoreApplication.translate("DownloadsView", "{eta} left").format(
                eta=fmt_duration(job.eta_s))
        return text + " · " + state_text(job.state)
    if job.state == "failed":
        return QCoreApplication.translate("DownloadsView", "failed: {error}").format(
            error=job.error or "?")
    return state_text(job.state)


def permille(job) -> int:
    return int(1000 * job.done_bytes / job.total_bytes) if job.total_bytes else 0


def rule_menu(parent: QWidget, config: Callable[[], dict], pick: Callable[[str], None]) -> QMenu:
    """The rules of the applied config, read each time the menu opens, and the two rules a new
    model is most often put behind when they are not there yet: a tag rule `agents` and the
    catch-all `default`."""
    menu = QMenu(parent)

    def fill() -> None:
        menu.clear()
        names = [r.get("name", "") for r in config().get("routes", [])]
        for name in names:
            menu.addAction(name).triggered.connect(lambda _c=False, n=name: pick(n))
        new = [(name, text) for name, text in (
            ("agents", QCoreApplication.translate(
                "DownloadsView", "New rule 'agents' (requests tagged agents)")),
            ("default", QCoreApplication.translate(
                "DownloadsView", "New rule 'default' (every other request)")))
            if name not in names]
        if names and new:
            menu.addSeparator()
        for name, text in new:
            action = menu.addAction(text)
            action.setData(name)
            action.triggered.connect(lambda _c=False, n=name: pick(n))
    menu.aboutToShow.connect(fill)
    fill()
    return menu


class DownloadsView(QGroupBox):
    COLUMNS = ("Model", "Quantization", "Progress", "Speed", "Time left", "State")

    def __init__(self, downloads: Downloads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(self.tr("Downloads"))
        self.downloads = downloads
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels([self.tr("Model"), self.tr("Quantization"),
                                              self.tr("Progress"), self.tr("Speed"),
                                              self.tr("Time left"), self.tr("State")])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(2, PROGRESS_WIDTH)
        self.table.setMaximumHeight(TABLE_MAX_HEIGHT)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.cancel_btn = QPushButton(self.tr("Cancel download"))
        self.cancel_btn.clicked.connect(self.cancel_selected)
        self.rule_btn = QPushButton(self.tr("Use for rule…"))
        self.rule_btn.setMenu(rule_menu(self, lambda: downloads.doc.applied, self.use_selected_for))
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.pending_text = QLabel("")
        self.pending_text.setWordWrap(True)
        self.resume_btn = QPushButton(self.tr("Resume downloads"))
        self.resume_btn.clicked.connect(self.resume)
        pending = QHBoxLayout()
        pending.addWidget(self.pending_text, 1)
        pending.addWidget(self.resume_btn)
        self.pending_row = QWidget()
        self.pending_row.setLayout(pending)
        self.pending_row.setVisible(False)
        buttons = QHBoxLayout()
        buttons.addWidget(self.cancel_btn)
        buttons.addWidget(self.rule_btn)
        buttons.addWidget(self.message, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.pending_row)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        downloads.changed.connect(self.show_jobs)
        downloads.registered.connect(self._on_registered)
        downloads.register_failed.connect(self._on_register_failed)
        downloads.rule_applied.connect(self._on_rule_applied)
        downloads.start_failed.connect(self.message.setText)
        downloads.unavailable.connect(self._on_unavailable)
        downloads.pending_found.connect(self._on_pending)
        self._update_buttons()
        self.setVisible(False)

    def show_jobs(self, jobs: list) -> None:
        keep = self.selected_job()
        if self.table.rowCount() != len(jobs):
            self.table.setRowCount(len(jobs))
        for row, job in enumerate(jobs):
            name = self.downloads.names.get(job.job_id)
            cells = (name or job.repo_id, job.quant, "",
                     self.tr("{speed}/s").format(speed=fmt_bytes(job.speed_bps))
                     if job.state == "downloading" else "",
                     fmt_duration(job.eta_s) if job.state == "downloading" else "",
                     self._state_cell(job, name))
            for col, text in enumerate(cells):
                item = self.table.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    self.table.setItem(row, col, item)
                item.setText(text)
                item.setData(JOB_ROLE, job.job_id)
                item.setToolTip(job.error or job.local_path or job.repo_id)
            bar = self.table.cellWidget(row, 2)
            if not isinstance(bar, QProgressBar):
                bar = QProgressBar()
                bar.setRange(0, 1000)
                self.table.setCellWidget(row, 2, bar)
            bar.setValue(1000 if job.state == "done" else permille(job))
            bar.setFormat(f"{permille(job) / 10:.0f} %" if job.state != "done" else "100 %")
            if job.job_id == keep:
                self.table.selectRow(row)
        if jobs:
            self.setVisible(True)
        self._update_buttons()

    def _state_cell(self, job, name: str | None) -> str:
        if job.state == "done" and name:
            return self.tr("added to the models as '{name}'").format(name=name)
        if job.state == "failed":
            return self.tr("failed: {error}").format(error=job.error or "?")
        return state_text(job.state)

    def row_of(self, job_id: str) -> int:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.data(JOB_ROLE) == job_id:
                return row
        return -1

    def selected_job(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        item = self.table.item(rows[0].row(), 0) if rows else None
        return item.data(JOB_ROLE) if item is not None else None

    def _update_buttons(self) -> None:
        job = self.downloads.job(self.selected_job() or "")
        self.cancel_btn.setEnabled(job is not None and not job.finished)
        self.rule_btn.setEnabled(job is not None and job.job_id in self.downloads.names)

    def cancel_selected(self) -> None:
        job_id = self.selected_job()
        if job_id:
            self.downloads.cancel(job_id)

    def use_selected_for(self, rule: str) -> None:
        name = self.downloads.names.get(self.selected_job() or "")
        if name:
            self.downloads.use_for_rule(rule, name)

    def _on_registered(self, job_id: str, name: str) -> None:
        self.message.setText(self.tr("'{name}' is in the models now; \"Use for rule…\" puts it "
                                     "behind a rule.").format(name=name))
        self.show_jobs(self.downloads.jobs)

    def _on_register_failed(self, job_id: str, reason: str) -> None:
        job = self.downloads.job(job_id)
        path = job.local_path if job is not None else ""
        self.message.setText(self.tr("Downloaded to {path}, but the engine refused the new model: "
                                     "{reason}").format(path=path, reason=reason))

    def _on_rule_applied(self, rule: str, model: str, ok: bool, reason: str) -> None:
        if ok:
            self.message.setText(self.tr("Rule '{rule}' now sends its requests to '{model}'.")
                                 .format(rule=rule, model=model))
        else:
            self.message.setText(self.tr("Rule '{rule}' was not changed: {reason}")
                                 .format(rule=rule, reason=reason))

    def _on_pending(self, records: list) -> None:
        names = ", ".join(
            f"{r.get('repo_id', '?')} {(r.get('choice') or {}).get('quant', '')}".strip()
            for r in records)
        self.pending_text.setText(self.tr("Not finished last time: {names}").format(names=names))
        self.pending_row.setVisible(True)
        self.setVisible(True)

    def resume(self) -> None:
        self.pending_row.setVisible(False)
        self.downloads.resume()
        self.setVisible(bool(self.downloads.jobs) or bool(self.message.text()))

    def _on_unavailable(self, reason: str) -> None:
        self.message.setText(self.tr("Downloads are off: {reason}").format(reason=reason))
        self.setVisible(True)
