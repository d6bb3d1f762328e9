"""`laya check`: validation errors (exit 1), then routing lint warnings (exit 0)."""
from __future__ import annotations

import argparse

from laya_desktop.config.store import ConfigInvalid, find_config_path, load_config
from laya_desktop.routing.lint import lint


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def run_check(args: argparse.Namespace) -> int:
    path = find_config_path(getattr(args, "config", None))
    try:
        config = load_config(path)
    except ConfigInvalid as exc:
        for error in exc.errors:
            print(f"error: {error}")
        print(f"{path}: invalid, {_plural(len(exc.errors), 'error')}")
        return 1
    warnings = list(lint(config))
    for warning in warnings:
        print(f"warning: {warning.path}: {warning.message}")
    summary = f"{_plural(len(config.models), 'model')}, {_plural(len(config.routes), 'route')}"
    print(f"{path}: ok ({summary}), {_plural(len(warnings), 'warning')}")
    return 0
