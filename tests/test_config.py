"""models.yaml: validation (every error, with its path), normalization, round trip, load and save."""
from __future__ import annotations

import copy
import json
import os
import re
import stat
from pathlib import Path

import pytest
import yaml

from laya_desktop.config import store
from laya_desktop.config.schema import Config
from laya_desktop.config.store import (
    ConfigInvalid, config_to_dict, find_config_path, load_config, parse_config_text, save_config_atomic,
)
from laya_desktop.config.validate import ConfigError, validate_config

REPO = Path(__file__).resolve().parents[1]
DELETE = object()


def base() -> dict:
    return {
        "server": {"host": "127.0.0.1", "port": 8555},
        "models": [
            {"name": "gemma", "backend": "llama_cpp", "path": "builtin:gemma-3-270m", "n_ctx": 4096,
             "parallel": 4, "n_gpu_layers": 0, "kv_cache_type": "f16", "warmup": False},
            {"name": "mlxm", "backend": "mlx", "path": "/models/llama-mlx", "n_ctx": 8192},
            {"name": "cloud", "backend": "openai", "base_url": "https://api.example.com/v1",
             "api_key_env": "LAYA_CLOUD_KEY", "remote_model": "big"},
        ],
        "routes": [
            {"name": "code", "match": {"tags": ["code"]}, "target": "gemma", "fallback": ["cloud"]},
            {"name": "long", "match": {"min_prompt_chars": 8000}, "target": "cloud"},
            {"name": "default", "target": "gemma"},
        ],
        "scheduler": {"max_queue": 64, "queue_timeout_ms": 30000},
        "memory": {"guard": True, "reserved_system_gb": 2, "ram_high_pct": 90, "vram_high_pct": 92,
                   "sample_hz": 4},
    }


def _steps(path: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]


def changed(changes: dict[str, object]) -> dict:
    raw = base()
    for path, value in changes.items():
        *parents, last = _steps(path)
        node = raw
        for step in parents:
            node = node[step]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return raw


def errors_of(raw) -> list[ConfigError]:
    config, errors = validate_config(raw)
    assert (config is None) == bool(errors)
    return errors


def test_base_is_valid():
    config, errors = validate_config(base())
    assert errors == []
    assert isinstance(config, Config)
    assert [m.name for m in config.models] == ["gemma", "mlxm", "cloud"]


