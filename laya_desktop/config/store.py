"""Finding, loading and atomically saving models.yaml."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from laya_desktop.config import yaml12
from laya_desktop.config.schema import (
    AFFINITY_TTL_S, Config, MemoryConfig, ModelConfig, RouteConfig, SchedulerConfig, SemanticMatch,
    ServerConfig,
)
from laya_desktop.config.validate import ConfigError, model_keys_for, validate_config

CONFIG_NAME = "models.yaml"


class ConfigInvalid(Exception):
    def __init__(self, errors: list[ConfigError], path: Path | str | None = None):
        self.errors = list(errors)
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{len(self.errors)} error(s) in the config:\n"
                         + "\n".join(f"  {e}" for e in self.errors))


class _StrictLoader(yaml12.SafeLoader):
    """The YAML 1.2 safe loader, refusing duplicate keys: PyYAML would silently keep the last one."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def user_config_dir() -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Laya"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "Laya"
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
    return base / "laya"


def default_config_text() -> str:
    from importlib import resources  # only when there is no models.yaml yet
    return resources.files("laya_desktop.config").joinpath("default_models.yaml").read_text("utf-8")


def user_config_path() -> Path:
    """The user's models.yaml, written from the default on first use."""
    user = user_config_dir() / CONFIG_NAME
    if not user.exists():
        user.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(default_config_text(), user)
    return user


def find_config_path(explicit: str | os.PathLike | None = None) -> Path:
    """--config if given, else ./models.yaml, else the user's copy (created from the default).

    For the command-line tools (`laya serve`, `check`, `route`), which are run from a project folder.
    """
    if explicit:
        return Path(explicit)
    local = Path.cwd() / CONFIG_NAME
    if local.is_file():
        return local
    return user_config_path()


def app_config_path(explicit: str | os.PathLike | None = None) -> Path:
    """--config if given, else the user's copy. The desktop app ignores ./models.yaml: an app is
    launched from wherever a launcher or terminal happens to be, which must not pick its setup."""
    return Path(explicit) if explicit else user_config_path()


def _yaml_error(exc: yaml.YAMLError) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return ConfigError("", f"YAML syntax error: {problem}")
    return ConfigError("", f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {problem}")


def parse_config_text(text: str) -> tuple[Config | None, list[ConfigError]]:
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        return None, [_yaml_error(exc)]
    return validate_config(raw)


def load_config(path: str | os.PathLike) -> Config:
    """Read and validate a models.yaml; raises ConfigInvalid with every error found."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigInvalid([ConfigError("", f"cannot read {path}: {reason}")], path) from exc
    config, errors = parse_config_text(text)
    if errors:
        raise ConfigInvalid(errors, path)
    assert config is not None
    return config


def _route_to_dict(route: RouteConfig) -> dict[str, Any]:
    match = {k: v for k, v in dataclasses.asdict(route.match).items() if v not in (None, [])}
    out = {"name": route.name, "target": route.target, "enabled": route.enabled,
           "match": match, "fallback": list(route.fallback)}
    if route.targets:  # `target` stays too (the first one): older readers and the GUI show it
        out["targets"] = [t.model if t.weight is None and t.max_active is None else
                          {k: v for k, v in dataclasses.asdict(t).items() if v is not None}
                          for t in route.targets]
    if route.strategy != "first_available":
        out["strategy"] = route.strategy
    if route.sampling:
        out["sampling"] = dict(route.sampling)
    if route.affinity is not None:
        out["affinity"] = route.affinity
    if route.affinity_ttl_s != AFFINITY_TTL_S:
        out["affinity_ttl_s"] = route.affinity_ttl_s
    return out


def config_to_dict(config: Config) -> dict[str, Any]:
    """A plain dict shaped like models.yaml: only the fields each backend uses, no null values."""
    def section(obj) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(obj).items() if v is not None and v != {}}

    models = []
    for model in config.models:
        values = section(model)
        models.append({k: values[k] for k in model_keys_for(model.backend) if k in values})
    return {
        "server": section(config.server),
        "models": models,
        "routes": [_route_to_dict(r) for r in config.routes],
        "scheduler": section(config.scheduler),
        "memory": section(config.memory),
    }


def dump_config_text(config_or_dict: Config | dict) -> str:
    data = config_to_dict(config_or_dict) if isinstance(config_or_dict, Config) else config_or_dict
    return yaml12.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def config_defaults() -> dict[str, Any]:
    """What each models.yaml key means when left out, shaped like config_to_dict's result."""
    from laya_desktop.config.roundtrip import EachItem  # ruamel.yaml: when saving, not loading
    model = dataclasses.asdict(ModelConfig(name="", backend=""))
    route = dataclasses.asdict(RouteConfig(name="", target=""))
    for required in ("name", "backend", "target"):
        model.pop(required, None)
        route.pop(required, None)
    # a semantic condition's settings left out of the file stay out when it is saved
    route["match"]["semantic"] = dataclasses.asdict(SemanticMatch())
    return {
        "server": dataclasses.asdict(ServerConfig()),
        "models": EachItem(model),
        "routes": EachItem(route),
        "scheduler": dataclasses.asdict(SchedulerConfig()),
        "memory": dataclasses.asdict(MemoryConfig()),
    }


def save_config_atomic(config_or_dict: Config | dict, path: str | os.PathLike) -> None:
    """Write the config so that readers see the old file or the new one, never a partial one.

    An existing models.yaml is updated in place, keeping its comments and layout.
    """
    data = config_to_dict(config_or_dict) if isinstance(config_or_dict, Config) else config_or_dict
    path = Path(path)
    updated = _updated_text(data, path)
    _write_atomic(updated if updated is not None else dump_config_text(data), path)


def _as_the_file_spells_it(data: dict, old_text: str) -> dict:
    """`data` without the `target` that config_to_dict spells out beside `targets` (the first
    one), for each rule the file gives by its `targets` alone: the save must not add it."""
    try:
        old = yaml12.safe_load(old_text)
    except yaml.YAMLError:
        return data
    routes = old.get("routes") if isinstance(old, dict) else None
    implied = {r.get("name") for r in routes or [] if isinstance(r, dict)
               and "targets" in r and "target" not in r}
    if not implied:
        return data
    out = dict(data)
    out["routes"] = [{k: v for k, v in r.items() if k != "target"}
                     if r.get("name") in implied and r.get("targets") else r
                     for r in data.get("routes", [])]
    return out


def _updated_text(data: dict, path: Path) -> str | None:
    """The file at `path` changed to hold `data`; None when there is no such file to keep (missing,
    unreadable, not a YAML mapping) or `data` is not a valid config."""
    expected, errors = validate_config(data)
    if errors:
        return None  # the result is checked against `expected` below; without it, dump plainly
    try:
        old = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    text = update_yaml_text(old, _as_the_file_spells_it(data, old), config_defaults())
    # A wrong file is worse than a file without comments: never write one that reads differently.
    if text is None or parse_config_text(text)[0] != expected:
        return None
    return text


def update_yaml_text(old_text: str, new: dict, defaults: dict) -> str | None:
    """roundtrip.update_yaml_text, imported on the first save: ruamel.yaml (tens of ms) stays
    off the path that only loads the config, the engine's start-up."""
    from laya_desktop.config import roundtrip
    return roundtrip.update_yaml_text(old_text, new, defaults)


def _write_atomic(text: str, path: Path) -> None:
    path = Path(os.path.realpath(path))  # replace a symlink's target, not the link itself
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        # A new file keeps mkstemp's 0600: the config may hold server.api_key.
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

