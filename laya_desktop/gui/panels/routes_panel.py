"""Routes panel: the ordered rules (drag and drop), a rule editor, lint inline, try-a-request, apply.

"Try a request" asks the engine (POST /admin/route/explain), so it explains the *applied* config;
while there are unapplied edits the panel says so next to the answer. "What if…" replays the
engine's recent requests against the *edited* rules (POST /admin/route/replay) before they are
applied; "Distribution" shows where requests went (GET /admin/stats).

Edits are made against the revision of the config they started from: a change from outside (a
hand edit of models.yaml) shows at once when there are no edits, and otherwise asks whether to
reload or keep them; an Apply against a stale revision is refused by the engine (409) and asks
the same, so the panel never overwrites a change it did not show.
"""
from __future__ import annotations

import copy
import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView, QFormLayout, QFrame, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QListView,
    QPlainTextEdit, QPushButton, QScrollArea, QSplitter, QTabWidget, QTextBrowser, QVBoxLayout,
    QWidget,
)

from laya_desktop.admin_api import calls
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.lint_bridge import rule_warnings
from laya_desktop.gui.panels.outside_change_bar import OutsideChangeBar
from laya_desktop.gui.panels.route_insight import DistributionView, WhatIfView
from laya_desktop.gui.panels.rule_editor import RuleEditor
from laya_desktop.gui.panels.semantic_view import SemanticScoreView
from laya_desktop.gui.rule_commands import DeleteCommand, EditCommand, InsertCommand, MoveCommand
from laya_desktop.gui.rules_list import RulesList, unique_name
from laya_desktop.gui.rules_model import RulesModel
from laya_desktop.gui.workers import WorkerPool


