"""The reasons and warnings of runners/mlx_folder.py in the user's language.

The reader is Qt-free and speaks English; its templates are the catalogue's source strings.
QT_TRANSLATE_NOOP lists them here so that lupdate keeps them.
"""
from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from laya_desktop.runners.mlx_folder import NotAnMlxModel

CONTEXT = "MlxFolder"
SOURCES = (
    QT_TRANSLATE_NOOP("MlxFolder", "choose the model folder first"),
    QT_TRANSLATE_NOOP("MlxFolder", "(add a .gguf file as a GGUF model)"),
    QT_TRANSLATE_NOOP("MlxFolder", "{path} is a file; an MLX model is a folder with config.json and "
                                   "*.safetensors"),
    QT_TRANSLATE_NOOP("MlxFolder", "(it holds .gguf files: add them as GGUF models)"),
    QT_TRANSLATE_NOOP("MlxFolder", "no *.safetensors weights in {path}"),
    QT_TRANSLATE_NOOP("MlxFolder", "no tokenizer file (tokenizer.json or tokenizer.model): mlx-lm "
                                   "may fail to load it"),
    QT_TRANSLATE_NOOP("MlxFolder", "no config.json in {path}"),
    QT_TRANSLATE_NOOP("MlxFolder", "config.json cannot be read: {error}"),
    QT_TRANSLATE_NOOP("MlxFolder", "config.json does not hold a JSON object"),
)


def translated_text(text: str) -> str:
    """A warning of the reader; text the catalogue does not hold comes back as it is."""
    return QCoreApplication.translate(CONTEXT, text)


def translated(exc: NotAnMlxModel) -> NotAnMlxModel:
    """The same reason in the user's language."""
    text = translated_text(exc.template)
    if exc.fields:
        text = text.format(**exc.fields)
    if exc.hint:
        text = f"{text} {translated_text(exc.hint)}"
    return NotAnMlxModel(text)
