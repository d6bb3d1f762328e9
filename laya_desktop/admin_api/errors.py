"""The engine's error answers as `AdminError`: its message, code and, for a refused config, the
path-qualified error list, so that callers can show them as they are."""
from __future__ import annotations

import json


class AdminError(Exception):
    """`kind`: the error's type (else its code) from the engine, or the sender's own reason for
    having no answer ("timeout", "network", "aborted")."""

    def __init__(self, message: str, status: int | None = None, kind: str | None = None,
                 errors: list[dict] | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.errors = status, kind, errors or []
        self.code = code if code is not None else kind

    def describe(self) -> str:
        lines = [str(self)]
        lines += [f"{e.get('path', '')}: {e.get('message', '')}" for e in self.errors]
        return "\n".join(lines)


def error_of(status: int, body: bytes) -> AdminError | None:
    """The error an answer with this status and body stands for; None below 400."""
    if status < 400:
        return None
    try:
        err = json.loads(body).get("error", {})
    except (ValueError, AttributeError):
        err = {}
    if not isinstance(err, dict):
        err = {"message": str(err)}
    return AdminError(err.get("message") or f"HTTP {status}", status,
                      err.get("type") or err.get("code"), err.get("errors"), err.get("code"))
