"""Changes to the registry as plain data: an edited entry merged over the one read, a model replaced
in a config, a renamed model's references rewired. No Qt; the Models panel and dialog use it.

The rule every function keeps: what the user did not change is written back exactly as it was
read, including fields no form shows (sampling, max_output_tokens, embedding, ...).
"""
from __future__ import annotations

import copy

from laya_desktop.config.validate import model_keys_for
from laya_desktop.gui.form_merge import merge_changes


def merge_edit(read: dict, shown: dict, now: dict) -> dict:
    """`read` with the fields the user changed in the form (form_merge); a field that no longer
    applies to the (changed) backend goes too: the engine would refuse it."""
    out = merge_changes(read, shown, now)
    if out.get("backend") != read.get("backend"):
        applies = set(model_keys_for(out.get("backend", "")))
        out = {k: v for k, v in out.items() if k in applies}
    return out


def rename_references(config: dict, old: str, new: str) -> None:
    """Every rule field that names a model: target, targets (names or {model, ...}), fallback.

    `match.model` is left alone: it holds names clients ask for, which a rename does not change."""
    for route in config.get("routes", []):
        if route.get("target") == old:
            route["target"] = new
        if "fallback" in route:
            route["fallback"] = [new if name == old else name for name in route["fallback"] or []]
        if "targets" in route:
            route["targets"] = [_renamed_target(t, old, new) for t in route["targets"] or []]


def _renamed_target(target, old: str, new: str):
    if isinstance(target, dict):
        return {**target, "model": new} if target.get("model") == old else target
    return new if target == old else target


def replace_model(config: dict, name: str, entry: dict) -> dict:
    """A copy of `config` with the model `name` replaced by `entry`, in place in the list."""
    out = copy.deepcopy(config)
    out["models"] = [copy.deepcopy(entry) if m.get("name") == name else m
                     for m in out.get("models", [])]
    if entry.get("name") != name:
        rename_references(out, name, entry["name"])
    return out
