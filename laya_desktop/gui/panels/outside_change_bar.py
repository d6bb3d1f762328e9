"""A bar a panel shows when the config changed outside it (a hand edit of models.yaml, another
client) while the user holds edits of their own: reload the new config, or keep their edits."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class OutsideChangeBar(QFrame):
    reload = Signal()   # drop the user's edits, show the config as it is now
    keep = Signal()     # keep them: the next Apply replaces what changed outside

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("OutsideChangeBar { background: palette(alternate-base); }")
        self.text = QLabel(self.tr("The config was changed outside this window (models.yaml "
                                   "edited, or another client) while you have unapplied edits."))
        self.text.setWordWrap(True)
        self.reload_btn = QPushButton(self.tr("Reload (drop my edits)"))
        self.keep_btn = QPushButton(self.tr("Keep my edits"))
        self.reload_btn.clicked.connect(self._reload)
        self.keep_btn.clicked.connect(self._keep)
        row = QHBoxLayout(self)
        row.addWidget(self.text, 1)
        row.addWidget(self.reload_btn)
        row.addWidget(self.keep_btn)
        self.hide()

    def _reload(self) -> None:
        self.hide()
        self.reload.emit()

    def _keep(self) -> None:
        self.hide()
        self.keep.emit()