ERROR_CASES = [
    # (changes, path, message)
    ({"extra": 1}, "extra", "unknown key 'extra' (valid: server, models, routes, scheduler, memory)"),
    ({"models": DELETE}, "models", "required"),
    ({"routes": DELETE}, "routes", "required"),
    ({"models": "gemma"}, "models", "expected a list, got 'gemma'"),
    ({"server": 5}, "server", "expected a mapping, got 5"),
    # server
    ({"server.port": 0}, "server.port", "must be between 1 and 65535, got 0"),
    ({"server.port": 70000}, "server.port", "must be between 1 and 65535, got 70000"),
    ({"server.port": "80"}, "server.port", "expected an integer, got '80'"),
    ({"server.port": True}, "server.port", "expected an integer, got true"),
    ({"server.port": 8555.0}, "server.port", "expected an integer, got 8555.0"),
    ({"server.host": ""}, "server.host", "expected a non-empty string, got ''"),
    ({"server.host": "0.0.0.0"}, "server.api_key", "required when server.host ('0.0.0.0') is not loopback"),
    ({"server.host": "192.168.1.5"}, "server.api_key", "not loopback"),
    ({"server.colour": "red"}, "server.colour", "unknown key 'colour' (valid: host, port, api_key, admin_api_key, max_body_mb, cors_origins, allowed_hosts, allowed_key_envs, route_log_size, models_dir)"),
    # models: types, ranges, choices
    ({"models[0].backend": "warp-drive"}, "models[0].backend",
     "unknown backend 'warp-drive' (valid: llama_cpp, mlx, openai, anthropic)"),
    ({"models[0].n_ctx": "lots"}, "models[0].n_ctx", "expected an integer, got 'lots'"),
    ({"models[0].n_ctx": 4096.0}, "models[0].n_ctx", "expected an integer, got 4096.0"),
    ({"models[0].n_ctx": 8}, "models[0].n_ctx", "must be at least 16, got 8"),
    ({"models[0].parallel": 0}, "models[0].parallel", "must be at least 1, got 0"),
    ({"models[0].idle_ttl_s": -1}, "models[0].idle_ttl_s", "must be at least 0, got -1"),
    ({"models[0].n_threads": 0}, "models[0].n_threads", "must be at least 1, got 0"),
    ({"models[0].n_gpu_layers": -2}, "models[0].n_gpu_layers", "must be at least -1, got -2"),
    ({"models[0].kv_cache_type": "q5"}, "models[0].kv_cache_type",
     "unknown kv_cache_type 'q5' (valid: f16, q8_0, q4_0)"),
    ({"models[0].keep_in_memory": "yes"}, "models[0].keep_in_memory", "expected true or false, got 'yes'"),
    ({"models[0].warmup": 1}, "models[0].warmup", "expected true or false, got 1"),
    ({"models[0].cpu_repack": "on"}, "models[0].cpu_repack", "expected true or false, got 'on'"),
    ({"models[0].path": "model.bin"}, "models[0].path", "expected a .gguf file or builtin:NAME, got 'model.bin'"),
    ({"models[0].path": "builtin:"}, "models[0].path", "expected a .gguf file or builtin:NAME"),
    ({"models[0].path": None}, "models[0].path", "expected a non-empty string, got null"),
    ({"models[0].colour": "red"}, "models[0].colour", "unknown key 'colour' (valid: name, backend, path, n_ctx"),
    ({"models[1]": "mlxm"}, "models[1]", "expected a mapping, got 'mlxm'"),
    # models: required fields
    ({"models[1].name": DELETE}, "models[1].name", "required"),
    ({"models[1].backend": DELETE}, "models[1].backend", "required"),
    ({"models[1].path": DELETE}, "models[1].path", "required for backend 'mlx'"),
    ({"models[0].path": DELETE}, "models[0].path", "required for backend 'llama_cpp'"),
    ({"models[2].base_url": DELETE}, "models[2].base_url", "required for backend 'openai'"),
    ({"models[2].base_url": "ftp://x"}, "models[2].base_url", "expected an http:// or https:// URL"),
    ({"models[1].name": "gemma"}, "models[1].name", "duplicate model name 'gemma' (also models[0])"),
    # models: fields that do not apply to the backend
    ({"models[0].base_url": "http://x"}, "models[0].base_url",
     "'base_url' does not apply to backend 'llama_cpp' (applies to: openai, anthropic)"),
    ({"models[0].api_key_env": "K"}, "models[0].api_key_env", "does not apply to backend 'llama_cpp'"),
    ({"models[1].n_gpu_layers": -1}, "models[1].n_gpu_layers",
     "'n_gpu_layers' does not apply to backend 'mlx' (applies to: llama_cpp)"),
    ({"models[1].chat_format": "chatml"}, "models[1].chat_format", "does not apply to backend 'mlx'"),
    ({"models[1].n_threads": 4}, "models[1].n_threads", "does not apply to backend 'mlx'"),
    ({"models[1].kv_cache_type": "f16"}, "models[1].kv_cache_type", "does not apply to backend 'mlx'"),
    ({"models[1].cpu_repack": True}, "models[1].cpu_repack", "does not apply to backend 'mlx'"),
    ({"models[2].path": "x.gguf"}, "models[2].path",
     "'path' does not apply to backend 'openai' (applies to: llama_cpp, mlx)"),
    ({"models[2].n_ctx": 4096}, "models[2].n_ctx", "does not apply to backend 'openai'"),
    ({"models[2].n_gpu_layers": 0}, "models[2].n_gpu_layers", "does not apply to backend 'openai'"),
    ({"models[2].warmup": True}, "models[2].warmup", "does not apply to backend 'openai'"),
    ({"models[2].parallel": 2}, "models[2].parallel", "does not apply to backend 'openai'"),
    # routes
    ({"routes[2].target": "qwen"}, "routes[2].target", "no model named 'qwen'"),
    ({"routes[1].fallback": ["x"]}, "routes[1].fallback[0]", "no model named 'x'"),
    ({"routes[0].fallback": ["cloud", "nope"]}, "routes[0].fallback[1]", "no model named 'nope'"),
    ({"routes[0].fallback": 5}, "routes[0].fallback", "expected a string or a list of strings, got 5"),
    ({"routes[0].fallback": ["cloud", ""]}, "routes[0].fallback[1]", "expected a non-empty string"),
    ({"routes[1].name": "code"}, "routes[1].name", "duplicate route name 'code' (also routes[0])"),
    ({"routes[0].name": DELETE}, "routes[0].name", "required"),
    ({"routes[0].target": DELETE}, "routes[0].target", "required"),
    ({"routes[0].target": 7}, "routes[0].target", "expected a non-empty string, got 7"),
    ({"routes[0].enabled": "no"}, "routes[0].enabled", "expected true or false, got 'no'"),
    ({"routes[0].priority": 1}, "routes[0].priority",
     "unknown key 'priority' (valid: name, target, enabled, match, fallback, targets, strategy, sampling, "
     "affinity, affinity_ttl_s)"),
    ({"routes[0].match": ["code"]}, "routes[0].match", "expected a mapping, got ['code']"),
    ({"routes[0].match.colour": "red"}, "routes[0].match.colour",
     "unknown condition 'colour' (valid: tags, keywords, min_prompt_chars, max_prompt_chars, model, path, semantic)"),
    ({"routes[0].match.tags": [""]}, "routes[0].match.tags[0]", "expected a non-empty string, got ''"),
    ({"routes[0].match.tags": ""}, "routes[0].match.tags", "expected a non-empty string, got ''"),
    ({"routes[0].match.tags": 5}, "routes[0].match.tags", "expected a string or a list of strings, got 5"),
    ({"routes[0].match.keywords": ["ok", 1]}, "routes[0].match.keywords[1]", "expected a non-empty string, got 1"),
    ({"routes[0].match.model": {"a": 1}}, "routes[0].match.model", "expected a string or a list of strings"),
    ({"routes[0].match.path": ["  "]}, "routes[0].match.path[0]", "expected a non-empty string"),
    ({"routes[1].match.min_prompt_chars": -1}, "routes[1].match.min_prompt_chars", "must be at least 0, got -1"),
    ({"routes[1].match.min_prompt_chars": "many"}, "routes[1].match.min_prompt_chars",
     "expected an integer, got 'many'"),
    ({"routes[1].match.min_prompt_chars": 1.5}, "routes[1].match.min_prompt_chars", "expected an integer, got 1.5"),
    ({"routes[1].match.max_prompt_chars": 10}, "routes[1].match.min_prompt_chars",
     "greater than max_prompt_chars (8000 > 10)"),
    # scheduler
    ({"scheduler.max_queue": 0}, "scheduler.max_queue", "must be at least 1, got 0"),
    ({"scheduler.max_queue": "64"}, "scheduler.max_queue", "expected an integer, got '64'"),
    ({"scheduler.queue_timeout_ms": 0}, "scheduler.queue_timeout_ms", "must be at least 1, got 0"),
    ({"scheduler.workers": 2}, "scheduler.workers", "unknown key 'workers' (valid: max_queue, queue_timeout_ms)"),
    # memory
    ({"memory.guard": "on"}, "memory.guard", "expected true or false, got 'on'"),
    ({"memory.reserved_system_gb": -1}, "memory.reserved_system_gb", "must be at least 0, got -1"),
    ({"memory.reserved_system_gb": "2"}, "memory.reserved_system_gb", "expected a number, got '2'"),
    ({"memory.reserved_system_gb": True}, "memory.reserved_system_gb", "expected a number, got true"),
    ({"memory.ram_high_pct": 0}, "memory.ram_high_pct", "must be greater than 0 and at most 100, got 0"),
    ({"memory.ram_high_pct": 100.5}, "memory.ram_high_pct", "must be greater than 0 and at most 100"),
    ({"memory.vram_high_pct": 150}, "memory.vram_high_pct", "must be greater than 0 and at most 100"),
    ({"memory.sample_hz": 0}, "memory.sample_hz", "must be greater than 0 and at most 100, got 0"),
    ({"memory.sample_hz": 101}, "memory.sample_hz", "must be greater than 0 and at most 100, got 101"),
]


