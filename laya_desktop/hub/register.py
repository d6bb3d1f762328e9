"""From a finished download to a model in models.yaml, comments kept (config/store.py's
comment-keeping save): settings from the file's own metadata and Laya's estimate, and optionally
a rule that sends requests to it.

Settings chosen: n_ctx = the model's trained context, at most DEFAULT_N_CTX; parallel = the
backend's default; with an NVIDIA GPU whose free memory takes the whole model, every layer on it
(n_gpu_layers -1). When the estimate does not fit this machine, n_ctx is halved (down to
MIN_N_CTX), then parallel, until it does. The chat template is the GGUF's own
(tokenizer.chat_template) where it has one; without, the runner's default by architecture.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from laya_desktop.config.store import config_to_dict, load_config, save_config_atomic
from laya_desktop.config.validate import validate_config
from laya_desktop.hub.fit import GIB, Machine, judge_info, this_machine
from laya_desktop.runners.gguf_info import read_gguf_info

DEFAULT_N_CTX = 8192
MIN_N_CTX = 2048
GGUF_PARALLEL = 4
MLX_PARALLEL = 1


@dataclass
class ModelSettings:
    entry: dict
    notes: list[str] = field(default_factory=list)


def model_name_for(local_path: Path, taken: set[str]) -> str:
    """A short, unique, lower-case name from the file (or folder) name: 'qwen2.5-coder-7b-q4_k_m'."""
    stem = local_path.name
    stem = re.sub(r"-\d{5}-of-\d{5}(?=\.gguf$)", "", stem, flags=re.IGNORECASE)
    stem = re.sub(r"\.gguf$", "", stem, flags=re.IGNORECASE)
    base = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._") or "model"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def settings_for(local_path: Path, *, name: str, n_ctx: int | None = None,
                 parallel: int | None = None, machine: Machine | None = None,
                 reserved_system_gb: float = 2.0) -> ModelSettings:
    machine = machine or this_machine()
    if local_path.is_dir():
        return _mlx_settings(local_path, name, n_ctx, parallel)
    info = read_gguf_info(local_path)
    notes = []
    ctx = n_ctx or min(info.context_length or DEFAULT_N_CTX, DEFAULT_N_CTX)
    par = parallel or GGUF_PARALLEL
    reserved = int(reserved_system_gb * GIB)
    gpu_layers = 0
    if machine.has_gpu:
        full = judge_info(info, n_ctx=ctx, parallel=par, n_gpu_layers=-1, machine=machine,
                          reserved=reserved)
        if full.verdict != "does_not_fit":
            gpu_layers = -1
            notes.append(f"all layers on {machine.gpu_name}")
    fit = judge_info(info, n_ctx=ctx, parallel=par, n_gpu_layers=gpu_layers, machine=machine,
                     reserved=reserved)
    while fit.verdict == "does_not_fit" and n_ctx is None and ctx > MIN_N_CTX:
        ctx //= 2
        fit = judge_info(info, n_ctx=ctx, parallel=par, n_gpu_layers=gpu_layers,
                         machine=machine, reserved=reserved)
    while fit.verdict == "does_not_fit" and parallel is None and par > 1:
        par //= 2
        fit = judge_info(info, n_ctx=ctx, parallel=par, n_gpu_layers=gpu_layers,
                         machine=machine, reserved=reserved)
    notes.append(f"{fit.verdict.replace('_', ' ')}: {fit.reason}")
    notes.append("chat template: the GGUF's own" if info.has_chat_template else
                 "chat template: none in the file, the runner's default for "
                 f"{info.architecture}")
    entry = {"name": name, "backend": "llama_cpp", "path": str(local_path), "n_ctx": ctx,
             "parallel": par, "n_gpu_layers": gpu_layers}
    return ModelSettings(entry, notes)


def _mlx_settings(folder: Path, name: str, n_ctx: int | None, parallel: int | None) -> ModelSettings:
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        cfg = {**cfg, **cfg.get("text_config", {})}
        trained = int(cfg.get("max_position_embeddings") or DEFAULT_N_CTX)
    except (OSError, ValueError, TypeError):
        trained = DEFAULT_N_CTX
    has_template = (folder / "chat_template.jinja").is_file() or _tokenizer_has_template(folder)
    notes = ["chat template: the tokenizer's own" if has_template else
             "chat template: none in the folder, mlx-lm's default"]
    entry = {"name": name, "backend": "mlx", "path": str(folder),
             "n_ctx": n_ctx or min(trained, DEFAULT_N_CTX), "parallel": parallel or MLX_PARALLEL}
    return ModelSettings(entry, notes)


def _tokenizer_has_template(folder: Path) -> bool:
    try:
        return bool(json.loads((folder / "tokenizer_config.json").read_text()).get("chat_template"))
    except (OSError, ValueError, AttributeError):
        return False


def with_model(config: dict, entry: dict, rule: str | None) -> dict:
    """`config` (a models.yaml dict) with `entry` added and, for `rule`, that rule sending its
    requests to it: an existing rule is re-targeted (its old target becomes its first fallback);
    a new `default` is a catch-all at the end; another new rule matches the tag of its name and
    goes before the catch-all rules."""
    out = {**config, "models": [*config.get("models", []), entry]}
    return with_rule(out, entry["name"], rule) if rule else out


def with_rule(config: dict, name: str, rule: str) -> dict:
    """`config` with rule `rule` sending its requests to model `name` (see with_model)."""
    out = dict(config)
    routes = [dict(r) for r in config.get("routes", [])]
    for r in routes:
        if r.get("name") == rule:
            old = r.get("target")
            r["target"] = name
            if old and old != name:
                r["fallback"] = [old] + [f for f in r.get("fallback", []) if f not in (old, name)]
            if r.get("targets"):
                r["targets"] = [name] + [t for t in r["targets"]
                                         if (t.get("model") if isinstance(t, dict) else t) != name]
            break
    else:
        if rule == "default":
            routes.append({"name": rule, "target": name})
        else:
            new = {"name": rule, "target": name, "match": {"tags": [rule]}}
            catch_all = [i for i, r in enumerate(routes) if not r.get("match")]
            routes.insert(catch_all[0] if catch_all else len(routes), new)
    out["routes"] = routes
    return out


def add_downloaded_model(config_path: Path, local_path: Path, *, name: str | None = None,
                         rule: str | None = None, n_ctx: int | None = None,
                         parallel: int | None = None, machine: Machine | None = None) -> str:
    """register_download without its notes: the model's name."""
    return register_download(config_path, local_path, name=name, rule=rule, n_ctx=n_ctx,
                             parallel=parallel, machine=machine)[0]


