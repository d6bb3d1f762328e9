"""Setting up a semantic rule by point and click: its examples, negatives and threshold (in the
rule editor), and a view that scores a typed prompt live, draws the score histograms (examples
left out one at a time, negatives, recent requests) and suggests a threshold.

The scores come from the engine (POST /admin/route/semantic), asked on QtNetwork: the GUI never loads
the model and never waits for it. Requests are debounced and one is in flight at a time; an
answer for an older question than the last one asked is dropped.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer, Signal
from shiboken6 import isValid
from PySide6.QtWidgets import (
    QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
    QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from laya_desktop.admin_api import calls
from laya_desktop.gui.palette import theme

DEBOUNCE_MS = 400
BINS = np.linspace(0.0, 1.0, 41)
AUTO = -0.001  # the threshold field's "auto" value
FALSE_POSITIVE = 5  # per cent: the target every suggestion holds unless the user changes it
SERIES = (("examples_leave_one_out", (60, 160, 60, 140)), ("negatives", (200, 60, 60, 140)),
          ("recent", (90, 90, 200, 110)))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class SemanticFields(QGroupBox):
    """The rule's `match.semantic`: examples and negatives one per line, and the threshold.
    Emits `changed` after the user stops typing (or leaves the threshold field)."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(self.tr("Semantic (the user text is close to example prompts)"))
        self.examples = QPlainTextEdit()
        self.examples.setPlaceholderText(self.tr("example prompts for this route, one per line"))
        self.negatives = QPlainTextEdit()
        self.negatives.setPlaceholderText(self.tr("look-alike prompts that belong elsewhere, one per line"))
        for edit in (self.examples, self.negatives):
            edit.setMaximumHeight(90)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(AUTO, 1.0)  # its lowest value reads "auto": no threshold written
        self.threshold.setSpecialValueText(self.tr("auto (calibrated on the background corpus)"))
        self.threshold.setSingleStep(0.01)
        self.threshold.setDecimals(3)
        self.threshold.setValue(AUTO)
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 100)
        self.top_k.setToolTip(self.tr("the score is the mean similarity of this many nearest examples"))
        self.scoring = QComboBox()
        self.scoring.addItem(self.tr("learned (a classifier over every semantic rule picks the route)"),
                             "learned")
        self.scoring.addItem(self.tr("nearest (the nearest examples decide)"), "nearest")
        self.min_probability = QDoubleSpinBox()
        self.min_probability.setRange(0.0, 1.0)
        self.min_probability.setSingleStep(0.05)
        self.min_probability.setDecimals(2)
        self.min_probability.setValue(0.5)
        self.min_probability.setToolTip(self.tr("learned: the classifier's probability for this route needed"))
        form = QFormLayout(self)
        form.addRow(self.tr("Examples"), self.examples)
        form.addRow(self.tr("Negatives"), self.negatives)
        form.addRow(self.tr("Threshold"), self.threshold)
        form.addRow(self.tr("Nearest examples averaged"), self.top_k)
        form.addRow(self.tr("Scoring"), self.scoring)
        form.addRow(self.tr("Minimum probability"), self.min_probability)
        self._quiet = QTimer(self)
        self._quiet.setSingleShot(True)
        self._quiet.setInterval(DEBOUNCE_MS)
        self._quiet.timeout.connect(self.changed)
        self.examples.textChanged.connect(self._quiet.start)
        self.negatives.textChanged.connect(self._quiet.start)
        self.threshold.editingFinished.connect(self.changed)
        self.top_k.editingFinished.connect(self.changed)
        self.scoring.activated.connect(self.changed)
        self.min_probability.editingFinished.connect(self.changed)
        self._loading = False
        self._margin = None

    def load(self, semantic: dict | None) -> None:
        self._loading = True
        try:
            semantic = semantic or {}
            self.examples.setPlainText("\n".join(semantic.get("examples") or []))
            self.negatives.setPlainText("\n".join(semantic.get("negatives") or []))
            threshold = semantic.get("threshold")
            self.threshold.setValue(AUTO if threshold in (None, "auto") else float(threshold))
            self.top_k.setValue(int(semantic.get("top_k", 1)))
            self.scoring.setCurrentIndex(max(0, self.scoring.findData(semantic.get("scoring", "learned"))))
            self.min_probability.setValue(float(semantic.get("min_probability", 0.5)))
            self._margin = semantic.get("margin")  # kept as written: not edited here yet
        finally:
            self._quiet.stop()
            self._loading = False

    def value(self) -> dict | None:
        """None when there are no examples: the rule has no semantic condition."""
        examples = _lines(self.examples.toPlainText())
        if not examples:
            return None
        out: dict = {"examples": examples}
        if self.threshold.value() > AUTO:
            out["threshold"] = round(self.threshold.value(), 3)
        if self.top_k.value() != 1:
            out["top_k"] = self.top_k.value()
        if self.scoring.currentData() != "learned":
            out["scoring"] = self.scoring.currentData()
        if round(self.min_probability.value(), 2) != 0.5:
            out["min_probability"] = round(self.min_probability.value(), 2)
        if self._margin:
            out["margin"] = self._margin
        negatives = _lines(self.negatives.toPlainText())
        if negatives:
            out["negatives"] = negatives
        return out

    def set_threshold(self, value: float) -> None:
        self.threshold.setValue(value)
        self.changed.emit()

    def set_min_probability(self, value: float) -> None:
        self.min_probability.setValue(value)
        self.changed.emit()

    @property
    def loading(self) -> bool:
        return self._loading