class RoutesPanel(QWidget):
    applied = Signal(bool, object)    # ok, new config or EngineError
    explained = Signal(object)        # the explain answer (dict) or an exception
    replayed = Signal(object)         # the what-if answer (dict) or an exception

    def __init__(self, pool: WorkerPool, doc: EngineState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool, self.doc = pool, doc
        self.rules = RulesList()
        self.model = RulesModel(self.rules, self)
        self.undo_stack = QUndoStack(self)
        self._replaying = False
        self._baseline: list[dict] = []   # the routes as last loaded from the engine
        self._base_etag: str | None = None   # the config revision the edits started from

        self.view = QListView()
        self.view.setModel(self.model)
        self.view.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.view.setDragDropOverwriteMode(False)
        self.view.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.selectionModel().currentChanged.connect(lambda cur, _prev: self._show_rule(cur.row()))

        buttons = QHBoxLayout()
        self.btn = {}
        for key, label, slot in (("add", self.tr("Add"), self.add_rule),
                                 ("dup", self.tr("Duplicate"), self.duplicate_rule),
                                 ("del", self.tr("Delete"), self.delete_rule),
                                 ("toggle", self.tr("Enable/Disable"), self.toggle_rule),
                                 ("undo", self.tr("Undo"), self.undo_stack.undo),
                                 ("redo", self.tr("Redo"), self.undo_stack.redo)):
            b = QPushButton(label)
            b.clicked.connect(slot)
            buttons.addWidget(b)
            self.btn[key] = b
        self._wire_undo()

        apply_row = QHBoxLayout()
        self.apply_btn = QPushButton(self.tr("Apply"))
        self.apply_btn.clicked.connect(self.apply)
        self.revert_btn = QPushButton(self.tr("Revert"))
        self.revert_btn.clicked.connect(self.revert)
        self.what_if_btn = QPushButton(self.tr("What if…"))
        self.what_if_btn.setToolTip(self.tr("Replay recent requests against the edited rules "
                                            "and show what would change, without applying"))
        self.what_if_btn.clicked.connect(self.what_if)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        apply_row.addWidget(self.apply_btn)
        apply_row.addWidget(self.revert_btn)
        apply_row.addWidget(self.what_if_btn)
        apply_row.addWidget(self.status, 1)

        left = QWidget()
        lv = QVBoxLayout(left)
        intro = QLabel(self.tr("Rules, in order — the first rule whose conditions all hold wins. "
                               "Drag to reorder."))
        intro.setWordWrap(True)
        lv.addWidget(intro)
        self.outside_bar = OutsideChangeBar()
        self.outside_bar.reload.connect(self.revert)
        self.outside_bar.keep.connect(self._keep_edits)
        lv.addWidget(self.outside_bar)
        lv.addWidget(self.view, 1)
        lv.addLayout(buttons)
        lv.addLayout(apply_row)

        self.editor = RuleEditor()
        self.editor.edited.connect(self._on_rule_edited)
        self.editor_scroll = _scrolled(self.editor)
        self.what_if_view = WhatIfView()
        self.distribution = DistributionView(lambda: self.doc.client)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._build_try_box(), self.tr("Try a request"))
        self.tabs.addTab(self.what_if_view, self.tr("What if…"))
        self.tabs.addTab(self.distribution, self.tr("Distribution"))
        self.semantic_view = SemanticScoreView(lambda: self.doc.client)
        self.semantic_view.threshold_chosen.connect(self.editor.semantic.set_threshold)
        self.semantic_view.min_probability_chosen.connect(self.editor.semantic.set_min_probability)
        self.tabs.addTab(_scrolled(self.semantic_view), self.tr("Semantic"))
        self.right_split = QSplitter(Qt.Orientation.Vertical)
        self.right_split.addWidget(self.editor_scroll)
        self.right_split.addWidget(self.tabs)
        self.right_split.setChildrenCollapsible(False)
        self.right_split.setSizes([600, 400])   # scaled to the height there is: the form first

        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.right_split)
        split.setChildrenCollapsible(False)
        split.setSizes([450, 550])   # the form's rows need the width more than the list does
        QVBoxLayout(self).addWidget(split)

        ev = self.rules.events
        ev.moved.connect(self._on_moved)
        for name in ("inserted", "removed", "changed", "moved", "reset"):
            getattr(ev, name).connect(lambda **_kw: self._refresh_lint())
        doc.applied_changed.connect(self._on_applied_config)
        doc.changed_elsewhere.connect(self._on_changed_elsewhere)

    def _wire_undo(self) -> None:
        stack = self.undo_stack
        for key, can, text, verb in (
                ("undo", stack.canUndoChanged, stack.undoTextChanged, self.tr("undo {change}")),
                ("redo", stack.canRedoChanged, stack.redoTextChanged, self.tr("redo {change}"))):
            button = self.btn[key]
            button.setEnabled(False)
            can.connect(button.setEnabled)
            text.connect(lambda change, button=button, verb=verb: button.setToolTip(verb.format(change=change)))
        for keys, slot in ((QKeySequence.StandardKey.Undo, stack.undo),
                           (QKeySequence.StandardKey.Redo, stack.redo)):
            action = QAction(self)
            action.setShortcut(keys)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(slot)
            self.addAction(action)   # a focused text field keeps its own undo

    def _build_try_box(self) -> QGroupBox:
        box = QGroupBox(self.tr("Try a request (explained by the engine against the applied rules)"))
        form = QFormLayout(box)
        self.try_prompt = QPlainTextEdit()
        self.try_prompt.setPlaceholderText(self.tr("prompt text"))
        self.try_prompt.setMaximumHeight(70)
        self.try_tags = QLineEdit()
        self.try_tags.setPlaceholderText(self.tr("tags, comma-separated"))
        self.try_model = QLineEdit()
        self.try_model.setPlaceholderText(self.tr("model asked for (empty = auto)"))
        self.try_btn = QPushButton(self.tr("Explain"))
        self.try_btn.clicked.connect(lambda: self.explain(self.try_prompt.toPlainText(),
                                                          _split(self.try_tags.text()),
                                                          self.try_model.text().strip() or None))
        self.try_result = QTextBrowser()
        form.addRow(self.tr("Prompt"), self.try_prompt)
        form.addRow(self.tr("Tags"), self.try_tags)
        form.addRow(self.tr("Model"), self.try_model)
        form.addRow("", self.try_btn)
        form.addRow(self.try_result)
        return box

    # --- state from the engine -----------------------------------------------------------------
    def _on_applied_config(self, config: dict) -> None:
        self.editor.set_models([m.get("name", "") for m in config.get("models", [])])
        if not self.dirty:
            self._load_routes(config.get("routes", []))

    def _on_changed_elsewhere(self, config: dict) -> None:
        if not self.dirty:
            return   # already shown by _on_applied_config
        if self.rules.to_list() == config.get("routes", []):
            self._load_routes(config.get("routes", []))   # the same rules: nothing to choose
            return
        self.outside_bar.show()

    def _keep_edits(self) -> None:
        """The user chose their edits over the outside change: Apply may now replace it."""
        self._base_etag = self.doc.etag
        self._refresh_lint()

    def _load_routes(self, routes: list[dict]) -> None:
        row = self.view.currentIndex().row()
        self._baseline = copy.deepcopy(routes)
        self._base_etag = self.doc.etag
        self.outside_bar.hide()
        self.rules.reset(copy.deepcopy(routes))
        self.undo_stack.clear()
        if len(self.rules):
            self.view.setCurrentIndex(self.model.index(min(max(row, 0), len(self.rules) - 1)))
        self._refresh_lint()

    @property
    def dirty(self) -> bool:
        return self.rules.to_list() != self._baseline

    def edited_config(self) -> dict:
        config = self.doc.copy()
        config["routes"] = self.rules.to_list()
        return config

    def _refresh_lint(self) -> None:
        if not self.doc.applied:
            return
        per_rule, general = rule_warnings(self.edited_config())
        self.model.set_warnings(per_rule)
        note = self.tr("unapplied changes") if self.dirty else self.tr("applied")
        self.status.setText(note + ("" if not general else " — " + "; ".join(general)))

    # --- editing -------------------------------------------------------------------------------
    def _current_row(self) -> int:
        return self.view.currentIndex().row()

    def _show_rule(self, row: int) -> None:
        rule = self.rules[row] if 0 <= row < len(self.rules) else None
        self.editor.load(rule)
        self.semantic_view.set_condition(((rule or {}).get("match") or {}).get("semantic"),
                                         self._other_semantic_rules(row))

    def _on_rule_edited(self, rule: dict) -> None:
        row = self._current_row()
        self.semantic_view.set_condition((rule.get("match") or {}).get("semantic"),
                                         self._other_semantic_rules(row))
        if 0 <= row < len(self.rules) and rule != self.rules[row]:
            self.undo_stack.push(EditCommand(self.rules, row, rule, self._select))

    def _other_semantic_rules(self, row: int) -> list[dict]:
        """The enabled rules but `row` that have a semantic condition: a learned head's classes."""
        return [{"name": r.get("name", ""), "semantic": (r.get("match") or {})["semantic"]}
                for i, r in enumerate(self.rules) if i != row and r.get("enabled", True)
                and (r.get("match") or {}).get("semantic")]

    def _select(self, row: int) -> None:
        """Make `row` current and show it in the editor (also when it already was current)."""
        if 0 <= row < len(self.rules):
            self.view.setCurrentIndex(self.model.index(row))
        self._show_rule(row)

    def _on_moved(self, index: int, new_index: int, landed: int, value: dict) -> None:
        if not self._replaying:
            self.undo_stack.push(MoveCommand(self.replay, index, landed, value.get("name", "")))
        self.view.setCurrentIndex(self.model.index(landed))

    def replay(self, src: int, dest: int) -> None:
        """A move made by undo/redo: not recorded again."""
        self._replaying = True
        try:
            self.rules.move(src, dest)
        finally:
            self._replaying = False

    def add_rule(self) -> None:
        models = self.doc.model_names()
        rule = {"name": unique_name("new-rule", self.rules.names()),
                "target": models[0] if models else "", "enabled": True, "match": {}, "fallback": []}
        row = self._current_row() + 1 if self._current_row() >= 0 else 0
        self.undo_stack.push(InsertCommand(self.rules, row, rule, self._select, "add"))

    def duplicate_rule(self) -> None:
        row = self._current_row()
        if row < 0:
            return
        rule = copy.deepcopy(self.rules[row])
        rule["name"] = unique_name(rule.get("name", "rule") + "-copy", self.rules.names())
        self.undo_stack.push(InsertCommand(self.rules, row + 1, rule, self._select, "duplicate"))

    def delete_rule(self) -> None:
        row = self._current_row()
        if 0 <= row < len(self.rules):
            self.undo_stack.push(DeleteCommand(self.rules, row, self._select))

    def toggle_rule(self) -> None:
        row = self._current_row()
        if 0 <= row < len(self.rules):
            rule = dict(self.rules[row])
            rule["enabled"] = not rule.get("enabled", True)
            what = "enable" if rule["enabled"] else "disable"
            self.undo_stack.push(EditCommand(self.rules, row, rule, self._select, what))

    def revert(self) -> None:
        self._load_routes(self.doc.applied.get("routes", []))

    # --- apply and explain ---------------------------------------------------------------------
    def apply(self) -> None:
        self.apply_btn.setEnabled(False)
        self.status.setText(self.tr("applying…"))
        self.doc.apply(self.edited_config(), on_done=self._on_apply_done, base=self._base_etag)

    def _on_apply_done(self, ok: bool, result: object) -> None:
        self.apply_btn.setEnabled(True)
        if ok:
            self._load_routes(result.get("routes", []))  # type: ignore[union-attr]
            self.status.setText(self.tr("applied and saved by the engine"))
        elif getattr(result, "status", None) == 409:
            self.status.setText(self.tr("not applied: the config changed outside this window "
                                        "since your edits began"))
            self.outside_bar.show()
        else:
            describe = getattr(result, "describe", None)
            self.status.setText(self.tr("refused, nothing changed:") + "\n"
                                + (describe() if describe else str(result)))
        self.applied.emit(ok, result)

    def what_if(self) -> None:
        self.tabs.setCurrentWidget(self.what_if_view)
        self.what_if_btn.setEnabled(False)
        self.what_if_view.show_busy()
        self.doc.client.send(calls.route_replay(self.rules.to_list()),
                             returned=self._show_what_if, errored=self._what_if_failed)

    def _show_what_if(self, answer: dict) -> None:
        self.what_if_btn.setEnabled(True)
        self.what_if_view.show_result(answer)
        self.replayed.emit(answer)

    def _what_if_failed(self, exc: Exception) -> None:
        self.what_if_btn.setEnabled(True)
        describe = getattr(exc, "describe", None)
        self.what_if_view.show_error(describe() if describe else str(exc))
        self.replayed.emit(exc)

    def explain(self, prompt: str, tags: list[str], model: str | None) -> None:
        self.try_result.setPlainText(self.tr("asking the engine…"))
        self.doc.client.send(calls.explain(prompt, tags, model),
                             returned=self._show_explanation, errored=self._show_explain_error)

    def _show_explanation(self, answer: dict) -> None:
        lines = []
        if answer.get("direct"):
            lines.append(self.tr("<b>Direct:</b> the request names model <b>{model}</b>; "
                                 "rules are not consulted.").format(model=_h(answer.get("target"))))
        elif answer.get("rule"):
            lines.append(self.tr("<b>Rule:</b> {rule} &nbsp; <b>Target:</b> {target}").format(
                rule=_h(answer["rule"]), target=_h(answer.get("target"))))
        else:
            lines.append(self.tr("<b>No rule matches</b> (the request would get 404 model_not_found)."))
        if answer.get("fallbacks"):
            lines.append(self.tr("<b>Fallbacks:</b> {models}").format(models=_h(", ".join(answer["fallbacks"]))))
        for step in answer.get("explanation", []):
            mark = "✔" if step.get("matched") else "✘"
            reasons = "; ".join(map(str, step.get("reasons", []))) or ""
            lines.append(f"{mark} {_h(step.get('rule'))}: {_h(reasons)}")
        if self.dirty:
            lines.append(self.tr("<i>Note: you have unapplied changes; this explains the applied rules.</i>"))
        self.try_result.setHtml("<br>".join(lines))
        self.explained.emit(answer)

    def _show_explain_error(self, exc: Exception) -> None:
        self.try_result.setPlainText(self.tr("explain failed: {error}").format(error=exc))
        self.explained.emit(exc)


def _scrolled(widget: QWidget) -> QScrollArea:
    """`widget` in a scroll area: on a laptop screen a tall or wide form scrolls instead of
    squeezing its rows into each other."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidget(widget)
    return scroll


def _h(value) -> str:
    return html.escape(str(value))


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]