@pytest.mark.parametrize("changes, path, message", ERROR_CASES,
                         ids=[f"{case[1]}:{i}" for i, case in enumerate(ERROR_CASES)])
def test_each_error_has_its_path(changes, path, message):
    errors = errors_of(changed(changes))
    assert [e.path for e in errors] == [path], errors
    assert message in errors[0].message
    assert str(errors[0]) == f"{path}: {errors[0].message}"


@pytest.mark.parametrize("raw, message", [
    (None, "the config is empty"),
    ({}, "the config is empty"),
    ([], "the config is empty"),
    ("models: x", "expected a mapping with 'models' and 'routes' at the top level"),
    ([{"name": "x"}], "expected a mapping"),
])
def test_documents_that_are_not_a_config(raw, message):
    errors = errors_of(raw)
    assert len(errors) == 1 and errors[0].path == ""
    assert message in errors[0].message
    assert str(errors[0]) == errors[0].message


@pytest.mark.parametrize("key", ["models", "routes"])
def test_models_and_routes_must_not_be_empty(key):
    errors = errors_of(changed({key: []}))
    assert ConfigError(key, "must not be empty") in errors


def test_every_error_is_reported_together():
    raw = changed({
        "server.port": "http",
        "models[0].backend": "warp-drive",
        "models[1].n_gpu_layers": 10,
        "models[2].colour": "blue",
        "routes[0].target": "qwen",
        "routes[1].fallback": ["gemma", "nope"],
        "scheduler.max_queue": 0,
        "memory.sample_hz": 500,
    })
    paths = [e.path for e in errors_of(raw)]
    assert sorted(paths) == sorted([
        "server.port", "models[0].backend", "models[1].n_gpu_layers", "models[2].colour",
        "routes[0].target", "routes[1].fallback[1]", "scheduler.max_queue", "memory.sample_hz",
    ])


