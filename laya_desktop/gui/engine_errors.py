"""The engine's error answers, as the GUI names them: admin_api's AdminError."""
from __future__ import annotations

from laya_desktop.admin_api.errors import AdminError as EngineError
from laya_desktop.admin_api.errors import error_of

__all__ = ["EngineError", "error_of"]
