"""Which language the window speaks, and loading its Qt translation (.qm) files.

The choice, first that is set: `laya gui --lang`, $LAYA_LANG, View > Language (QSettings), the
system locale. The .qm files are compiled from laya_desktop/gui/i18n/*.ts by `make translations`
(pyside6-lrelease, run by `make install`/`make run`); without them the window stays in English.
Messages that come from the engine or the config validator (errors, lint) stay in English, as
the engine's API does.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QSettings, QTranslator

from laya_desktop.config.store import user_config_dir

ENGLISH, SIMPLIFIED_CHINESE = "en", "zh_CN"
# Each language's name in that language: a reader must find their own in the menu.
LANGUAGES = {ENGLISH: "English", SIMPLIFIED_CHINESE: "简体中文"}
SYSTEM = "system"
ENV_VAR = "LAYA_LANG"
SETTINGS_KEY = "ui/language"
I18N_DIR = Path(__file__).resolve().parent / "i18n"


def normalize(name: str | None) -> str | None:
    """'zh', 'zh_CN.UTF-8', 'zh-Hans' -> 'zh_CN'; 'en_US', 'C' -> 'en'; 'system' or unknown -> None."""
    if not name:
        return None
    base = name.strip().split(".")[0].replace("-", "_").lower()
    if base.startswith("zh"):
        return SIMPLIFIED_CHINESE  # the one Chinese translation; Traditional readers get it too
    if base in ("c", "posix") or base.startswith("en"):
        return ENGLISH
    return None


def choose_language(cli: str | None, env: str | None, saved: str | None, system: str) -> str:
    for choice in (cli, env, saved):
        lang = normalize(choice)
        if lang:
            return lang
    return normalize(system) or ENGLISH


def settings() -> QSettings:
    return QSettings(str(user_config_dir() / "app.ini"), QSettings.Format.IniFormat)


def saved_language() -> str:
    value = settings().value(SETTINGS_KEY, SYSTEM)
    return str(value) if value else SYSTEM


def save_language(choice: str) -> None:
    s = settings()
    s.setValue(SETTINGS_KEY, choice)
    s.sync()


def resolve_language(cli: str | None = None) -> str:
    return choose_language(cli, os.environ.get(ENV_VAR), saved_language(), QLocale.system().name())


def install_translators(app: QCoreApplication, language: str, folder: Path | None = None) -> bool:
    """Load Laya's and Qt's own translations (dialog buttons) for `language`; False when Laya's
    .qm is missing. English needs none."""
    QLocale.setDefault(QLocale(language))
    if language == ENGLISH:
        return True
    translators = []
    laya = QTranslator(app)
    if laya.load(f"laya_{language}", str(folder or I18N_DIR)):
        translators.append(laya)
    qt = QTranslator(app)
    if qt.load(f"qtbase_{language}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        translators.append(qt)
    for translator in translators:
        app.installTranslator(translator)
    app._laya_translators = translators  # a translator must outlive its installation
    return laya in translators
