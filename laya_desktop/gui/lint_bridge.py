"""Validation errors and routing lint for an edited (not yet applied) config, keyed by rule name.

Both checks are pure and take microseconds, so they run on the GUI thread as the user edits.
"""
from __future__ import annotations

import re

from laya_desktop.config.validate import validate_config
from laya_desktop.routing.lint import lint

_ROUTE_PATH = re.compile(r"^routes\[(\d+)\]")


def rule_warnings(config: dict) -> tuple[dict[str, list[str]], list[str]]:
    """(messages per rule name, messages that belong to no rule)."""
    routes = config.get("routes", [])
    names = [r.get("name", "") for r in routes]
    per_rule: dict[str, list[str]] = {}
    general: list[str] = []

    def add(path: str, message: str) -> None:
        m = _ROUTE_PATH.match(path or "")
        if m and int(m.group(1)) < len(names):
            per_rule.setdefault(names[int(m.group(1))], []).append(message)
        elif path.startswith("routes") or not path.startswith("models"):
            general.append(f"{path}: {message}" if path else message)

    parsed, errors = validate_config(config)
    for err in errors:
        add(err.path, err.message)
    if parsed is None:
        return per_rule, general
    for warning in lint(parsed):
        rule = getattr(warning, "rule", None)
        message = getattr(warning, "message", str(warning))
        shadowed_by = getattr(warning, "shadowed_by", None)
        if shadowed_by and shadowed_by not in message:
            message = f"{message} (shadowed by '{shadowed_by}')"
        if rule in names:
            per_rule.setdefault(rule, []).append(message)
        else:
            add(getattr(warning, "path", "") or "", message)
    return per_rule, general
