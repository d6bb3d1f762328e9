"""Form for one routing rule: name, enabled, conditions (semantic examples too), targets,
strategy and fallbacks.

An edit changes only the fields the user changed (form_merge): the rule's other fields, shown or
not (`sampling`, a semantic condition's settings), stay as they were read.
"""
from __future__ import annotations

import copy

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFormLayout, QGroupBox, QLineEdit, QVBoxLayout, QWidget,
)

from laya_desktop.config.schema import STRATEGIES
from laya_desktop.gui.form_merge import merge_changes
from laya_desktop.gui.panels.semantic_view import SemanticFields

LIST_FIELDS = ("tags", "keywords", "model", "path")
# what `name=N` means in the targets field, per strategy
TARGET_NUMBER = {"weighted": "weight", "spillover": "max_active"}


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text) if text else None
    except ValueError:
        return None


def parse_targets(text: str, strategy: str) -> list:
    """'a, b=3' -> ['a', {'model': 'b', 'weight': 3}] (weighted) or max_active (spillover); a
    number the strategy does not use is kept under `weight`, so validation names it."""
    out: list = []
    for part in _split(text):
        name, _, number = part.partition("=")
        name = name.strip()
        if not number.strip():
            out.append(name)
            continue
        try:
            value: float | int | str = float(number) if "." in number else int(number)
        except ValueError:
            value = number.strip()
        out.append({"model": name, TARGET_NUMBER.get(strategy, "weight"): value})
    return out


def targets_text(targets: list) -> str:
    parts = []
    for entry in targets or []:
        if isinstance(entry, dict):
            number = entry.get("weight", entry.get("max_active"))
            parts.append(entry.get("model", "") + ("" if number is None else f"={number}"))
        else:
            parts.append(str(entry))
    return ", ".join(parts)


def _merge_nested(read: dict, shown: dict, now: dict, path: tuple[str, ...]) -> dict:
    """merge_changes, going down into the mapping at path[0] (and so on) instead of replacing it."""
    if not path:
        return merge_changes(read, shown, now)
    key = path[0]
    flat = [{k: v for k, v in d.items() if k != key} for d in (shown, now)]
    out = merge_changes(read, *flat)
    inner_shown, inner_now = shown.get(key), now.get(key)
    if inner_now == inner_shown:
        return out
    if not isinstance(inner_now, dict) or not isinstance(inner_shown, dict):
        return merge_changes(out, {key: inner_shown}, {key: inner_now})   # added or removed whole
    out[key] = _merge_nested(read.get(key) or {}, inner_shown, inner_now, path[1:])
    return out