def test_unknown_backend_does_not_cascade_into_other_errors():
    errors = errors_of(changed({"models[0].backend": "warp-drive"}))
    assert [str(e) for e in errors] == [
        "models[0].backend: unknown backend 'warp-drive' (valid: llama_cpp, mlx, openai, anthropic)"]


@pytest.mark.parametrize("host, api_key", [
    ("127.0.0.1", None), ("127.1.2.3", None), ("localhost", None), ("::1", None),
    ("0.0.0.0", "secret"), ("192.168.1.5", "secret"),
])
def test_hosts_that_are_allowed(host, api_key):
    raw = changed({"server.host": host, "server.api_key": api_key})
    assert errors_of(raw) == []


@pytest.mark.parametrize("key, given, expected", [
    ("tags", "code", ["code"]),
    ("keywords", ["SELECT", "join on"], ["SELECT", "join on"]),
    ("model", "gpt-4o", ["gpt-4o"]),
    ("path", "/v1/completions", ["/v1/completions"]),
])
def test_match_lists_accept_a_single_string(key, given, expected):
    config, errors = validate_config(changed({f"routes[0].match": {key: given}}))
    assert errors == []
    assert getattr(config.routes[0].match, key) == expected


def test_optional_parts_default():
    raw = changed({"server": None, "scheduler": DELETE, "memory": DELETE,
                   "routes[0].match": None, "routes[0].fallback": "cloud"})
    config, errors = validate_config(raw)
    assert errors == []
    assert config.server.port == 8555 and config.scheduler.max_queue == 64 and config.memory.guard
    assert config.routes[0].match.is_empty()
    assert config.routes[0].fallback == ["cloud"]
    assert config.routes[2].enabled is True and config.routes[2].fallback == []
    assert config.models[1].effective_parallel == 1 and config.models[0].effective_parallel == 4


