"""`laya launch codex|claude [-- ARGS]`: start a coding agent against this engine, as `ollama launch`.

The client gets its whole configuration on its command line and in its environment, so the
user's own files (~/.codex/config.toml, ~/.claude/settings.json) stay as they are; `--write-config`
writes the same settings into them instead, for starting the client without Laya later.

- Codex: a `laya` model provider through `-c` overrides (TOML values), speaking the Responses
  API, with the idle timeout a CPU needs to read a long prompt and one stream retry (each retry
  sends the whole prompt again).
- Claude Code: ANTHROPIC_BASE_URL and a token, and CLAUDE_CODE_ATTRIBUTION_HEADER=0: without
  it the first system block carries a nonce that changes every request, which would make every
  turn read the prompt again on any engine that caches by prefix (the engine also skips that
  block, but a remote upstream behind a rule might not).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from laya_desktop.config import yaml12
from laya_desktop.control.commands import _config_for, engine_target

CODEX_PROVIDER = "laya"
CODEX_IDLE_TIMEOUT_MS = 900_000   # the engine heartbeats; this only bounds a silent stall
CLAUDE_STABLE_ENV = {
    "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",   # no telemetry calls to Anthropic
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}
INSTALL_HINTS = {
    "codex": "npm install -g @openai/codex",
    "claude": "npm install -g @anthropic-ai/claude-code",
}
# where the clients' own installers put them when they are not on PATH
FALLBACK_DIRS = {
    "codex": [Path.home() / ".local" / "bin"],
    "claude": [Path.home() / ".local" / "bin", Path.home() / ".claude" / "local"],
}


class LaunchError(Exception):
    """Says what is missing and how to get it; `laya launch` prints it and exits 1."""


@dataclass
class LaunchPlan:
    client: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)   # added to the user's environment
    notes: list[str] = field(default_factory=list)


def find_client(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for folder in FALLBACK_DIRS.get(name, []):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise LaunchError(f"{name} was not found on PATH. Install it with: {INSTALL_HINTS[name]}")


def agents_context_window(config_path: Path | None) -> int | None:
    """n_ctx of the local model behind the rule named `agents` (or the first rule), read leniently:
    Codex knows no metadata for a local model name and warns without it."""
    if config_path is None:
        return None
    try:
        raw = yaml12.safe_load(Path(config_path).read_text("utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    routes = [r for r in raw.get("routes") or [] if isinstance(r, dict)]
    models = {m.get("name"): m for m in raw.get("models") or [] if isinstance(m, dict)}
    rule = next((r for r in routes if r.get("name") == "agents"), routes[0] if routes else None)
    if rule is None:
        return None
    target = rule.get("target")
    if not target and rule.get("targets"):
        first = rule["targets"][0]
        target = first.get("model") if isinstance(first, dict) else first
    n_ctx = (models.get(target) or {}).get("n_ctx")
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def _toml_string(text: str) -> str:
    return json.dumps(text)   # a JSON string is a valid TOML basic string


def codex_settings(url: str, key: str | None, model: str, context_window: int | None) -> list[tuple[str, str]]:
    """(dotted key, TOML value) pairs: Codex's `-c` overrides, and what --write-config writes."""
    provider = f"model_providers.{CODEX_PROVIDER}"
    pairs = [("model", _toml_string(model)),
             ("model_provider", _toml_string(CODEX_PROVIDER)),
             (f"{provider}.name", _toml_string("Laya")),
             (f"{provider}.base_url", _toml_string(url + "/v1")),
             (f"{provider}.wire_api", _toml_string("responses")),
             (f"{provider}.stream_idle_timeout_ms", str(CODEX_IDLE_TIMEOUT_MS)),
             (f"{provider}.stream_max_retries", "1")]
    if key:
        pairs.append((f"{provider}.env_key", _toml_string("LAYA_API_KEY")))
    if context_window:
        pairs.append(("model_context_window", str(context_window)))
    return pairs


def codex_plan(binary: str, url: str, key: str | None, model: str, context_window: int | None,
               extra: list[str]) -> LaunchPlan:
    argv = [binary]
    for dotted, value in codex_settings(url, key, model, context_window):
        argv += ["-c", f"{dotted}={value}"]
    env = {"LAYA_API_KEY": key} if key else {}
    return LaunchPlan("codex", argv + extra, env)


