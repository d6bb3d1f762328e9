"""Help > About: the version, what the app is built on, and the licence texts."""
from __future__ import annotations

import platform

import PySide6
from PySide6.QtCore import qVersion
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout,
    QWidget,
)

from laya_desktop import __version__
from laya_desktop.app_files import ICON_SVG, LICENSE, THIRD_PARTY_NOTICES, find_app_file, read_app_file


def app_icon() -> QIcon:
    path = find_app_file(ICON_SVG)
    return QIcon(str(path)) if path else QIcon()


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("About Laya Desktop"))
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(96, 96))
        self.text = QLabel(self._html())
        self.text.setWordWrap(True)
        self.text.setOpenExternalLinks(True)
        top = QHBoxLayout()
        top.addWidget(icon, 0)
        top.addWidget(self.text, 1)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self.licence_button = QPushButton(self.tr("Licence…"))
        self.notices_button = QPushButton(self.tr("Third-party notices…"))
        for button, name, title in (
                (self.licence_button, LICENSE, self.tr("Laya Desktop licence")),
                (self.notices_button, THIRD_PARTY_NOTICES, self.tr("Third-party notices"))):
            text = read_app_file(name)
            button.setEnabled(text is not None)
            if text is None:
                button.setToolTip(self.tr("{name} is not in this installation").format(name=name))
            button.clicked.connect(lambda _c=False, t=title, body=text: self.show_text(t, body))
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(buttons)

    def _html(self) -> str:
        versions = self.tr("Qt {qt} · PySide6 {pyside} · Python {python}").format(
            qt=qVersion(), pyside=PySide6.__version__, python=platform.python_version())
        paragraphs = [
            self.tr("A local model gateway with a control panel."),
            versions,
            self.tr("Laya Desktop is free software under the MIT licence."),
            self.tr("It uses Qt and PySide6 under the GNU LGPL v3, and pyqtgraph, llama.cpp, "
                    "llama-cpp-python, numpy and other libraries under their own licences."),
            self.tr("Built-in models: Gemma 3 270M is provided under and subject to the Gemma "
                    "Terms of Use (ai.google.dev/gemma/terms); SmolLM2-135M-Instruct is under "
                    "the Apache License 2.0."),
        ]
        return f"<h2>Laya Desktop {__version__}</h2>" + "".join(f"<p>{p}</p>" for p in paragraphs)

    def show_text(self, title: str, body: str | None) -> QDialog:
        dialog = QDialog(self)
        dialog.setWindowTitle(title)
        view = QPlainTextEdit(body or "")
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(view)
        layout.addWidget(close)
        dialog.resize(760, 560)
        dialog.open()
        return dialog