def register_download(config_path: Path, local_path: Path, *, name: str | None = None,
                      rule: str | None = None, n_ctx: int | None = None,
                      parallel: int | None = None,
                      machine: Machine | None = None) -> tuple[str, list[str]]:
    """Add the model at `local_path` (a .gguf, the first part of a multi-part one, or an MLX
    folder) to the models.yaml at `config_path`, keeping its comments; the model's name and
    notes on the settings chosen (fit, GPU, chat template).
    ValueError (with the config's own path-qualified errors) when the result would be invalid;
    the file is then left as it was."""
    config_path = Path(config_path)
    current = load_config(config_path)
    data = config_to_dict(current)
    new, name, notes = registration(data, Path(local_path), name=name, rule=rule, n_ctx=n_ctx,
                                    parallel=parallel, machine=machine,
                                    reserved_system_gb=current.memory.reserved_system_gb)
    if new != data:
        _save_valid(new, config_path)
    return name, notes


def registration(data: dict, local_path: Path, *, name: str | None = None,
                 rule: str | None = None, n_ctx: int | None = None, parallel: int | None = None,
                 machine: Machine | None = None,
                 reserved_system_gb: float = 2.0) -> tuple[dict, str, list[str]]:
    """(the config dict with the model added, its name, notes): the pure part of registering,
    which the engine applies through its own config path. A file already registered (pulled
    again) keeps its entry as the user left it; only the rule is applied."""
    models = data.get("models", [])
    known = next((m["name"] for m in models
                  if m.get("path") and Path(m["path"]).expanduser() == local_path), None)
    if known is not None:
        return (with_rule(data, known, rule) if rule else data), known, \
            [f"already in models.yaml as {known!r}"]
    taken = {m["name"] for m in models}
    if name is not None and name in taken:
        raise ValueError(f"models.yaml already has a model named {name!r}; choose another name")
    name = name or model_name_for(local_path, taken)
    settings = settings_for(local_path, name=name, n_ctx=n_ctx, parallel=parallel,
                            machine=machine, reserved_system_gb=reserved_system_gb)
    return with_model(data, settings.entry, rule), name, settings.notes


def _save_valid(new: dict, config_path: Path) -> None:
    _, errors = validate_config(new)
    if errors:
        raise ValueError("; ".join(f"{e.path}: {e.message}" for e in errors))
    save_config_atomic(new, config_path)


def describe(config_path: Path, name: str) -> dict:
    """The model entry `name` as models.yaml now holds it (for the CLI's and engine's answers)."""
    for m in config_to_dict(load_config(config_path)).get("models", []):
        if m.get("name") == name:
            return m
    return {}