class RuleEditor(QWidget):
    """Emits `edited(rule_dict)` whenever the user finishes changing a field."""

    edited = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._loading = False
        self._read: dict = {}    # the rule as loaded, and the form's view of it then
        self._shown: dict = {}
        self.name = QLineEdit()
        self.enabled = QCheckBox(self.tr("enabled"))
        self.target = QComboBox()
        self.target.setEditable(True)
        self.fallback = QLineEdit()
        self.fallback.setPlaceholderText(self.tr("model names, in order, comma-separated"))
        self.targets = QLineEdit()
        self.targets.setPlaceholderText(self.tr("more models sharing the requests, e.g. a, b "
                                                "(weighted: b=3; spillover: b=4 in flight)"))
        self.strategy = QComboBox()
        self.strategy.addItems(list(STRATEGIES))
        self.lists = {key: QLineEdit() for key in LIST_FIELDS}
        self.lists["tags"].setPlaceholderText(self.tr("any of these tags, e.g. code, fast"))
        self.lists["keywords"].setPlaceholderText(self.tr("substrings of the user text, any case"))
        self.lists["model"].setPlaceholderText(self.tr("model names clients ask for, e.g. gpt-4o"))
        self.lists["path"].setPlaceholderText("/v1/chat/completions")
        self.min_chars = QLineEdit()
        self.max_chars = QLineEdit()
        for w in (self.min_chars, self.max_chars):
            w.setPlaceholderText(self.tr("no limit"))

        rule_box = QGroupBox(self.tr("Rule"))
        form = QFormLayout(rule_box)
        form.addRow(self.tr("Name"), self.name)
        form.addRow("", self.enabled)
        form.addRow(self.tr("Target"), self.target)
        form.addRow(self.tr("Targets"), self.targets)
        form.addRow(self.tr("Strategy"), self.strategy)
        form.addRow(self.tr("Fallbacks"), self.fallback)
        cond_box = QGroupBox(self.tr("Conditions (all must hold; a list holds when any element does)"))
        cform = QFormLayout(cond_box)
        cform.addRow(self.tr("Tags"), self.lists["tags"])
        cform.addRow(self.tr("Keywords"), self.lists["keywords"])
        cform.addRow(self.tr("Min prompt chars"), self.min_chars)
        cform.addRow(self.tr("Max prompt chars"), self.max_chars)
        cform.addRow(self.tr("Model asked for"), self.lists["model"])
        cform.addRow(self.tr("Path"), self.lists["path"])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(rule_box)
        layout.addWidget(cond_box)
        self.semantic = SemanticFields()
        layout.addWidget(self.semantic)
        layout.addStretch(1)

        for w in (self.name, self.fallback, self.targets, self.min_chars, self.max_chars,
                  *self.lists.values()):
            w.editingFinished.connect(self._emit)
        self.strategy.activated.connect(self._emit)
        self.enabled.toggled.connect(self._emit)
        self.semantic.changed.connect(self._emit)
        self.target.activated.connect(self._emit)
        self.target.lineEdit().editingFinished.connect(self._emit)
        self.setEnabled(False)

    def set_models(self, names: list[str]) -> None:
        current = self.target.currentText()
        self._loading = True
        self.target.clear()
        self.target.addItems(names)
        self.target.setCurrentText(current)
        self._loading = False

    def load(self, rule: dict | None) -> None:
        self._loading = True
        try:
            self.setEnabled(rule is not None)
            rule = rule or {}
            match = rule.get("match") or {}
            self.name.setText(rule.get("name", ""))
            self.enabled.setChecked(rule.get("enabled", True))
            self.target.setCurrentText(rule.get("target", ""))
            self.fallback.setText(", ".join(rule.get("fallback") or []))
            self.targets.setText(targets_text(rule.get("targets")))
            self.strategy.setCurrentText(rule.get("strategy") or "first_available")
            for key, edit in self.lists.items():
                edit.setText(", ".join(map(str, match.get(key) or [])))
            for key, edit in (("min_prompt_chars", self.min_chars), ("max_prompt_chars", self.max_chars)):
                value = match.get(key)
                edit.setText("" if value is None else str(value))
            self.semantic.load(match.get("semantic"))
            self._read = copy.deepcopy(rule)
            self._shown = self._form_rule()
        finally:
            self._loading = False

    def rule(self) -> dict:
        """The rule as loaded, with the fields changed in the form since (match and its semantic
        condition field by field too)."""
        return _merge_nested(self._read, self._shown, self._form_rule(), ("match", "semantic"))

    def _form_rule(self) -> dict:
        match: dict = {}
        for key, edit in self.lists.items():
            values = _split(edit.text())
            if values:
                match[key] = values
        for key, edit in (("min_prompt_chars", self.min_chars), ("max_prompt_chars", self.max_chars)):
            value = _int_or_none(edit.text())
            if value is not None:
                match[key] = value
        semantic = self.semantic.value()
        if semantic is not None:
            match["semantic"] = semantic
        rule = {"name": self.name.text().strip(), "target": self.target.currentText().strip(),
                "enabled": self.enabled.isChecked(), "match": match,
                "fallback": _split(self.fallback.text())}
        strategy = self.strategy.currentText()
        targets = parse_targets(self.targets.text(), strategy)
        if targets:
            rule["targets"] = targets
        if strategy != "first_available":
            rule["strategy"] = strategy
        return rule

    def _emit(self, *_args) -> None:
        if not self._loading and self.isEnabled():
            self.edited.emit(self.rule())
