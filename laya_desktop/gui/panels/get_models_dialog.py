"""Get models…: search the model hub, see a repository's files by quantization with their size and
Laya's own memory estimate (fits / tight / does not fit on this machine at the context and
parallel the user picks), and download one; the download, its progress and its registration
belong to the app's Downloads, so closing the dialog loses nothing.

Every hub call (search, a repository's files, the fit estimate) runs in a worker; an answer that
a newer question has overtaken is dropped. When the hub cannot be reached the dialog says so and
"Add GGUF…" (a model file already on this machine) is one click away.
"""
from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Callable
from urllib.parse import urlsplit

import shiboken6
from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QDialog, QFrame, QGroupBox, QHBoxLayout, QHeaderView, QLabel,
    QLineEdit, QProgressBar, QPushButton, QScrollArea, QSpinBox, QSplitter, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from laya_desktop.gui.downloads import Downloads
from laya_desktop.gui.downloads_view import permille, progress_text, rule_menu
from laya_desktop.gui.units import fmt_bytes, fmt_count
from laya_desktop.gui.window_geometry import fit_size
from laya_desktop.hub.errors import GatedRepo, HubUnreachable

WANTED_SIZE = QSize(1040, 700)
FIT_DEBOUNCE_MS = 250     # spin box steps come in bursts; estimate once they stop
DEFAULT_N_CTX, DEFAULT_PARALLEL = 4096, 4
FIT_COLOURS = {"fits": "#1f7a1f", "tight": "#b36b00", "does_not_fit": "#b00020"}
ROW_ROLE = Qt.ItemDataRole.UserRole
SEARCH_LIMIT = 30
PROBE_TIMEOUT_S = 3.0
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                   "all_proxy")


def apple_silicon() -> bool:
    return sys.platform == "darwin" and platform.machine() == "arm64"


# The hub calls, run in workers: huggingface_hub is imported there, on first use, not at launch
# and not on the GUI thread.
def search_hub(text: str, mlx: bool) -> list:
    """The search, once a connection to the hub opens. huggingface_hub retries a failed search
    with a backoff of about 20 s that nothing can interrupt: offline, the user would wait that
    long for the message, and a worker would hold the app's exit as long."""
    from laya_desktop.hub.search import search_repos
    probe_hub()
    return search_repos(text, mlx=mlx, limit=SEARCH_LIMIT)


def probe_hub() -> None:
    """HubUnreachable when no TCP connection to the hub opens within PROBE_TIMEOUT_S. Behind a
    proxy a direct connection proves nothing: not tried there."""
    from laya_desktop.hub.client import endpoint
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return
    url = urlsplit(endpoint())
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        socket.create_connection((url.hostname or "", port), timeout=PROBE_TIMEOUT_S).close()
    except (OSError, ValueError) as exc:
        raise HubUnreachable(endpoint(), type(exc).__name__) from None


def read_repo(repo_id: str) -> tuple:
    """The repository's choices, and whether a Hugging Face token is set (a file read)."""
    from laya_desktop.hub.client import has_token
    from laya_desktop.hub.files import repo_choices
    return repo_choices(repo_id), has_token()


def judge(choice, n_ctx: int, parallel: int, reserved_system_gb: float | None):
    """Laya's estimate for one choice; a GGUF's header is read from the hub (once: it is cached)."""
    from laya_desktop.hub.fit import judge_fit
    return judge_fit(choice, n_ctx=n_ctx, parallel=parallel, reserved_system_gb=reserved_system_gb)


