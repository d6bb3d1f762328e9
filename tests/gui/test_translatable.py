"""Every UI string in laya_desktop/gui/ goes through Qt's translation (tr / translate), and the
Simplified Chinese catalogue covers them all."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

GUI = Path(__file__).resolve().parents[2] / "laya_desktop" / "gui"
TS_FILE = GUI / "i18n" / "laya_zh_CN.ts"
# Calls whose string arguments a user reads.
UI_CALLS = {
    "setText", "setPlaceholderText", "setToolTip", "setWindowTitle", "showMessage", "addTab",
    "addMenu", "addRow", "setTitle", "setLabel", "setPlainText", "setHtml", "addItem",
    "setHorizontalHeaderLabels", "QLabel", "QPushButton", "QCheckBox", "QGroupBox", "QAction",
    "QMessageBox", "information", "warning", "critical", "question", "about", "getOpenFileName",
    "getExistingDirectory", "_button", "emit",
}
# Literal arguments that are data, not words: units, paths, identifiers, punctuation.
NOT_WORDS = re.compile(r"^([^A-Za-z]*|[a-z0-9_./:-]+|GiB|RSS|VRAM|TTFT|tok/s|#)$")
# Sample input the screenshot run types into a form, as a user would: a prompt, not a label.
SAMPLE_INPUT = {"Write a Python function that reverses a list."}


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def untranslated(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or _call_name(node) not in UI_CALLS:
            continue
        for arg in node.args:
            if isinstance(arg, ast.JoinedStr):
                found.append(f"{path.name}:{arg.lineno}: f-string")
            elif isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and not NOT_WORDS.match(arg.value) and arg.value not in SAMPLE_INPUT:
                found.append(f"{path.name}:{arg.lineno}: {arg.value!r}")
    return found


def test_no_ui_string_bypasses_translation():
    offenders = [hit for path in sorted(GUI.rglob("*.py")) for hit in untranslated(path)]
    assert offenders == []


def _lupdate() -> str | None:
    exe = Path(sys.executable).with_name("pyside6-lupdate")
    return str(exe) if exe.exists() else shutil.which("pyside6-lupdate")


@pytest.mark.skipif(_lupdate() is None, reason="pyside6-lupdate is not installed")
def test_chinese_catalogue_has_every_string_translated(tmp_path):
    fresh = tmp_path / "laya_zh_CN.ts"
    shutil.copy(TS_FILE, fresh)
    sources = sorted(str(p) for p in GUI.rglob("*.py"))
    subprocess.run([_lupdate(), *sources, "-ts", str(fresh)], check=True, capture_output=True)
    root = ET.parse(fresh).getroot()
    missing = [f"{ctx.findtext('name')}: {msg.findtext('source')!r}"
               for ctx in root.iter("context") for msg in ctx.iter("message")
               if msg.find("translation").get("type") in ("unfinished", "vanished", "obsolete")
               or not (msg.findtext("translation") or "").strip()]
    assert missing == [], "run `make translations-update` and translate these"
