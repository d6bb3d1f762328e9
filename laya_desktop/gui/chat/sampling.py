"""The chat's sampling controls: max tokens, temperature, repeat penalty; what they add to a request.

The repeat penalty is on by default (1.1, as Ollama and LM Studio do): small models otherwise loop
one line until max tokens. 1.0 turns it off. Temperature is left to the model unless set.
"Stop loops" (on by default) lets the panel end a reply that repeats itself anyway.
"""
from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QWidget

DEFAULT_REPEAT_PENALTY = 1.1
DEFAULT_MAX_TOKENS = 1024
_UNSET_TEMPERATURE = -0.05      # the spin box's minimum, shown as "model default"


class SamplingControls(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 32768)
        self.max_tokens.setValue(DEFAULT_MAX_TOKENS)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(_UNSET_TEMPERATURE, 2.0)
        self.temperature.setSingleStep(0.05)
        self.temperature.setDecimals(2)
        self.temperature.setSpecialValueText(self.tr("model default"))
        self.temperature.setValue(_UNSET_TEMPERATURE)
        self.repeat_penalty = QDoubleSpinBox()
        self.repeat_penalty.setRange(1.0, 2.0)
        self.repeat_penalty.setSingleStep(0.05)
        self.repeat_penalty.setDecimals(2)
        self.repeat_penalty.setValue(DEFAULT_REPEAT_PENALTY)
        self.repeat_penalty.setToolTip(self.tr("makes repeating a recent token less likely; 1.00 = off"))
        self.stop_loops = QCheckBox(self.tr("Stop loops"))
        self.stop_loops.setChecked(True)
        self.stop_loops.setToolTip(self.tr("stop a reply that keeps repeating the same text"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for label, w in ((self.tr("Max tokens"), self.max_tokens),
                         (self.tr("Temperature"), self.temperature),
                         (self.tr("Repeat penalty"), self.repeat_penalty)):
            layout.addWidget(QLabel(label))
            layout.addWidget(w)
        layout.addWidget(self.stop_loops)

    def request_fields(self) -> dict:
        """The sampling fields of a chat request; a request value overrides the model's default."""
        fields = {"max_tokens": self.max_tokens.value(),
                  "repeat_penalty": round(self.repeat_penalty.value(), 2)}
        if self.temperature.value() > _UNSET_TEMPERATURE:
            fields["temperature"] = round(self.temperature.value(), 2)
        return fields

    def restore(self, saved: dict) -> None:
        """Set the controls from a reopened conversation's settings; unknown or bad values are skipped."""
        for key, box in (("max_tokens", self.max_tokens), ("temperature", self.temperature),
                         ("repeat_penalty", self.repeat_penalty)):
            value = saved.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                box.setValue(int(value) if box is self.max_tokens else float(value))
        if isinstance(saved.get("stop_loops"), bool):
            self.stop_loops.setChecked(saved["stop_loops"])
        if "temperature" not in saved:
            self.temperature.setValue(_UNSET_TEMPERATURE)