class GetModelsDialog(QDialog):
    def __init__(self, downloads: Downloads, add_gguf: Callable[[], object] | None = None,
                 parent: QWidget | None = None, *, mlx_available: bool | None = None) -> None:
        super().__init__(parent)
        self.downloads = downloads
        self.pool = downloads.pool
        self._add_gguf = add_gguf
        self.hits: list = []
        self.repo = None          # the RepoFiles shown
        self.fits: list = []      # a Fit per repo.choices, in order
        self.job_id: str | None = None
        self.has_token = False
        self._seq = {"search": 0, "files": 0, "fit": 0}
        self.setWindowTitle(self.tr("Get models"))

        self.query = QLineEdit()
        self.query.setPlaceholderText(self.tr("Search the model hub, e.g. qwen coder"))
        self.query.returnPressed.connect(self.search)
        self.search_btn = QPushButton(self.tr("Search"))
        self.search_btn.clicked.connect(self.search)
        self.mlx = QCheckBox(self.tr("MLX models (mlx-community)"))
        self.mlx_available = apple_silicon() if mlx_available is None else mlx_available
        self.mlx.setVisible(self.mlx_available)
        self.mlx.toggled.connect(lambda _on: self.search() if self.query.text().strip() else None)
        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.search_btn)
        top.addWidget(self.mlx)

        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setVisible(False)

        self.results = _table([self.tr("Repository"), self.tr("Downloads"), self.tr("Licence"),
                               self.tr("Gated")])
        self.results.itemSelectionChanged.connect(self._repo_selected)

        self.repo_info = QLabel(self.tr("Choose a repository to see its files."))
        self.repo_info.setWordWrap(True)
        self.repo_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.n_ctx = QSpinBox()
        self.n_ctx.setRange(256, 1 << 20)
        self.n_ctx.setSingleStep(1024)
        self.n_ctx.setValue(DEFAULT_N_CTX)
        self.n_ctx.setToolTip(self.tr("Tokens per sequence (n_ctx) the estimate is made for"))
        self.parallel = QSpinBox()
        self.parallel.setRange(1, 256)
        self.parallel.setValue(DEFAULT_PARALLEL)
        self.parallel.setToolTip(
            self.tr("Sequences served at once (parallel) the estimate is made for"))
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(FIT_DEBOUNCE_MS)
        self._fit_timer.timeout.connect(self.estimate)
        for box in (self.n_ctx, self.parallel):
            box.valueChanged.connect(lambda _v: self._fit_timer.start())
        knobs = QHBoxLayout()
        knobs.addWidget(QLabel(self.tr("Context (n_ctx)")))
        knobs.addWidget(self.n_ctx)
        knobs.addWidget(QLabel(self.tr("Parallel")))
        knobs.addWidget(self.parallel)
        knobs.addStretch(1)
        self.files = _table([self.tr("Quantization"), self.tr("Size"), self.tr("Memory needed"),
                             self.tr("On this machine")])
        self.files.itemSelectionChanged.connect(self._update_download_button)
        self.download_btn = QPushButton(self.tr("Download"))
        self.download_btn.clicked.connect(self.download)
        files_box = QWidget()
        files_layout = QVBoxLayout(files_box)
        files_layout.setContentsMargins(0, 0, 0, 0)
        files_layout.addWidget(self.repo_info)
        files_layout.addLayout(knobs)
        files_layout.addWidget(self.files, 1)
        files_layout.addWidget(self.download_btn, 0, Qt.AlignmentFlag.AlignRight)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.results)
        split.addWidget(files_box)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)

        self.progress_box = QGroupBox(self.tr("Download"))
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress_text = QLabel("")
        self.progress_text.setWordWrap(True)
        self.cancel_btn = QPushButton(self.tr("Cancel download"))
        self.cancel_btn.clicked.connect(self.cancel)
        self.rule_btn = QPushButton(self.tr("Use for rule…"))
        self.rule_btn.setMenu(rule_menu(self, lambda: downloads.doc.applied, self.use_for_rule))
        self.rule_btn.setEnabled(False)
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_btn)
        row.addWidget(self.rule_btn)
        progress_layout = QVBoxLayout(self.progress_box)
        progress_layout.addLayout(row)
        progress_layout.addWidget(self.progress_text)
        self.progress_box.setVisible(False)

        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.addLayout(top)
        body_layout.addWidget(self.message)
        body_layout.addWidget(split, 1)
        body_layout.addWidget(self.progress_box)
        body.setMinimumHeight(420)
        scroll = QScrollArea()   # a small screen scrolls the dialog instead of squeezing it
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)

        self.add_gguf_btn = QPushButton(self.tr("Add GGUF…"))
        self.add_gguf_btn.setToolTip(self.tr("Add a GGUF file that is already on this machine"))
        self.add_gguf_btn.clicked.connect(self.add_gguf)
        self.close_btn = QPushButton(self.tr("Close"))
        self.close_btn.clicked.connect(self.reject)
        bottom = QHBoxLayout()
        bottom.addWidget(self.add_gguf_btn)
        bottom.addStretch(1)
        bottom.addWidget(self.close_btn)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addLayout(bottom)
        self.resize(fit_size(WANTED_SIZE, self.screen().availableGeometry()))

        downloads.changed.connect(self._on_jobs)
        downloads.started.connect(self._on_started)
        downloads.start_failed.connect(self._on_start_failed)
        downloads.registered.connect(self._on_registered)
        downloads.register_failed.connect(self._on_register_failed)
        downloads.rule_applied.connect(self._on_rule_applied)
        self._update_download_button()

    def _current(self, kind: str, seq: int) -> bool:
        """Whether a worker's answer is still wanted: no newer question, the dialog still open."""
        return seq == self._seq[kind] and shiboken6.isValid(self)

    def done(self, result: int) -> None:  # every way of closing passes here
        for kind in self._seq:      # answers still on their way are dropped
            self._seq[kind] += 1
        super().done(result)

    # --- messages --------------------------------------------------------------------------------
    def say(self, text: str, problem: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet("color: #b00020" if problem else "")
        self.message.setVisible(bool(text))

    def _hub_failed(self, exc: Exception, doing: str) -> None:
        if isinstance(exc, HubUnreachable):
            self.offline = True
            self.say(self.tr("The model hub cannot be reached, so nothing can be searched or "
                             "downloaded now. A GGUF file already on this machine can still be "
                             "added: \"Add GGUF…\" below.") + "\n" + str(exc), problem=True)
            self.add_gguf_btn.setDefault(True)
            self.add_gguf_btn.setFocus()
        elif isinstance(exc, GatedRepo):
            self.say(self.tr("This repository is gated.") + " " + str(exc), problem=True)
        else:
            self.say(self.tr("{doing} failed: {error}").format(doing=doing, error=exc),
                     problem=True)

    offline = False

    # --- search ----------------------------------------------------------------------------------
    def search(self) -> None:
        text = self.query.text().strip()
        if not text:
            self.say(self.tr("Type what to search for, e.g. qwen coder."))
            return
        self._seq["search"] += 1
        seq = self._seq["search"]
        self.say(self.tr("Searching for '{text}'…").format(text=text))
        self.search_btn.setEnabled(False)

        def done(hits: list) -> None:
            if self._current("search", seq):
                self.search_btn.setEnabled(True)
                self.offline = False
                self.show_hits(hits)

        def bad(exc: Exception) -> None:
            if self._current("search", seq):
                self.search_btn.setEnabled(True)
                self._hub_failed(exc, self.tr("Searching"))
        self.pool.submit(search_hub, text, self.mlx_available and self.mlx.isChecked(),
                         returned=done, errored=bad)

    def show_hits(self, hits: list) -> None:
        self.hits = list(hits)
        self.results.setRowCount(0)
        self.results.setRowCount(len(self.hits))
        for row, hit in enumerate(self.hits):
            cells = (hit.repo_id, fmt_count(hit.downloads), hit.license or "—",
                     self.tr("gated") if hit.gated else "")
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(ROW_ROLE, row)
                self.results.setItem(row, col, item)
        self.say(self.tr("{count} repositories found.").format(count=len(self.hits)) if self.hits
                 else self.tr("Nothing found; try fewer or other words."))

    # --- a repository's files -------------------------------------------------------------------
    def _repo_selected(self) -> None:
        rows = self.results.selectionModel().selectedRows()
        if rows:
            self.open_repo(self.hits[rows[0].row()].repo_id)

    def open_repo(self, repo_id: str) -> None:
        self._seq["files"] += 1
        seq = self._seq["files"]
        self.repo, self.fits = None, []
        self.files.setRowCount(0)
        self.repo_info.setText(self.tr("Reading the files of {repo}…").format(repo=repo_id))
        self._update_download_button()

        def done(answer: tuple) -> None:
            if self._current("files", seq):
                self.show_repo(*answer)

        def bad(exc: Exception) -> None:
            if self._current("files", seq):
                self.repo_info.setText(self.tr("{repo}: {error}").format(repo=repo_id, error=exc))
                self._hub_failed(exc, self.tr("Reading the repository"))
        self.pool.submit(read_repo, repo_id, returned=done, errored=bad)

    def gated_without_token(self) -> bool:
        return bool(self.repo and self.repo.gated and not self.has_token)

    def show_repo(self, repo, has_token: bool = False) -> None:
        self.repo, self.fits, self.has_token = repo, [], has_token
        info = [repo.repo_id, self.tr("licence: {licence}").format(licence=repo.license or "—")]
        info.append(self.tr("gated: you need to accept its conditions on the hub")
                    if repo.gated else self.tr("not gated"))
        self.repo_info.setText(" · ".join(info))
        if self.gated_without_token():
            self.say(self.tr("This repository is gated and no Hugging Face token is set (HF_TOKEN "
                             "or `hf auth login`), so its files cannot be downloaded.") + " "
                     + str(GatedRepo(repo.repo_id, has_token=False)), problem=True)
        elif not repo.choices:
            self.say(self.tr("{repo} has no GGUF file or MLX build that Laya can serve.")
                     .format(repo=repo.repo_id), problem=True)
        else:
            self.say("")
        self.files.setRowCount(0)
        self.files.setRowCount(len(repo.choices))
        for row, choice in enumerate(repo.choices):
            parts = len(choice.files)
            quant = choice.quant if parts == 1 else self.tr("{quant} ({parts} parts)").format(
                quant=choice.quant, parts=parts)
            for col, text in enumerate((quant, fmt_bytes(choice.total_bytes), "…", "…")):
                item = QTableWidgetItem(text)
                item.setData(ROW_ROLE, row)
                item.setToolTip("\n".join(f.path for f in choice.files))
                self.files.setItem(row, col, item)
        if repo.choices and any(c.kind == "mlx" for c in repo.choices) \
                and self.parallel.value() == DEFAULT_PARALLEL:
            self.parallel.setValue(1)   # the mlx backend's default; the estimate follows
        self._update_download_button()
        self.estimate()

    # --- the fit estimate -------------------------------------------------------------------------
    def estimate(self) -> None:
        """Laya's estimate for each choice at the spin boxes' n_ctx and parallel: a worker each,
        so a repository of many quantizations fills in row by row."""
        if self.repo is None or not self.repo.choices:
            return
        self._seq["fit"] += 1
        seq, repo = self._seq["fit"], self.repo
        self.fits = [None] * len(repo.choices)
        reserved = (self.downloads.doc.applied.get("memory") or {}).get("reserved_system_gb")
        for row, choice in enumerate(repo.choices):
            def done(fit, row=row) -> None:
                if self._current("fit", seq) and repo is self.repo:
                    self.show_fit(row, fit)

            def bad(exc: Exception, row=row) -> None:
                if self._current("fit", seq) and repo is self.repo:
                    self.files.item(row, 3).setText(self.tr("no estimate"))
                    self.files.item(row, 3).setToolTip(str(exc))
            self.pool.submit(judge, choice, self.n_ctx.value(), self.parallel.value(), reserved,
                             returned=done, errored=bad)

    def verdict_text(self, verdict: str) -> str:
        names = {"fits": self.tr("fits"), "tight": self.tr("tight"),
                 "does_not_fit": self.tr("does not fit")}
        return names.get(verdict, verdict)

    def show_fit(self, row: int, f) -> None:
        self.fits[row] = f
        device = self.tr("VRAM") if f.device == "vram" else self.tr("RAM")
        needed = self.files.item(row, 2)
        needed.setText(self.tr("{needed} of {available} {device}").format(
            needed=fmt_bytes(f.needed_bytes), available=fmt_bytes(f.available_bytes),
            device=device))
        needed.setToolTip(f.reason)
        verdict = self.files.item(row, 3)
        verdict.setText(self.verdict_text(f.verdict))
        verdict.setForeground(QColor(FIT_COLOURS.get(f.verdict, "#000000")))
        verdict.setToolTip(f.reason)

    # --- downloading ------------------------------------------------------------------------------
    def selected_choice(self):
        rows = self.files.selectionModel().selectedRows()
        if self.repo is None or not rows or rows[0].row() >= len(self.repo.choices):
            return None
        return self.repo.choices[rows[0].row()]

    def _update_download_button(self) -> None:
        self.download_btn.setEnabled(self.selected_choice() is not None
                                     and not self.gated_without_token())

    def download(self) -> None:
        choice = self.selected_choice()
        if choice is None or self.repo is None:
            self.say(self.tr("Choose a quantization first."))
            return
        if self.gated_without_token():
            self._update_download_button()
            return
        self.progress_box.setVisible(True)
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("Starting the download of {repo} {quant}…").format(
            repo=self.repo.repo_id, quant=choice.quant))
        self.cancel_btn.setEnabled(False)
        self.rule_btn.setEnabled(False)
        self.job_id = None
        self._starting = True
        self.downloads.start(self.repo.repo_id, choice, n_ctx=self.n_ctx.value(),
                             parallel=self.parallel.value())

    _starting = False

    def _on_started(self, job_id: str) -> None:
        if self._starting:
            self._starting = False
            self.job_id = job_id
            self.cancel_btn.setEnabled(True)
            self._on_jobs(self.downloads.jobs)

    def _on_start_failed(self, reason: str) -> None:
        if self._starting:
            self._starting = False
            self.progress_text.setText(self.tr("The download did not start: {reason}")
                                       .format(reason=reason))

    def _on_jobs(self, jobs: list) -> None:
        job = next((j for j in jobs if j.job_id == self.job_id), None) if self.job_id else None
        if job is None:
            return
        self.progress.setValue(1000 if job.state == "done" else permille(job))
        self.cancel_btn.setEnabled(not job.finished)
        name = self.downloads.names.get(job.job_id)
        if job.state == "done" and name:
            return   # the registration's text stays
        if job.state == "done":
            self.progress_text.setText(self.tr("Downloaded to {path}; adding it to the models…")
                                       .format(path=job.local_path))
        else:
            self.progress_text.setText(progress_text(job))

    def cancel(self) -> None:
        if self.job_id:
            self.downloads.cancel(self.job_id)

    def _on_registered(self, job_id: str, name: str) -> None:
        if job_id == self.job_id:
            self.progress.setValue(1000)
            notes = "; ".join(self.downloads.notes.get(job_id, []))
            self.progress_text.setText(self.tr("Added to the models as '{name}'. \"Use for rule…\" "
                                               "puts it behind a rule, e.g. default.")
                                       .format(name=name) + (f"\n{notes}" if notes else ""))
            self.rule_btn.setEnabled(True)

    def _on_register_failed(self, job_id: str, reason: str) -> None:
        if job_id == self.job_id:
            self.progress_text.setText(self.tr("Downloaded, but the engine refused the new model: "
                                               "{reason}").format(reason=reason))

    def use_for_rule(self, rule: str) -> None:
        name = self.downloads.names.get(self.job_id or "")
        if name:
            self.downloads.use_for_rule(rule, name)

    def _on_rule_applied(self, rule: str, model: str, ok: bool, reason: str) -> None:
        if model == self.downloads.names.get(self.job_id or ""):
            self.progress_text.setText(
                self.tr("Rule '{rule}' now sends its requests to '{model}'.").format(
                    rule=rule, model=model) if ok else
                self.tr("Rule '{rule}' was not changed: {reason}").format(rule=rule, reason=reason))

    # --- offline ----------------------------------------------------------------------------------
    def add_gguf(self) -> None:
        """Close this dialog and open the Models panel's own Add GGUF dialog."""
        self.accept()
        if self._add_gguf is not None:
            self._add_gguf()


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return table
