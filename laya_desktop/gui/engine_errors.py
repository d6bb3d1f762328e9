"""The engine's error answers as `EngineError`, with its message and, for a refused config, its
path-qualified error list, so that panels can show them as they are. Qt-free."""
from __future__ import annotations

import json


class EngineError(Exception):
    def __init__(self, message: str, status: int | None = None, kind: str | None = None,
                 errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.errors = status, kind, errors or []

    def describe(self) -> str:
        lines = [str(self)]
        lines += [f"{e.get('path', '')}: {e.get('message', '')}" for e in self.errors]
        return "\n".join(lines)


def error_of(status: int, body: bytes) -> EngineError | None:
    """The error an answer with this status and body stands for; None below 400."""
    if status < 400:
        return None
    try:
        err = json.loads(body).get("error", {})
    except (ValueError, AttributeError):
        err = {}
    if not isinstance(err, dict):
        err = {"message": str(err)}
    return EngineError(err.get("message") or f"HTTP {status}", status,
                       err.get("type") or err.get("code"), err.get("errors"))
