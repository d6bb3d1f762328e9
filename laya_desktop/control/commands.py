"""`laya ps` / `laya load NAME` / `laya unload NAME`: tables on stdout, or one JSON object with --json."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from laya_desktop.config.address import base_url, server_address
from laya_desktop.config.app_token import is_local_host, read_token
from laya_desktop.config.store import CONFIG_NAME, user_config_dir
from laya_desktop.control.admin_client import (
    AdminClient, EngineRefused, EngineUnreachable, normalize_url,
)
from laya_desktop.telemetry.model_sample import ModelState


def engine_target(args) -> tuple[str, str | None]:
    """The engine's URL and key: --url/--api-key, else the server section of the config that
    `laya serve` would use (--config, ./models.yaml, the user's copy), else 127.0.0.1:8555."""
    host, port, key = server_address(_config_for(args))
    url = normalize_url(getattr(args, "url", None) or base_url(host, port))
    api_key = getattr(args, "api_key", None) or key
    return url, api_key


def engine_token(url: str, args) -> str | None:
    """The app token of the engine at `url` when it runs on this machine (read from the file it
    wrote), so that no other host ever sees it; none when --api-key says which key to use."""
    if getattr(args, "api_key", None):
        return None
    parts = urlsplit(url)
    if parts.port is None or not is_local_host(parts.hostname or ""):
        return None
    return read_token(parts.port)


def _client(url: str, key: str | None, args) -> AdminClient:
    return AdminClient(url, key, app_token=engine_token(url, args))


def _config_for(args) -> Path | None:
    explicit = getattr(args, "config", None)
    if explicit:
        return Path(explicit)
    for candidate in (Path.cwd() / CONFIG_NAME, user_config_dir() / CONFIG_NAME):
        if candidate.is_file():
            return candidate
    return None  # nothing to create for a read-only command: use the defaults


def run_ps(args) -> int:
    url, key = engine_target(args)
    try:
        with _client(url, key, args) as client:
            rows = client.models()
    except (EngineUnreachable, EngineRefused) as exc:
        return _fail("ps", exc, args, url)
    shown = rows if getattr(args, "all", False) else [
        r for r in rows if ModelState(r["state"]).holds_memory]
    if args.json:
        print(json.dumps({"url": url, "models": shown}))
    elif shown:
        print(render_ps(shown))
    else:
        print(f"no models loaded at {url} ({len(rows)} registered; `laya ps --all` lists them)",
              file=sys.stderr)
    return 0


def run_load(args) -> int:
    return _model_action(args, "load")


def run_unload(args) -> int:
    return _model_action(args, "unload")


def _model_action(args, action: str) -> int:
    url, key = engine_target(args)
    started = time.monotonic()
    try:
        with _client(url, key, args) as client:
            row = client.load(args.name) if action == "load" else client.unload(args.name)
    except (EngineUnreachable, EngineRefused) as exc:
        return _fail(action, exc, args, url)
    if args.json:
        print(json.dumps(row))
        return 0
    if action == "load":
        print(f"loaded {row.get('name', args.name)} in {time.monotonic() - started:.1f} s "
              f"(pid {row.get('pid')}, state {row.get('state')})")
    elif row.get("unloaded"):
        print(f"unloaded {row.get('name', args.name)}")
    else:
        print(f"{row.get('name', args.name)} was not loaded")
    return 0


def _fail(command: str, exc: Exception, args, url: str) -> int:
    message = str(exc)
    if isinstance(exc, EngineUnreachable):
        message += ("; start it with `laya serve` or the desktop app, or point --url at it")
    if isinstance(exc, EngineRefused) and exc.status == 401:
        message += " (set server.api_key in the config or pass --api-key)"
    if getattr(args, "json", False):
        code = exc.code if isinstance(exc, EngineRefused) else "engine_unreachable"
        print(json.dumps({"error": {"message": message, "code": code, "url": url}}))
    print(f"laya {command}: {message}", file=sys.stderr)
    return 1


def render_ps(rows: list[dict]) -> str:
    header = ("NAME", "STATE", "PID", "PRIVATE", "RSS", "VRAM", "KV CACHE", "CONTEXT", "LAST USED")
    table = [header]
    for r in rows:
        table.append((
            str(r.get("name", "")), str(r.get("state", "")), str(r.get("pid") or "—"),
            fmt_bytes(r.get("private")), fmt_bytes(r.get("rss")), fmt_bytes(r.get("vram")),
            _kv(r), _context(r), fmt_ago(r.get("last_used")),
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in table)


def _kv(r: dict) -> str:
    used, cap = r.get("kv_used_tokens"), r.get("kv_capacity_tokens")
    if not cap:
        return "—"
    text = f"{used or 0}/{cap} tok"
    return f"{text} ({fmt_bytes(r['kv_bytes'])})" if r.get("kv_bytes") else text


def _context(r: dict) -> str:
    n_ctx, parallel = r.get("n_ctx"), r.get("parallel")
    if not n_ctx:
        return "—"
    return f"{n_ctx} × {parallel}" if parallel and parallel > 1 else str(n_ctx)


def fmt_bytes(n) -> str:
    if n is None:
        return "—"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit in ("B", "KiB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_ago(ts) -> str:
    if not ts:
        return "never"
    seconds = max(0.0, time.time() - float(ts))
    if seconds < 60:
        return f"{seconds:.0f} s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"