def test_null_conditions_are_absent():
    raw = changed({"routes[0].match": {"tags": None, "min_prompt_chars": None, "max_prompt_chars": None}})
    config, errors = validate_config(raw)
    assert errors == [] and config.routes[0].match.is_empty()


def test_numbers_accept_floats_and_ints():
    raw = changed({"memory.reserved_system_gb": 1.5, "memory.ram_high_pct": 100, "memory.sample_hz": 0.5})
    config, errors = validate_config(raw)
    assert errors == []
    assert config.memory.reserved_system_gb == 1.5


def _no_none(value) -> bool:
    if isinstance(value, dict):
        return all(v is not None and _no_none(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_none(v) for v in value)
    return value is not None


def test_round_trip_through_dict_and_yaml():
    config, _ = validate_config(base())
    data = config_to_dict(config)
    json.dumps(data)
    assert _no_none(data)
    again, errors = validate_config(copy.deepcopy(data))
    assert errors == [] and again == config
    from_text, errors = parse_config_text(yaml.safe_dump(data, sort_keys=False))
    assert errors == [] and from_text == config


def test_config_to_dict_keeps_only_fields_of_each_backend():
    config, _ = validate_config(base())
    llama, mlx, openai = config_to_dict(config)["models"]
    assert llama["n_gpu_layers"] == 0 and "base_url" not in llama
    assert "n_gpu_layers" not in mlx and "kv_cache_type" not in mlx and mlx["path"] == "/models/llama-mlx"
    assert set(openai) == {"name", "backend", "base_url", "api_key_env", "remote_model", "responses",
                           "health"}
    assert llama["embedding"] is False and "embedding" not in mlx and "responses" not in llama
    assert llama["cpu_repack"] is True and "cpu_repack" not in mlx
    assert list(config_to_dict(config)) == ["server", "models", "routes", "scheduler", "memory"]


# --- loading ---------------------------------------------------------------------------------

def test_load_config_raises_with_every_error(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(changed({"models[0].n_ctx": "lots", "routes[2].target": "qwen"})))
    with pytest.raises(ConfigInvalid) as info:
        load_config(path)
    assert [str(e) for e in info.value.errors] == [
        "models[0].n_ctx: expected an integer, got 'lots'", "routes[2].target: no model named 'qwen'"]
    assert info.value.path == path


@pytest.mark.parametrize("text, fragment", [
    ("models:\n  - name: a\n    backend: [llama_cpp\n", "line 4"),
    ("server:\n  port: 1\n  port: 2\nmodels: []\n", "line 3, column 3: duplicate key 'port'"),
    ("models:\n\t- name: a\n", "line 2"),
])
def test_yaml_syntax_errors_name_the_line(text, fragment):
    config, errors = parse_config_text(text)
    assert config is None and len(errors) == 1
    assert errors[0].message.startswith("YAML syntax error") and fragment in errors[0].message


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigInvalid) as info:
        load_config(tmp_path / "nope.yaml")
    assert "cannot read" in info.value.errors[0].message


# --- the repository's models.yaml ----------------------------------------------------------------

def test_repo_models_yaml_is_valid():
    config = load_config(REPO / "models.yaml")
    assert [m.name for m in config.models] == ["smollm2-135m", "gemma-270m"]
    smol = config.model("smollm2-135m")
    assert (smol.backend, smol.path, smol.n_ctx, smol.parallel, smol.warmup) == \
        ("llama_cpp", "builtin:smollm2-135m-instruct", 16384, 2, False)
    gemma = config.model("gemma-270m")
    assert (gemma.backend, gemma.path, gemma.n_ctx, gemma.parallel, gemma.warmup) == \
        ("llama_cpp", "builtin:gemma-3-270m", 32768, 1, False)
    assert gemma.max_output_tokens == 1024   # a base model: nothing else ends its chat turns
    assert [(r.name, r.target, r.fallback) for r in config.routes] == [
        ("completions", "gemma-270m", []), ("agents", "smollm2-135m", ["gemma-270m"]),
        ("long-context", "gemma-270m", []), ("default", "smollm2-135m", ["gemma-270m"])]
    last = config.routes[-1]
    assert last.name == "default" and last.match.is_empty() and last.fallback == ["gemma-270m"]
    assert all(not r.match.is_empty() for r in config.routes[:-1])


