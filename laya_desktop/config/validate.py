"""Raw models.yaml data (dicts and lists) -> Config, reporting every error with its path.

Validation never stops at the first error and never falls back to a default for a bad value: a
user fixing a file by hand should see the whole list at once (llama-swap does the same).
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from laya_desktop.config.app_token import ENV as APP_TOKEN_ENV
from laya_desktop.config.sampling import KNOBS
from laya_desktop.config.schema import (
    BACKENDS, HEALTH_PROBES, KV_CACHE_TYPES, LOCAL_BACKENDS, Config, HealthConfig, MemoryConfig, ModelConfig, PromptCacheConfig,
    RouteConfig, SEMANTIC_SCORINGS, STRATEGIES, RouteMatch, SemanticMatch, RouteTarget, SchedulerConfig,
    ServerConfig,
)

TOP_LEVEL_KEYS = ("server", "models", "routes", "scheduler", "memory")
MATCH_LIST_KEYS = ("tags", "keywords", "model", "path")
MATCH_KEYS = ("tags", "keywords", "min_prompt_chars", "max_prompt_chars", "model", "path", "semantic")
SEMANTIC_KEYS = ("examples", "negatives", "threshold", "top_k", "margin", "scoring", "min_probability")
ROUTE_KEYS = ("name", "target", "enabled", "match", "fallback", "targets", "strategy", "sampling",
              "affinity", "affinity_ttl_s")
TARGET_KEYS = ("model", "weight", "max_active")


@dataclass(frozen=True)
class ConfigError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


Check = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class _Field:
    kind: str  # "int" | "number" | "bool" | "str"
    nullable: bool = False
    check: Check | None = None


_KIND_NAMES = {"int": "an integer", "number": "a number", "bool": "true or false",
               "str": "a non-empty string", "str_list": "a list of non-empty strings",
               "mapping": "a mapping"}


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "mapping":
        return isinstance(value, dict)
    if kind == "str_list":
        return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    if kind == "int":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, (int, float))
    return isinstance(value, str) and value.strip() != ""


def _at_least(low: float) -> Check:
    return lambda v: None if v >= low else f"must be at least {low}, got {_show(v)}"


def _between(low: int, high: int) -> Check:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}, got {_show(v)}"


def _above_zero_up_to(high: float) -> Check:
    return lambda v: None if 0 < v <= high else f"must be greater than 0 and at most {high}, got {_show(v)}"


def _choice(label: str, choices: tuple[str, ...]) -> Check:
    return lambda v: None if v in choices else f"unknown {label} {v!r} (valid: {', '.join(choices)})"


def _origins(values: list[str]) -> str | None:
    for value in values:
        if value != "*" and not value.startswith(("http://", "https://")):
            return f"expected '*' or origins like https://host:port, got {_show(value)}"
    return None


def _host_names(values: list[str]) -> str | None:
    for value in values:
        name = value.removeprefix(".")
        if value != "*" and not _HOST_NAME.fullmatch(name):
            return f"expected host names like laya.lan or .example.lan (no scheme, port or path), " \
                   f"got {_show(value)}"
    return None


def _models_dir(value: str) -> str | None:
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        return f"expected an absolute folder path (or one starting with ~), got {_show(value)}"
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{_show(value)} exists and is not a folder"
    return None


def _env_names(values: list[str]) -> str | None:
    for value in values:
        if not _ENV_NAME.fullmatch(value):
            return f"expected environment variable names like MY_API_KEY, got {_show(value)}"
    return None


def _url(value: str) -> str | None:
    if value.startswith(("http://", "https://")):
        return None
    return f"expected an http:// or https:// URL, got {_show(value)}"


# labels as in RFC 1123, and underscores, which container and compose service names use
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*",
                        re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables a remote's api_key_env may name without the user listing them: NAME_API_KEY, the
# convention of every provider (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, …) and of
# DESIGN.md's CLOUD_API_KEY, and the app's own LAYA_*. Any other variable could be a secret of
# another kind (a cloud credential, a repository token, a database URL) that a shared or
# injected config would send to its base_url.
KEY_ENV_PREFIX = "LAYA_"
KEY_ENV_SUFFIX = "_API_KEY"

SERVER_FIELDS = {
    "host": _Field("str"),
    "port": _Field("int", check=_between(1, 65535)),
    "api_key": _Field("str", nullable=True),
    "admin_api_key": _Field("str", nullable=True),
    "max_body_mb": _Field("number", check=_above_zero_up_to(4096)),
    "cors_origins": _Field("str_list", check=_origins),
    "allowed_hosts": _Field("str_list", check=_host_names),
    "allowed_key_envs": _Field("str_list", check=_env_names),
    "route_log_size": _Field("int", check=_between(0, 100_000)),
    "models_dir": _Field("str", nullable=True, check=_models_dir),
}
SCHEDULER_FIELDS = {
    "max_queue": _Field("int", check=_at_least(1)),
    "queue_timeout_ms": _Field("int", check=_at_least(1)),
}
MEMORY_FIELDS = {
    "guard": _Field("bool"),
    "reserved_system_gb": _Field("number", check=_at_least(0)),
    "ram_high_pct": _Field("number", check=_above_zero_up_to(100)),
    "vram_high_pct": _Field("number", check=_above_zero_up_to(100)),
    "sample_hz": _Field("number", check=_above_zero_up_to(100)),
}

_LLAMA = ("llama_cpp",)
_OPENAI = ("openai",)
_REMOTE = ("openai", "anthropic")
# field -> (spec, the backends it applies to)
MODEL_FIELDS: dict[str, tuple[_Field, tuple[str, ...]]] = {
    "name": (_Field("str"), BACKENDS),
    "backend": (_Field("str", check=_choice("backend", BACKENDS)), BACKENDS),
    "path": (_Field("str"), LOCAL_BACKENDS),
    "base_url": (_Field("str", check=_url), _REMOTE),
    "api_key_env": (_Field("str", nullable=True), _REMOTE),
    "remote_model": (_Field("str", nullable=True), _REMOTE),
    "responses": (_Field("bool"), _OPENAI),
    "n_ctx": (_Field("int", check=_at_least(16)), LOCAL_BACKENDS),
    "parallel": (_Field("int", nullable=True, check=_at_least(1)), LOCAL_BACKENDS),
    "max_output_tokens": (_Field("int", nullable=True, check=_at_least(1)), LOCAL_BACKENDS),
    "n_gpu_layers": (_Field("int", check=_at_least(-1)), _LLAMA),
    "n_threads": (_Field("int", nullable=True, check=_at_least(1)), _LLAMA),
    "kv_cache_type": (_Field("str", check=_choice("kv_cache_type", KV_CACHE_TYPES)), _LLAMA),
    "cpu_repack": (_Field("bool"), _LLAMA),
    "chat_format": (_Field("str", nullable=True), _LLAMA),
    "keep_in_memory": (_Field("bool"), LOCAL_BACKENDS),
    "idle_ttl_s": (_Field("int", check=_at_least(0)), LOCAL_BACKENDS),
    "warmup": (_Field("bool"), LOCAL_BACKENDS),
    "embedding": (_Field("bool"), _LLAMA),
    "sampling": (_Field("mapping"), LOCAL_BACKENDS),
    "prompt_cache": (_Field("mapping"), LOCAL_BACKENDS),
    "slots": (_Field("int", nullable=True, check=_at_least(1)), _REMOTE),
    "health": (_Field("mapping"), _REMOTE),
}
PROMPT_CACHE_FIELDS = {
    "ram_mb": _Field("int", check=_between(0, 1 << 20)),
    "disk_mb": _Field("int", check=_between(0, 1 << 24)),
}


def _probe(value: str) -> str | None:
    if value in HEALTH_PROBES or value.startswith("/"):
        return None
    return f"unknown probe {value!r} (valid: none, auto, or a path such as /health)"


HEALTH_FIELDS = {
    "probe": _Field("str", check=_probe),
    "interval_s": _Field("number", check=_above_zero_up_to(86400)),
    "eject_after": _Field("int", check=_between(1, 1000)),
    "backoff_s": _Field("number", check=_above_zero_up_to(86400)),
    "backoff_max_s": _Field("number", check=_above_zero_up_to(86400)),
}
MODEL_REQUIRED = {"name": BACKENDS, "backend": BACKENDS, "path": LOCAL_BACKENDS, "base_url": _REMOTE}


def model_keys_for(backend: str) -> list[str]:
    """The keys a model entry of this backend may have, in models.yaml order."""
    return [key for key, (_, applies) in MODEL_FIELDS.items() if backend in applies]


class _Report:
    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(ConfigError(path, message))

    def value_ok(self, path: str, value: Any, spec: _Field) -> bool:
        if value is None and spec.nullable:
            return True
        if not _is_kind(value, spec.kind):
            self.add(path, f"expected {_KIND_NAMES[spec.kind]}, got {_show(value)}")
            return False
        message = spec.check(value) if spec.check else None
        if message:
            self.add(path, message)
            return False
        return True

    def mapping(self, path: str, raw: Any) -> bool:
        if isinstance(raw, dict):
            return True
        self.add(path, f"expected a mapping, got {_show(raw)}")
        return False

    def unknown_key(self, path: str, key: Any, valid: list[str] | tuple[str, ...]) -> None:
        self.add(f"{path}.{key}", f"unknown key {key!r} (valid: {', '.join(valid)})")


def _section(report: _Report, raw: Any, path: str, fields: dict[str, _Field]) -> dict:
    if raw is None or not report.mapping(path, raw):
        return {}
    values = {}
    for key, value in raw.items():
        if key not in fields:
            report.unknown_key(path, key, list(fields))
        elif report.value_ok(f"{path}.{key}", value, fields[key]):
            values[key] = value
    return values


def _gguf_or_builtin(path: str) -> bool:
    if path.startswith("builtin:"):
        return path[len("builtin:"):].strip() != ""
    return path.lower().endswith(".gguf")


def _model(report: _Report, raw: Any, path: str) -> dict:
    if not report.mapping(path, raw):
        return {}
    backend = raw.get("backend")
    known = backend if backend in BACKENDS else None
    values = {}
    for key, value in raw.items():
        entry = MODEL_FIELDS.get(key)
        if entry is None:
            report.unknown_key(path, key, model_keys_for(known) if known else list(MODEL_FIELDS))
            continue
        spec, applies = entry
        if known and known not in applies:
            report.add(f"{path}.{key}", f"'{key}' does not apply to backend '{known}' "
                                        f"(applies to: {', '.join(applies)})")
        elif report.value_ok(f"{path}.{key}", value, spec):
            if key == "sampling":
                value = _sampling(report, value, f"{path}.{key}", known)
            elif key == "prompt_cache":
                value = PromptCacheConfig(**_section(report, value, f"{path}.{key}",
                                                     PROMPT_CACHE_FIELDS))
            elif key == "health":
                value = _health(report, value, f"{path}.{key}")
            values[key] = value
    for key, applies in MODEL_REQUIRED.items():
        if key in raw:
            continue
        if applies == BACKENDS:
            report.add(f"{path}.{key}", "required")
        elif known in applies:
            report.add(f"{path}.{key}", f"required for backend '{known}'")
    if known == "llama_cpp" and "path" in values and not _gguf_or_builtin(values["path"]):
        report.add(f"{path}.path", f"expected a .gguf file or builtin:NAME, got {_show(values['path'])}")
        del values["path"]
    return values


def _health(report: _Report, raw: dict, path: str) -> HealthConfig:
    health = HealthConfig(**_section(report, raw, path, HEALTH_FIELDS))
    if health.backoff_max_s < health.backoff_s:
        report.add(f"{path}.backoff_max_s", f"less than backoff_s ({_show(health.backoff_max_s)} < "
                                            f"{_show(health.backoff_s)})")
    return health


def _sampling(report: _Report, raw: dict, path: str, backend: str | None) -> dict:
    values = {}
    for key, value in raw.items():
        knob = KNOBS.get(key)
        if knob is None:
            report.unknown_key(path, key, list(KNOBS))
        elif backend and backend not in knob.backends:
            report.add(f"{path}.{key}", f"'{key}' does not apply to backend '{backend}' "
                                        f"(applies to: {', '.join(knob.backends)})")
        elif problem := knob.problem(value):
            report.add(f"{path}.{key}", problem)
        else:
            values[key] = value
    return values


def _string_list(report: _Report, path: str, value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value] if report.value_ok(path, value, _Field("str")) else None
    if not isinstance(value, list):
        report.add(path, f"expected a string or a list of strings, got {_show(value)}")
        return None
    ok = [report.value_ok(f"{path}[{i}]", item, _Field("str")) for i, item in enumerate(value)]
    return list(value) if all(ok) else None


def _match(report: _Report, raw: Any, path: str) -> dict:
    if raw is None or not report.mapping(path, raw):
        return {}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        sub = f"{path}.{key}"
        if key not in MATCH_KEYS:
            report.add(sub, f"unknown condition {key!r} (valid: {', '.join(MATCH_KEYS)})")
        elif key in MATCH_LIST_KEYS:
            items = [] if value is None else _string_list(report, sub, value)
            if items is not None:
                values[key] = items
        elif key == "semantic":
            semantic = _semantic(report, value, sub)
            if semantic is not None:
                values[key] = semantic
        elif report.value_ok(sub, value, _Field("int", nullable=True, check=_at_least(0))):
            values[key] = value
    low, high = values.get("min_prompt_chars"), values.get("max_prompt_chars")
    if low is not None and high is not None and low > high:
        report.add(f"{path}.min_prompt_chars",
                   f"greater than max_prompt_chars ({low} > {high}): the rule can never match")
    return values


def _semantic(report: _Report, raw: Any, path: str) -> SemanticMatch | None:
    if raw is None or not report.mapping(path, raw):
        return None
    values: dict[str, Any] = {}
    ok = True
    for key, value in raw.items():
        sub = f"{path}.{key}"
        if key not in SEMANTIC_KEYS:
            report.unknown_key(path, key, SEMANTIC_KEYS)
            ok = False
        elif key == "threshold" and value in (None, "auto"):
            values[key] = None  # calibrated on the background corpus (semantic_background.py)
        elif key in ("threshold", "margin", "min_probability"):
            ok = report.value_ok(sub, value, _Field("number", check=_between(0, 1))) and ok
            values[key] = value
        elif key == "top_k":
            ok = report.value_ok(sub, value, _Field("int", check=_between(1, 100))) and ok
            values[key] = value
        elif key == "scoring":
            ok = report.value_ok(sub, value, _Field("str", check=_choice("scoring", SEMANTIC_SCORINGS))) and ok
            values[key] = value
        else:
            items = [] if value is None else _string_list(report, sub, value)
            ok = items is not None and ok
            values[key] = items
    if "examples" not in raw:
        report.add(f"{path}.examples", "required (a non-empty list of example prompts)")
        ok = False
    elif values.get("examples") == []:
        report.add(f"{path}.examples", "must not be empty: the condition needs an example prompt")
        ok = False
    if not ok:
        return None
    for key in ("threshold", "margin", "min_probability"):
        if values.get(key) is not None:
            values[key] = float(values[key])
    return SemanticMatch(**values)


def validate_semantic(raw: Any, path: str = "semantic") -> tuple[SemanticMatch | None, list[ConfigError]]:
    """A `match.semantic` mapping on its own (the Routes panel's live score asks with one)."""
    report = _Report()
    if raw is None:
        report.add(path, "required (a mapping with examples, negatives, threshold)")
        return None, report.errors
    match = _semantic(report, raw, path)
    return (None if report.errors else match), report.errors


def _route(report: _Report, raw: Any, path: str) -> dict:
    if not report.mapping(path, raw):
        return {}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        sub = f"{path}.{key}"
        if key not in ROUTE_KEYS:
            report.unknown_key(path, key, ROUTE_KEYS)
        elif key == "match":
            values["match"] = _match(report, value, sub)
        elif key == "fallback":
            items = [] if value is None else _string_list(report, sub, value)
            if items is not None:
                values["fallback"] = items
        elif key == "targets":
            items = _targets(report, sub, value, raw.get("strategy"))
            if items is not None:
                values["targets"] = items
        elif key == "strategy":
            if report.value_ok(sub, value, _Field("str", check=_choice("strategy", STRATEGIES))):
                values[key] = value
        elif key == "sampling":
            if report.value_ok(sub, value, _Field("mapping")):
                values[key] = _sampling(report, value, sub, None)
        elif key == "affinity":
            if report.value_ok(sub, value, _Field("bool", nullable=True)):
                values[key] = value
        elif key == "affinity_ttl_s":
            if report.value_ok(sub, value, _Field("int", check=_between(1, 7 * 86400))):
                values[key] = value
        elif report.value_ok(sub, value, _Field("bool" if key == "enabled" else "str")):
            values[key] = value
    if "name" not in raw:
        report.add(f"{path}.name", "required")
    if "target" not in raw and "targets" not in raw:
        report.add(f"{path}.target", "required (or 'targets', a list of models)")
    _check_affinity(report, path, raw)
    return values


def _check_affinity(report: _Report, path: str, raw: dict) -> None:
    """Affinity chooses among a rule's targets: on a rule with one it would do nothing."""
    if raw.get("affinity") is not True and "affinity_ttl_s" not in raw:
        return
    targets = raw.get("targets") if isinstance(raw.get("targets"), list) else []
    names = {t if isinstance(t, str) else t.get("model") if isinstance(t, dict) else None
             for t in targets} | {raw.get("target")}
    if len(names - {None}) < 2:
        key = "affinity" if raw.get("affinity") is True else "affinity_ttl_s"
        report.add(f"{path}.{key}", f"'{key}' applies to a rule with several targets only")


def _targets(report: _Report, path: str, raw: Any, strategy: Any) -> list[dict] | None:
    """A list of model names or {model, weight, max_active}; weight belongs to the weighted
    strategy, max_active to spillover (a field that does nothing is an error, not ignored)."""
    if not isinstance(raw, list) or not raw:
        report.add(path, f"expected a non-empty list of model names or {{model, weight}}, "
                         f"got {_show(raw)}")
        return None
    items, ok = [], True
    for i, item in enumerate(raw):
        sub = f"{path}[{i}]"
        if isinstance(item, str):
            ok &= report.value_ok(sub, item, _Field("str"))
            items.append({"model": item})
            continue
        if not report.mapping(sub, item):
            ok = False
            continue
        entry = {}
        for key, value in item.items():
            if key not in TARGET_KEYS:
                report.unknown_key(sub, key, TARGET_KEYS)
                ok = False
                continue
            wants = {"weight": "weighted", "max_active": "spillover"}.get(key)
            if wants and strategy != wants:
                report.add(f"{sub}.{key}", f"'{key}' applies to strategy '{wants}' only "
                                           f"(this rule's strategy: {strategy or 'first_available'})")
                ok = False
                continue
            spec = {"model": _Field("str"), "weight": _Field("number", check=_above_zero_up_to(1e6)),
                    "max_active": _Field("int", check=_at_least(1))}[key]
            if report.value_ok(f"{sub}.{key}", value, spec):
                entry[key] = value
            else:
                ok = False
        if "model" not in item:
            report.add(f"{sub}.model", "required")
            ok = False
        items.append(entry)
    return items if ok else None


def _entries(report: _Report, raw: dict, key: str, read: Callable) -> list[dict]:
    if key not in raw:
        report.add(key, "required (a non-empty list)")
        return []
    items = raw[key]
    if not isinstance(items, list):
        report.add(key, f"expected a list, got {_show(items)}")
        return []
    if not items:
        report.add(key, "must not be empty")
    return [read(report, item, f"{key}[{i}]") for i, item in enumerate(items)]


def _raw_names(raw: dict, key: str) -> list[Any]:
    items = raw.get(key)
    if not isinstance(items, list):
        return []
    return [item.get("name") if isinstance(item, dict) else None for item in items]


def _check_unique(report: _Report, key: str, names: list[Any], what: str) -> None:
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if name in first:
            report.add(f"{key}[{i}].name", f"duplicate {what} name {name!r} (also {key}[{first[name]}])")
        else:
            first[name] = i


def _check_targets(report: _Report, routes: list[dict], backends: dict[str, str]) -> None:
    model_names = {name for name in backends}
    for i, route in enumerate(routes):
        target = route.get("target")
        if target is not None and target not in model_names:
            report.add(f"routes[{i}].target", f"no model named {target!r}")
        seen = {target} if target is not None else set()
        for j, entry in enumerate(route.get("targets", [])):
            name = entry.get("model")
            if name not in model_names:
                report.add(f"routes[{i}].targets[{j}]", f"no model named {name!r}")
            elif name in seen and not (j == 0 and name == target):
                report.add(f"routes[{i}].targets[{j}]", f"model {name!r} is already a target "
                                                        "of this rule")
            seen.add(name)
        for j, name in enumerate(route.get("fallback", [])):
            if name not in model_names:
                report.add(f"routes[{i}].fallback[{j}]", f"no model named {name!r}")
        _check_rule_sampling(report, i, route, backends)


def _check_rule_sampling(report: _Report, i: int, route: dict, backends: dict) -> None:
    """A knob one of the rule's models cannot take would refuse every request sent to it."""
    names = [route.get("target"), *(t.get("model") for t in route.get("targets", [])),
             *route.get("fallback", [])]
    for key in route.get("sampling", {}):
        for name in names:
            backend = backends.get(name)
            if backend in LOCAL_BACKENDS and backend not in KNOBS[key].backends:
                report.add(f"routes[{i}].sampling.{key}", f"'{key}' does not apply to model "
                                                          f"{name!r} (backend '{backend}'; applies "
                                                          f"to: {', '.join(KNOBS[key].backends)})")
                break


def key_env_allowed(name: str, listed: list[str] | tuple[str, ...] = ()) -> bool:
    if name == APP_TOKEN_ENV:
        return False  # the engine's own proof of who calls it, never a remote's key
    return name.startswith(KEY_ENV_PREFIX) or name.endswith(KEY_ENV_SUFFIX) or name in listed


def _check_key_envs(report: _Report, models: list[dict], listed: list[str]) -> None:
    for i, model in enumerate(models):
        name = model.get("api_key_env")
        if name is None:
            continue
        if not _ENV_NAME.fullmatch(name):
            report.add(f"models[{i}].api_key_env",
                       f"expected an environment variable name like OPENAI_API_KEY, got {_show(name)}")
        elif not key_env_allowed(name, listed):
            report.add(f"models[{i}].api_key_env",
                       f"{name!r} is not an API key variable: name one such as "
                       f"OPENAI_API_KEY (any NAME_API_KEY), a LAYA_* variable, or list "
                       f"{name!r} in server.allowed_key_envs")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _build(server: dict, models: list[dict], routes: list[dict], scheduler: dict,
           memory: dict) -> Config:
    return Config(
        server=ServerConfig(**server),
        models=[ModelConfig(**m) for m in models],
        routes=[_route_config(r) for r in routes],
        scheduler=SchedulerConfig(**scheduler),
        memory=MemoryConfig(**memory),
    )


def _route_config(values: dict) -> RouteConfig:
    targets = [RouteTarget(**t) for t in values.get("targets", [])]
    target = values.get("target") or targets[0].model
    return RouteConfig(**{**values, "target": target, "targets": targets,
                          "match": RouteMatch(**values.get("match", {}))})


def validate_config(raw: Any) -> tuple[Config | None, list[ConfigError]]:
    """Check a parsed models.yaml; returns (Config, []) or (None, every error found)."""
    report = _Report()
    if raw is None or (isinstance(raw, (dict, list, str)) and not raw):
        report.add("", "the config is empty: it needs at least 'models' and 'routes'")
        return None, report.errors
    if not isinstance(raw, dict):
        report.add("", f"expected a mapping with 'models' and 'routes' at the top level, got {_show(raw)}")
        return None, report.errors
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            report.add(str(key), f"unknown key {key!r} (valid: {', '.join(TOP_LEVEL_KEYS)})")
    server = _section(report, raw.get("server"), "server", SERVER_FIELDS)
    models = _entries(report, raw, "models", _model)
    routes = _entries(report, raw, "routes", _route)
    scheduler = _section(report, raw.get("scheduler"), "scheduler", SCHEDULER_FIELDS)
    memory = _section(report, raw.get("memory"), "memory", MEMORY_FIELDS)

    model_names = _raw_names(raw, "models")
    _check_unique(report, "models", model_names, "model")
    _check_unique(report, "routes", _raw_names(raw, "routes"), "route")
    if model_names:  # without a model list every target would be reported too
        _check_targets(report, routes, {m["name"]: m.get("backend") for m in raw["models"]
                                        if isinstance(m, dict) and isinstance(m.get("name"), str)})
    _check_key_envs(report, models, server.get("allowed_key_envs", []))
    host = server.get("host", ServerConfig.host)
    raw_server = raw.get("server") if isinstance(raw.get("server"), dict) else {}
    if not _is_loopback(host) and raw_server.get("api_key") is None:
        report.add("server.api_key", f"required when server.host ({host!r}) is not loopback")

    if report.errors:
        return None, report.errors
    return _build(server, models, routes, scheduler, memory), []