def claude_env(url: str, key: str | None, model: str | None, auto_memory: bool = True) -> dict[str, str]:
    # A token, not ANTHROPIC_API_KEY: Claude Code asks the user to approve an API key it has not
    # seen, and sends the token as a bearer, which the engine takes as its key.
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": key or "laya", "ANTHROPIC_API_KEY": "",
           **CLAUDE_STABLE_ENV}
    if not auto_memory:
        # the memory section names the project's folder part-way into the system text, so two
        # projects' sessions share only the prompt up to it (bench/prompt_layout.py)
        env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = "1"
    if model:
        for tier in ("ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                     "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
            env[tier] = model
    return env


def claude_plan(binary: str, url: str, key: str | None, model: str | None, extra: list[str],
                auto_memory: bool = True) -> LaunchPlan:
    return LaunchPlan("claude", [binary, *extra], claude_env(url, key, model, auto_memory))


# --- --write-config ---------------------------------------------------------------------------

def codex_config_path() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


def claude_settings_path() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "settings.json"


def write_codex_config(path: Path, pairs: list[tuple[str, str]]) -> str:
    """Put Laya's provider table and a `laya` profile into Codex's config.toml, replacing only
    those two tables when they are there and keeping every other line. The user's root `model`
    and `model_provider` stay: `codex --profile laya` selects Laya."""
    provider_head = f"[model_providers.{CODEX_PROVIDER}]"
    profile_head = f"[profiles.{CODEX_PROVIDER}]"
    prefix = f"model_providers.{CODEX_PROVIDER}."
    provider = [f"{k[len(prefix):]} = {v}" for k, v in pairs if k.startswith(prefix)]
    profile = [f"{k} = {v}" for k, v in pairs if not k.startswith(prefix)]
    old = path.read_text("utf-8") if path.exists() else ""
    kept: list[str] = []
    skipping = False
    for line in old.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = stripped in (provider_head, profile_head)
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    blocks = [provider_head, *provider, "", profile_head, *profile]
    text = "\n".join(kept + ([""] if kept else []) + blocks) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    if old:
        path.with_name(path.name + ".before-laya").write_text(old, "utf-8")
    path.write_text(text, "utf-8")
    return f"wrote {path} (Laya's provider and a 'laya' profile: codex --profile laya)"


def write_claude_settings(path: Path, env: dict[str, str]) -> str:
    """Merge Laya's variables into the `env` of Claude Code's settings.json, keeping the rest."""
    settings = {}
    if path.exists():
        try:
            settings = json.loads(path.read_text("utf-8") or "{}")
        except json.JSONDecodeError as exc:
            raise LaunchError(f"{path} is not valid JSON ({exc}); left unchanged") from None
        if not isinstance(settings, dict):
            raise LaunchError(f"{path} does not hold a JSON object; left unchanged")
        path.with_name(path.name + ".before-laya").write_text(path.read_text("utf-8"), "utf-8")
    merged = dict(settings.get("env") or {})
    merged.update({k: v for k, v in env.items() if v != ""})   # the user's own key stays
    settings["env"] = merged
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", "utf-8")
    return f"wrote {path} (env: {', '.join(sorted(k for k in env if env[k] != ''))})"


# --- the command --------------------------------------------------------------------------------

def check_engine(url: str) -> None:
    try:
        httpx.get(url + "/healthz", timeout=3).raise_for_status()
    except httpx.HTTPError as exc:
        raise LaunchError(f"no engine answers at {url} ({exc.__class__.__name__}): start it with "
                          "`laya serve` or the desktop app (`laya`), or pass --url") from None


def build_plan(args, url: str, key: str | None, context_window: int | None) -> LaunchPlan:
    extra = list(args.client_args or [])
    binary = find_client(args.client)
    if args.client == "codex":
        return codex_plan(binary, url, key, args.model or "auto", context_window, extra)
    return claude_plan(binary, url, key, args.model, extra, auto_memory=not args.no_auto_memory)


def _shell_line(plan: LaunchPlan) -> str:
    import shlex
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in plan.env.items())
    return (env + " " if env else "") + shlex.join(plan.argv)


def run_launch(args) -> int:
    url, key = engine_target(args)
    window = agents_context_window(_config_for(args)) if args.client == "codex" else None
    try:
        plan = build_plan(args, url, key, window)
        if args.write_config:
            if plan.client == "codex":
                print(write_codex_config(codex_config_path(),
                                         codex_settings(url, key, args.model or "auto", window)))
            else:
                print(write_claude_settings(claude_settings_path(), plan.env))
        if args.print:
            print(_shell_line(plan))
            return 0
        if not args.no_check:
            check_engine(url)
    except LaunchError as exc:
        print(f"laya launch: {exc}", file=sys.stderr)
        return 1
    env = {**os.environ, **plan.env}
    if os.name == "posix":
        sys.stdout.flush()
        os.execve(plan.argv[0], plan.argv, env)   # the agent owns the terminal, signals and exit code
    return subprocess.call(plan.argv, env=env)