def _uncomment_examples(text: str) -> str:
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(  )# ((- |  )\S.*|[a-z_]+: .*)$", line)
        lines.append(m.group(1) + m.group(2) if m else line)
    return "\n".join(lines) + "\n"


def test_repo_models_yaml_examples_are_valid_when_uncommented():
    config, errors = parse_config_text(_uncomment_examples((REPO / "models.yaml").read_text()))
    assert errors == []
    assert {m.backend for m in config.models} == {"llama_cpp", "mlx", "openai", "anthropic"}
    assert config.model("cloud").responses is True and config.model("embed").embedding is True
    conditions = set()
    for route in config.routes:
        conditions |= {k for k, v in vars(route.match).items() if v not in (None, [])}
    assert conditions == {"tags", "keywords", "min_prompt_chars", "max_prompt_chars", "model", "path"}
    assert config.routes[-1].name == "default"


def test_repo_models_yaml_has_no_lint_warnings():
    lint = pytest.importorskip("laya_desktop.routing.lint")
    assert list(lint.lint(load_config(REPO / "models.yaml"))) == []


def test_packaged_default_is_the_repo_models_yaml():
    assert store.default_config_text() == (REPO / "models.yaml").read_text()


# --- finding the config ---------------------------------------------------------------------

@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(store.sys, "platform", "linux")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def test_explicit_path_wins(home):
    (home / "work" / "models.yaml").write_text("x")
    assert find_config_path("other.yaml") == Path("other.yaml")


def test_current_folder_comes_next(home):
    (home / "work" / "models.yaml").write_text("x")
    assert find_config_path(None) == home / "work" / "models.yaml"


def test_user_folder_is_created_from_the_default(home):
    path = find_config_path(None)
    assert path == home / "home" / ".config" / "laya" / "models.yaml"
    assert path.read_text() == store.default_config_text()
    path.write_text("mine")
    assert find_config_path(None) == path and path.read_text() == "mine"


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {"XDG_CONFIG_HOME": "{tmp}/xdg"}, "{tmp}/xdg/laya"),
    ("linux", {"XDG_CONFIG_HOME": "relative"}, "{tmp}/home/.config/laya"),
    ("darwin", {}, "{tmp}/home/Library/Application Support/Laya"),
])
def test_user_config_dir_per_platform(home, monkeypatch, platform, env, expected):
    monkeypatch.setattr(store.sys, "platform", platform)
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=home))
    assert store.user_config_dir() == Path(expected.format(tmp=home))


# --- atomic save -----------------------------------------------------------------------------

def test_save_writes_a_loadable_file_and_no_temp_files(tmp_path):
    config, _ = validate_config(base())
    path = tmp_path / "models.yaml"
    save_config_atomic(config, path)
    assert os.listdir(tmp_path) == ["models.yaml"]
    assert load_config(path) == config
    save_config_atomic(config_to_dict(config), path)
    assert os.listdir(tmp_path) == ["models.yaml"]
    assert load_config(path) == config


def test_save_keeps_the_file_mode(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("old")
    path.chmod(0o640)
    save_config_atomic(base(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_save_through_a_symlink_replaces_the_target(tmp_path):
    target = tmp_path / "real.yaml"
    target.write_text("old")
    link = tmp_path / "models.yaml"
    link.symlink_to(target)
    save_config_atomic(base(), link)
    assert link.is_symlink() and load_config(target) == load_config(link)


def test_failed_serialization_leaves_the_original_intact(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("original\n")
    with pytest.raises(yaml.YAMLError):
        save_config_atomic({"models": [object()]}, path)
    assert path.read_text() == "original\n"
    assert os.listdir(tmp_path) == ["models.yaml"]


def test_failed_rename_leaves_the_original_intact_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "models.yaml"
    path.write_text("original\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        save_config_atomic(base(), path)
    assert path.read_text() == "original\n"
    assert os.listdir(tmp_path) == ["models.yaml"]