class SemanticScoreView(QWidget):
    """Live score of a typed prompt against the rule being edited, histograms, suggestions."""

    threshold_chosen = Signal(float)
    min_probability_chosen = Signal(float)
    answered = Signal(object)  # the engine's answer (dict) or the exception

    def __init__(self, client, parent: QWidget | None = None) -> None:
        """`client()`: the EngineClient to ask (QtNetwork, on this thread)."""
        super().__init__(parent)
        self._client = client
        self._semantic: dict | None = None
        self._others: list[dict] = []  # the other rules' {name, semantic}: a learned head's classes
        self._asked = 0      # questions asked; an answer carries the number it answers
        self._busy = False
        self._pending = False
        self.answer: dict | None = None

        self.prompt = QLineEdit()
        self.prompt.setPlaceholderText(self.tr("type a prompt to see its score"))
        self.score = QLabel(self.tr("Select a rule with semantic examples."))
        self.score.setWordWrap(True)
        self.plot = pg.PlotWidget()
        self.plot.setLabel("bottom", self.tr("cosine similarity to the nearest example"))
        self.plot.setLabel("left", self.tr("prompts"))
        self.plot.addLegend(offset=(5, 5))
        self.plot.setXRange(0, 1)
        self.curves = {}
        names = {"examples_leave_one_out": self.tr("examples (left out one at a time)"),
                 "negatives": self.tr("negatives"), "recent": self.tr("recent requests")}
        for key, colour in SERIES:
            self.curves[key] = self.plot.plot([0, 1], [0], stepMode="center", fillLevel=0,
                                              brush=pg.mkBrush(*colour), pen=pg.mkPen(colour[:3]),
                                              name=names[key])
        self.line = pg.InfiniteLine(0.5, angle=90, pen=pg.mkPen("k", width=2))
        self.plot.addItem(self.line)
        theme().follow(self.plot)
        self.mode = QComboBox()
        for key, label in (("target", self.tr("within my false-positive target")),
                           ("leave_one_out", self.tr("leave-one-out (every example passes)")),
                           ("best_f1", self.tr("best F1 against the negatives")),
                           ("precision", self.tr("the precision I pick"))):
            self.mode.addItem(label, key)
        self.mode.setCurrentIndex(0)
        self.false_positive = QSpinBox()
        self.false_positive.setRange(1, 50)
        self.false_positive.setValue(FALSE_POSITIVE)
        self.false_positive.setSuffix(" %")
        self.false_positive.setToolTip(self.tr("the share of negatives and background text a suggestion may let through"))
        self.precision = QDoubleSpinBox()
        self.precision.setRange(0.5, 1.0)
        self.precision.setSingleStep(0.01)
        self.precision.setValue(0.95)
        self.suggestion = QLabel("")
        self.suggestion.setWordWrap(True)
        self.misses = QLabel("")  # recent requests the rule missed, and examples that overlap
        self.misses.setWordWrap(True)
        self.use_btn = QPushButton(self.tr("Use this threshold"))
        self.use_btn.setEnabled(False)
        self.use_btn.clicked.connect(self._use_suggestion)
        self.use_probability_btn = QPushButton(self.tr("Use this minimum probability"))
        self.use_probability_btn.setEnabled(False)
        self.use_probability_btn.clicked.connect(self._use_probability)

        row = QHBoxLayout()
        row.addWidget(QLabel(self.tr("Suggest")))
        row.addWidget(self.mode, 1)
        row.addWidget(QLabel(self.tr("precision")))
        row.addWidget(self.precision)
        row.addWidget(QLabel(self.tr("false positives at most")))
        row.addWidget(self.false_positive)
        row.addWidget(self.use_btn)
        row.addWidget(self.use_probability_btn)
        layout = QVBoxLayout(self)
        layout.addWidget(self.prompt)
        layout.addWidget(self.score)
        layout.addWidget(self.plot, 1)
        layout.addLayout(row)
        layout.addWidget(self.suggestion)
        layout.addWidget(self.misses)

        self._quiet = QTimer(self)
        self._quiet.setSingleShot(True)
        self._quiet.setInterval(DEBOUNCE_MS)
        self._quiet.timeout.connect(self.refresh)
        self.prompt.textChanged.connect(self._quiet.start)
        self.mode.activated.connect(self._show_suggestion)
        self.precision.editingFinished.connect(self.refresh)
        self.false_positive.editingFinished.connect(self.refresh)

    def set_condition(self, semantic: dict | None, others: list[dict] | None = None) -> None:
        """The rule being edited changed (or another rule was selected); `others`: the other
        rules' {name, semantic}, scored together with it under learned scoring."""
        self._semantic = semantic
        self._others = others or []
        if semantic is None:
            self.answer = None
            self.score.setText(self.tr("This rule has no semantic examples."))
            self.use_btn.setEnabled(False)
            return
        if semantic.get("threshold") is not None:
            self.line.setValue(float(semantic["threshold"]))
        self._quiet.start()

    def refresh(self) -> None:
        if self._semantic is None:
            return
        if self._busy:  # one question at a time; ask again once the answer is in
            self._pending = True
            return
        self._busy, self._pending = True, False
        self._asked += 1
        prompt = self.prompt.text().strip()
        asked = self._asked
        call = calls.semantic_probe(self._semantic, [prompt] if prompt else [], 200,
                                    round(self.precision.value(), 3), self._others,
                                    self.false_positive.value() / 100)
        self._client().send(call, returned=lambda a: self._on_answer(asked, a),
                            errored=lambda e: self._on_error(asked, e))

    def _done(self) -> None:
        self._busy = False
        if self._pending:
            self.refresh()

    def _on_answer(self, asked: int, answer: dict) -> None:
        if not isValid(self.score):  # the panel closed while the engine was answering
            return
        self._done()
        if asked != self._asked:
            return
        self.answer = answer
        if answer.get("threshold") is not None:  # the calibrated one, when the rule has none
            self.line.setValue(float(answer["threshold"]))
        prompts = answer.get("prompts") or []
        if prompts:
            p = prompts[0]
            verdict = self.tr("holds") if p.get("holds") else self.tr("does not hold")
            text = self.tr("score {score:.3f} (threshold {threshold:.3f}): {verdict}; "
                           "nearest example: “{nearest}”").format(
                score=p["score"], threshold=p["threshold"], verdict=verdict,
                nearest=p["nearest_example"])
            if p.get("probability") is not None:
                picked = p["chosen"] if p["chosen"] is not None else self.tr("no route")
                text += self.tr("; probability {p:.2f} (needs {need:.2f}), the classifier picks {picked}").format(
                    p=p["probability"], need=p["min_probability"], picked=picked)
            self.score.setText(text)
        else:
            self.score.setText(self.tr("Type a prompt to see its score."))
        for key, _colour in SERIES:
            counts, _edges = np.histogram(answer.get("scores", {}).get(key) or [], bins=BINS)
            self.curves[key].setData(BINS, counts)
        self._show_suggestion()
        self._show_misses(answer)
        self.answered.emit(answer)

    def _on_error(self, asked: int, exc: Exception) -> None:
        if not isValid(self.score):
            return
        self._done()
        if asked != self._asked:
            return
        describe = getattr(exc, "describe", None)
        self.score.setText(self.tr("scoring failed: {error}").format(
            error=describe() if describe else str(exc)))
        self.answered.emit(exc)

    def suggested(self) -> dict | None:
        if not self.answer:
            return None
        if self.mode.currentData() == "target":
            return self.answer.get("target_suggestion")
        return (self.answer.get("suggestions") or {}).get(self.mode.currentData())

    def _target_text(self, s: dict) -> list[str]:
        parts = [self.tr("threshold {t:.3f} keeps false positives within {target:.0%}: "
                         "{bg:.1%} of the background corpus passes").format(
            t=s["threshold"], target=s["target"], bg=s["background_rate"])]
        if s.get("negatives_rate") is not None:
            parts.append(self.tr("{neg:.0%} of the negatives").format(neg=s["negatives_rate"]))
        parts.append(self.tr("recall {r:.0%} of the examples").format(r=s["recall"]))
        if "examples" in s["too_few"]:
            parts.append(self.tr("too few examples to promise it (8 or more needed)"))
        if "negatives" in s["too_few"]:
            parts.append(self.tr("too few negatives to promise it ({n} or more needed): the estimate "
                                 "rests on the background corpus").format(n=s["negatives_needed"]))
        return parts

    def suggested_min_probability(self) -> float | None:
        return (self.answer or {}).get("min_probability_suggestion")

    def _show_suggestion(self, *_args) -> None:
        s = self.suggested()
        self.use_btn.setEnabled(s is not None)
        self.use_probability_btn.setEnabled(self.suggested_min_probability() is not None)
        if s is None:
            self.suggestion.setText(self.tr("No suggestion: add at least two examples."))
            return
        if self.mode.currentData() == "target":
            parts = self._target_text(s)
        else:
            parts = [self.tr("threshold {t:.3f}: recall {r:.0%} of the examples").format(
                t=s["threshold"], r=s["recall"])]
        if s.get("precision") is not None and self.mode.currentData() != "target":
            parts.append(self.tr("precision {p:.0%} against the negatives").format(p=s["precision"]))
        if s.get("recent_share") is not None:
            parts.append(self.tr("{share:.0%} of recent requests would pass").format(share=s["recent_share"]))
        learned = self.suggested_min_probability()
        if learned is not None:
            parts.append(self.tr("minimum probability {p:.2f} (cross-validated over {n} rules' examples, "
                                 "false positives within {target:.0%})").format(
                p=learned, n=self.answer["rules_in_head"], target=self.answer.get("false_positive", 0.05)))
        self.suggestion.setText("; ".join(parts))

    def _show_misses(self, answer: dict) -> None:
        lines = []
        misses = answer.get("near_misses") or []
        if misses:
            lines.append(self.tr("Closest recent requests this rule did not take:"))
            lines += [self.tr("“{text}”: {reason}").format(text=m["text"][:80], reason=m["reason"]) for m in misses]
        for o in answer.get("overlaps") or []:
            lines.append(self.tr("Example “{mine}” overlaps rule {rule}'s “{theirs}” ({sim:.2f})").format(
                mine=o["example"], rule=o["rule"], theirs=o["other_example"], sim=o["similarity"]))
        self.misses.setText("\n".join(lines))

    def _use_probability(self) -> None:
        p = self.suggested_min_probability()
        if p is not None:
            self.min_probability_chosen.emit(float(p))

    def _use_suggestion(self) -> None:
        s = self.suggested()
        if s is not None:
            self.line.setValue(s["threshold"])
            self.threshold_chosen.emit(float(s["threshold"]))
